// git's reading of each attempt's patch on the host's clean clone, made once per attempt and
// shared by verify-after and policy: the policy checks it, the evidence splits on it (the
// repository's own tests and harness for the verdict; for a follow-up, as at the base revision:
// the previous revisions' harness is set aside too).
import { errorText } from '../command-output.js';
import { hostTreeTurn } from '../host-tree-turn.js';
import { patchFacts } from '../patch-facts.js';
import { DEFAULT_MAX_PATCH_BYTES } from '../patch-policy.js';
import type { RunContext } from '../run-context.js';
import type { PatchFacts } from '../run-types.js';
import type { AppliedPatch } from '../patch-changes.js';
import type { Attempt } from './agent.js';
import type { Prepared } from './config.js';
import { verdictSetsAside } from './previous-revisions.js';

/** git's reading of one attempt's patch: `applied`, or why there is none (`error`). */
export interface PatchReading {
  applied?: AppliedPatch;
  error?: string;
  /** The files git says the patch changes. */
  filesChanged?: string[];
  patchFacts?: PatchFacts;
  /** A follow-up: harness files changed since the base revision, its patch included. */
  harnessSinceOrigin?: string[];
}

export interface PatchReadings {
  /** The attempt's reading, made on the first call; every later call gets the same one. */
  read(attempt: Attempt): Promise<PatchReading>;
  /** The reading once made; undefined when none was asked for (or it is not done yet). */
  of(attempt: Attempt): PatchReading | undefined;
}

export function patchReadings(run: RunContext, prepared: Prepared): PatchReadings {
  const asked = new Map<Attempt, Promise<PatchReading>>();
  const made = new Map<Attempt, PatchReading>();
  return {
    read(attempt) {
      let reading = asked.get(attempt);
      if (!reading) {
        reading = readPatch(run, prepared, attempt).then((done) => {
          made.set(attempt, done);
          return done;
        });
        asked.set(attempt, reading);
      }
      return reading;
    },
    of: (attempt) => made.get(attempt),
  };
}

async function readPatch(
  run: RunContext,
  prepared: Prepared,
  attempt: Attempt,
): Promise<PatchReading> {
  const patch = attempt.leaf?.patch ?? '';
  const maxPatchBytes = run.deps.maxPatchBytes ?? DEFAULT_MAX_PATCH_BYTES;
  if (patch.trim() === '') return { error: 'the patch is empty' };
  if (Buffer.byteLength(patch, 'utf8') > maxPatchBytes)
    return { error: `the patch is larger than ${maxPatchBytes} bytes` };
  const { workspace, test } = prepared;
  try {
    const applied = await hostTreeTurn(workspace, () =>
      workspace.changesFromPatch(patch, {
        setAside: (_, c) => verdictSetsAside(c, test?.command),
      }),
    );
    const facts = patchFacts(applied.changes, test?.command);
    const sinceOrigin = prepared.previous
      ? {
          harnessSinceOrigin: patchFacts(applied.sinceOrigin ?? applied.changes, test?.command)
            .harnessFiles,
        }
      : {};
    return {
      applied,
      filesChanged: applied.changes.map((c) => c.path),
      patchFacts: facts,
      ...sinceOrigin,
    };
  } catch (error) {
    // Publishing applies it the same way and will say so; the text checks stand.
    run.log.warn({ err: errorText(error) }, 'the patch does not apply to a clean clone');
    return { error: `the patch does not apply to a clean clone: ${errorText(error)}` };
  }
}
