// The sandbox and setup phases, as one bring-up: the sandbox (sandbox.ts), then setup's
// commands unless a snapshot replaced them (a cold setup saves one for next time), then the
// network cut. `setUp` is the run's own (its steps are the run's phases, its facts the
// result's); `freshSandbox` the same again, untimed, for verifying a patch.
import type Docker from 'dockerode';
import type { Sandbox } from '../../leaf/sandbox.js';
import { randomBytes } from 'node:crypto';
import { attemptBaseImage } from '../../sandbox/attempt-base-image.js';
import {
  LABEL_RUN,
  createDockerSandbox,
  type DockerSandbox,
} from '../../sandbox/docker-sandbox.js';
import { sandboxOwner } from '../../sandbox/owner.js';
import type { SandboxRuntime } from '../../sandbox/sandbox-runtime.js';
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
import { REPO_CONFIG_PATH } from '../repo-config.js';
import type { EnvironmentFacts, RunPhase, TestResult } from '../run-types.js';
import {
  finishAgentEnvironment,
  installAgentEnvironment,
} from '../setup-plan/agent-environment.js';
import {
  collectTests,
  collectionCommand,
  collectionUsable,
  type Collection,
} from '../setup-plan/collection.js';
import { setupRuns } from '../setup-plan/planned-setup.js';
import { collectionProblem, runAutoSetup } from './auto-setup.js';
import type { EgressFacts } from '../../sandbox/egress-facts.js';
import type { Prepared } from './config.js';
import { snapshotRepo, startSandbox, type Started } from './sandbox.js';
import { diagnoseSetupFailure, type SetupEgress } from './setup-egress.js';

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
  /** Docker: the runtime the agent and verification run under, and why. */
  runtime?: SandboxRuntime;
  /** How the environment was made and whether the tests can run in it. */
  environment?: EnvironmentFacts;
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
    const up = await bringUp(run, prepared, (name, fn) => run.phase(name, fn), facts, true);
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
  probe = false,
): Promise<Sandbox | Failure> {
  const started: Started = {};
  try {
    return await bringUpOn(run, prepared, step, facts, started, probe);
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
  probe: boolean,
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
  const environment = startEnvironment(prepared, hit);
  facts.environment = environment;
  if (hit) facts.snapshotImage = snapshotTag(started.snapshot!.key);

  const { docker, setupNetwork } = prepared;
  let collection: Collection | undefined;
  if (setupRuns(prepared.setup) && !hit) {
    facts.setupNetwork = setupNetwork || sandbox.kind === 'local';
    const t0 = Date.now();
    const made = await step('setup', () =>
      makeEnvironment(run, prepared, sandbox, facts, started.egress),
    );
    environment.seconds = Math.round((Date.now() - t0) / 100) / 10;
    if (made.failure) {
      // Off setup's network before the proxy stops and the host firewall lifts (the finally):
      // anything setup left running reaches nothing meanwhile. Best effort: closing the
      // network disconnects it first anyway.
      if (setupNetwork && sandbox.kind === 'docker')
        await (sandbox as DockerSandbox).disconnectNetwork().catch((error: unknown) => {
          run.log.warn({ err: errorText(error) }, 'could not cut the failed setup’s network');
        });
      return { outcome: 'setup_failed', error: made.failure };
    }
    collection = made.collection;
    if (started.snapshot && docker && made.keep) {
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
  // A reused environment was proven when its snapshot was saved, for these same dependency
  // files: today's tree is judged by its "before" run instead (judgeReusedEnvironment).
  if (probe && prepared.test && !hit) {
    collection ??= await collectTests(sandbox, prepared.test.command, run.signal);
    judgeEnvironment(environment, collection);
  }
  if (started.runtime) facts.runtime = started.runtime;
  if (sandbox.kind !== 'docker' || !started.runtime) return sandbox;
  try {
    return await toAgentRuntime(run, docker!, sandbox as DockerSandbox, started.runtime.name);
  } catch (error) {
    return {
      outcome: 'sandbox_failed',
      error: `could not move the set-up sandbox to the ${started.runtime.name} runtime: ${errorText(error)}`,
    };
  }
}

/**
 * Setup that had a network ran under the engine's default runtime: its container is committed
 * and the agent's sandbox started from that image under the chosen one (no network).
 */
async function toAgentRuntime(
  run: RunContext,
  docker: Docker,
  sandbox: DockerSandbox,
  runtime: string,
): Promise<DockerSandbox> {
  if (sandbox.runtime === runtime) return sandbox;
  const owner = sandboxOwner(run.dataDir);
  // Owned like an attempt base, so `reap` removes it if this process is killed.
  const { tag, labels } = attemptBaseImage(
    run.request.runId,
    owner,
    `-setup-${randomBytes(3).toString('hex')}`,
  );
  await sandbox.commit(tag, labels);
  run.cleanups.push(async () => {
    await docker.getImage(tag).remove({ force: true });
  });
  const moved = await createDockerSandbox({
    docker,
    image: tag,
    runId: run.request.runId,
    repo: snapshotRepo(run.request),
    network: 'none',
    runtime,
    limits: sandbox.limits,
    owner,
    logger: run.log,
  });
  run.sandboxes.add(moved);
  await run.dispose(sandbox);
  run.log.info({ runtime, image: tag }, 'set-up sandbox moved to the agent runtime');
  return moved;
}

/** What the environment facts say before setup runs: where setup comes from, the snapshot. */
function startEnvironment(prepared: Prepared, hit: boolean): EnvironmentFacts {
  const planned = prepared.setup;
  const environment: EnvironmentFacts = {
    source: planned.source,
    ecosystems: planned.source === 'auto' ? planned.plan.ecosystems : [],
    commands:
      planned.source === 'config'
        ? planned.commands.map((command) => ({ command, from: REPO_CONFIG_PATH }))
        : [],
    plan:
      planned.source === 'auto'
        ? planned.plan.candidates.map((c) => ({ candidate: c.name, commands: c.commands }))
        : [],
    failed: [],
    notes: planned.source === 'auto' ? [...planned.plan.notes] : [],
    snapshot: hit ? 'hit' : prepared.snapshotsOn ? 'miss' : 'none',
    network: prepared.config.network,
    importErrors: [],
    runnable: true,
  };
  if (planned.source === 'auto' && planned.skipped) environment.notes.push(planned.skipped);
  return environment;
}

/**
 * A reused environment (a snapshot hit), judged after the "before" run of today's tree: its
 * pytest report counts the tests, so no collection runs of its own (the reused path's one extra
 * pytest start). Only when that run could not collect them all does the collection run, for
 * the count and the import errors.
 */
export async function judgeReusedEnvironment(
  run: RunContext,
  prepared: Prepared,
  sandbox: Sandbox,
  environment: EnvironmentFacts,
  before: TestResult | undefined,
): Promise<void> {
  const test = prepared.test;
  if (!test || !collectionCommand(test.command)) return;
  const report = before?.report;
  if (report?.present && !report.collectionErrors && report.tests > 0) {
    judgeEnvironment(environment, { tests: report.tests, importErrors: [], exitCode: 0 });
    return;
  }
  judgeEnvironment(environment, await collectTests(sandbox, test.command, run.signal));
}

/** Collection's verdict on the environment: the tests can run, or why they cannot. */
function judgeEnvironment(environment: EnvironmentFacts, collection: Collection | undefined): void {
  if (collection) {
    environment.testsCollected = collection.tests;
    environment.importErrors = collection.importErrors;
  }
  const autoFailed =
    environment.source === 'auto' &&
    environment.failed.length > 0 &&
    environment.commands.length === 0;
  if (collection && !collectionUsable(collection)) {
    environment.runnable = false;
    environment.problem = collectionProblem(collection);
  } else if (autoFailed && !collection) {
    environment.runnable = false;
    environment.problem = `automatic setup failed: ${environment.failed[0]!.reason}`;
  }
}

/**
 * Setup's commands (the repository's, or automatic setup's candidates) with the environment
 * first on PATH. A configured setup that fails fails the run; automatic setup never does.
 */
async function makeEnvironment(
  run: RunContext,
  prepared: Prepared,
  sandbox: Sandbox,
  facts: SetupFacts,
  egress: SetupEgress | undefined,
): Promise<{ failure?: string; keep: boolean; collection?: Collection }> {
  const planned = prepared.setup;
  const deadline = Date.now() + (run.deps.setupTimeoutMs ?? DEFAULT_SETUP_TIMEOUT_MS);
  await installAgentEnvironment(sandbox, run.signal);
  if (egress) facts.egress = egress.facts();
  try {
    await egress?.prepare(sandbox, run.signal);
  } catch (error) {
    return { failure: errorText(error), keep: false };
  }
  if (planned.source === 'config') {
    const failure = await runSetup(run, planned.commands, sandbox, facts, deadline, egress);
    if (failure) return { failure, keep: false };
    await finishAgentEnvironment(sandbox, run.signal);
    return { keep: true };
  }
  if (planned.source !== 'auto') return { keep: false };
  const auto = await runAutoSetup(run, planned.plan, sandbox, {
    ...(prepared.test ? { testCommand: prepared.test.command } : {}),
    deadline,
    ...(egress ? { egress } : {}),
  });
  if (egress) facts.egress = egress.facts();
  facts.setupTail = auto.tail;
  const environment = facts.environment!;
  environment.commands = auto.commands;
  environment.failed = auto.failed;
  return {
    keep: auto.commands.length > 0,
    ...(auto.collection ? { collection: auto.collection } : {}),
  };
}

/** Runs setup's commands in order under one time limit; the reason it failed, or undefined. */
async function runSetup(
  run: RunContext,
  setup: readonly string[],
  sandbox: Sandbox,
  facts: SetupFacts,
  deadline: number,
  egress: SetupEgress | undefined,
): Promise<string | undefined> {
  const tails: string[] = [];
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
