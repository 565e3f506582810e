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
import type { EgressFacts } from '../../sandbox/egress-facts.js';
import type { Prepared } from './config.js';
import { snapshotRepo, startSandbox, type Started } from './sandbox.js';
import { diagnoseSetupFailure, type SetupEgress } from './setup-egress.js';

export const DEFAULT_SETUP_TIMEOUT_MS = 20 * 60_000;

/** What the run's bring-up made that its result reports, as far as it got. */
export interface SetupFacts {
  /** Setup was skipped thanks to a snapshot image. */
  snapshotHit?: boolean;
  /** Setup ran with a network (set when setup ran). */
  setupNetwork?: boolean;
  /** The end of setup's output, as far as it ran. */
  setupTail?: string;
  /** Setup's network: the mode, the hosts allowed, what was refused (set when setup ran). */
  egress?: EgressFacts;
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
    return await bringUpOn(run, prepared, step, facts, started);
  } finally {
    // After the cut (or a failure): the proxy stops and setup's network goes.
    await started.egress?.close().catch((error: unknown) => {
      run.log.warn({ err: errorText(error) }, 'setup network cleanup failed');
    });
  }
}

async function bringUpOn(
  run: RunContext,
  prepared: Prepared,
  step: Step,
  facts: SetupFacts,
  started: Started,
): Promise<Sandbox | Failure> {
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

  const { config, docker, setupNetwork } = prepared;
  if (config.setup.length > 0 && !hit) {
    facts.setupNetwork = setupNetwork || sandbox.kind === 'local';
    const failure = await step('setup', () =>
      runSetup(run, config.setup, sandbox, facts, started.egress),
    );
    if (failure) return { outcome: 'setup_failed', error: failure };
    if (started.snapshot && docker)
      await saveSnapshot(docker, sandbox as DockerSandbox, started.snapshot.key, run);
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
  egress: SetupEgress | undefined,
): Promise<string | undefined> {
  const deadline = Date.now() + (run.deps.setupTimeoutMs ?? DEFAULT_SETUP_TIMEOUT_MS);
  const tails: string[] = [];
  if (egress) facts.egress = egress.facts();
  try {
    await egress?.prepare(sandbox, run.signal);
  } catch (error) {
    return errorText(error);
  }
  for (const [index, command] of setup.entries()) {
    const left = deadline - Date.now();
    const blockedBefore = egress?.facts().blocked ?? [];
    const done =
      left > 0
        ? await sandbox.exec(combinedOutput(command), {
            timeoutMs: left,
            signal: run.signal,
            maxOutputBytes: COMMAND_OUTPUT_BYTES,
            ...(egress ? { env: egress.env } : {}),
          })
        : undefined;
    if (done) tails.push(combined(done));
    facts.setupTail = tail(tails.join('\n'), OUTPUT_TAIL_CHARS);
    if (egress) facts.egress = egress.facts();
    const why = () => {
      if (!egress || !done) return '';
      const reason = diagnoseSetupFailure(combined(done), blockedBefore, egress.facts().blocked);
      return reason ? `: ${reason}` : '';
    };
    if (!done || done.timedOut)
      return `setup command ${index + 1} (${shortCommand(command)}) did not finish within the setup time limit${why()}`;
    if (done.exitCode !== 0)
      return `setup command ${index + 1} (${shortCommand(command)}) failed with exit code ${done.exitCode}${limitNote(done)}${why()}`;
  }
  return undefined;
}

async function saveSnapshot(
  docker: Docker,
  sandbox: DockerSandbox,
  key: string,
  run: RunContext,
): Promise<void> {
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
  } catch (error) {
    run.log.warn({ key, err: errorText(error) }, 'setup snapshot failed');
  }
}
