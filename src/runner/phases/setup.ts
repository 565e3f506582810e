// The sandbox and setup phases, as one bring-up: the sandbox (sandbox.ts), then setup's
// commands unless a snapshot replaced them (a cold setup saves one for next time), then the
// network cut. `setUp` is the run's own (its steps are the run's phases, its facts the
// result's); `freshSandbox` the same again, untimed, for verifying a patch.
import type Docker from 'dockerode';
import type { Sandbox } from '../../leaf/sandbox.js';
import { LABEL_RUN, type DockerSandbox } from '../../sandbox/docker-sandbox.js';
import {
  DEFAULT_SNAPSHOT_CAP,
  evictSnapshots,
  snapshotLabels,
  snapshotTag,
} from '../../sandbox/snapshot-cache.js';
import {
  COMMAND_OUTPUT_BYTES,
  OUTPUT_TAIL_CHARS,
  combined,
  combinedOutput,
  errorText,
  limitNote,
  shortCommand,
  tail,
} from '../command-output.js';
import { hostTreeTurn } from '../host-tree-turn.js';
import {
  isFailure,
  limitOf,
  unexpectedFailure,
  type Failure,
  type RunContext,
} from '../run-context.js';
import type { RunPhase } from '../run-types.js';
import type { Prepared } from './config.js';
import { snapshotRepo, startSandbox, type Started } from './sandbox.js';

export const DEFAULT_SETUP_TIMEOUT_MS = 20 * 60_000;

/** What the run's bring-up made that its result reports, as far as it got. */
export interface SetupFacts {
  /** Setup was skipped thanks to a snapshot image. */
  snapshotHit?: boolean;
  /** The setup snapshot this run started from or saved (a lost sandbox starts again from it). */
  snapshotImage?: string;
  /** Setup ran with a network (set when setup ran). */
  setupNetwork?: boolean;
  /** The end of setup's output, as far as it ran. */
  setupTail?: string;
}

export type SetupOutcome =
  | { facts: SetupFacts; sandbox: Sandbox; failure?: undefined }
  | { facts: SetupFacts; failure: Failure; sandbox?: undefined };

type Step = <T>(name: RunPhase, fn: () => Promise<T>) => Promise<T>;

/** The run's own sandbox, set up: the `sandbox` and `setup` phases. */
export async function setUp(run: RunContext, prepared: Prepared): Promise<SetupOutcome> {
  const facts: SetupFacts = {};
  try {
    const up = await bringUp(run, prepared, (name, fn) => run.phase(name, fn), facts);
    return isFailure(up) ? { facts, failure: up } : { facts, sandbox: up };
  } catch (error) {
    return { facts, failure: unexpectedFailure(run, error) };
  }
}

/** A sandbox as the run's was before the agent: for verifying a patch (untimed, no facts). */
export function freshSandbox(run: RunContext, prepared: Prepared): Promise<Sandbox | Failure> {
  return bringUp(run, prepared, (_name, fn) => fn(), {});
}

async function bringUp(
  run: RunContext,
  prepared: Prepared,
  step: Step,
  facts: SetupFacts,
): Promise<Sandbox | Failure> {
  const started: Started = {};
  try {
    await step('sandbox', () =>
      hostTreeTurn(prepared.workspace, () => startSandbox(run, prepared, started)),
    );
  } catch (error) {
    const limit = limitOf([started.sandbox], error);
    if (limit) return { outcome: 'sandbox_limit', error: limit.message };
    return { outcome: 'sandbox_failed', error: errorText(error) };
  }
  const sandbox = started.sandbox!;
  const hit = started.snapshot?.hitImage !== undefined;
  facts.snapshotHit = hit;
  if (hit) facts.snapshotImage = snapshotTag(started.snapshot!.key);

  const { config, docker, setupNetwork } = prepared;
  if (config.setup.length > 0 && !hit) {
    facts.setupNetwork = setupNetwork || sandbox.kind === 'local';
    const failure = await step('setup', () => runSetup(run, config.setup, sandbox, facts));
    if (failure) return { outcome: 'setup_failed', error: failure };
    if (started.snapshot && docker) {
      const saved = await saveSnapshot(docker, sandbox as DockerSandbox, started.snapshot.key, run);
      if (saved) facts.snapshotImage = snapshotTag(started.snapshot.key);
    }
  }

  // Cut the network before anything else runs in there.
  if (setupNetwork && !hit && sandbox.kind === 'docker') {
    try {
      await (sandbox as DockerSandbox).disconnectNetwork();
    } catch (error) {
      return {
        outcome: 'sandbox_failed',
        error: `could not cut the sandbox network before the agent: ${errorText(error)}`,
      };
    }
  }
  return sandbox;
}

/** Runs setup's commands in order under one time limit; the reason it failed, or undefined. */
async function runSetup(
  run: RunContext,
  setup: readonly string[],
  sandbox: Sandbox,
  facts: SetupFacts,
): Promise<string | undefined> {
  const deadline = Date.now() + (run.deps.setupTimeoutMs ?? DEFAULT_SETUP_TIMEOUT_MS);
  const tails: string[] = [];
  for (const [index, command] of setup.entries()) {
    const left = deadline - Date.now();
    const done =
      left > 0
        ? await sandbox.exec(combinedOutput(command), {
            timeoutMs: left,
            signal: run.signal,
            maxOutputBytes: COMMAND_OUTPUT_BYTES,
          })
        : undefined;
    if (done) tails.push(combined(done));
    facts.setupTail = tail(tails.join('\n'), OUTPUT_TAIL_CHARS);
    if (!done || done.timedOut)
      return `setup command ${index + 1} (${shortCommand(command)}) did not finish within the setup time limit`;
    if (done.exitCode !== 0)
      return `setup command ${index + 1} (${shortCommand(command)}) failed with exit code ${done.exitCode}${limitNote(done)}`;
  }
  return undefined;
}

async function saveSnapshot(
  docker: Docker,
  sandbox: DockerSandbox,
  key: string,
  run: RunContext,
): Promise<boolean> {
  // A failed snapshot costs the next run its head start, never this run its result.
  try {
    // The run label is the container's; the image must not look like a live run's.
    await sandbox.commit(snapshotTag(key), {
      ...snapshotLabels({ repo: snapshotRepo(run.request), key }),
      [LABEL_RUN]: '',
    });
    const evicted = await evictSnapshots(docker, {
      keep: run.deps.snapshots?.keep ?? DEFAULT_SNAPSHOT_CAP,
    });
    run.log.info({ key, evicted: evicted.length }, 'setup snapshot saved');
    return true;
  } catch (error) {
    run.log.warn({ key, err: errorText(error) }, 'setup snapshot failed');
    return false;
  }
}
