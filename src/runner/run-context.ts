// What every phase of one run shares: the request and its dependencies, the logger, the
// cancellation signal, progress reports, phase timings, and what must be cleaned up whatever
// happens (sandboxes, the work directory). What the phases make is theirs: each returns its
// piece, and run.ts assembles the result from them (assemble-result.ts).
import { setMaxListeners } from 'node:events';
import path from 'node:path';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { log as defaultLogger } from '../log.js';
import type { Model } from '../leaf/model.js';
import type { ModelConfigInput } from '../leaf/openai-model.js';
import type { ModelFleet } from '../model-fleet/fleet.js';
import type { Sandbox } from '../leaf/sandbox.js';
import { SandboxLimitExceeded } from '../sandbox/disk-guard.js';
import type { DockerSandboxLimits } from '../sandbox/docker-sandbox.js';
import { errorText } from './command-output.js';
import type { RunOutcome, RunPhase, RunProgress, RunRequest } from './run-types.js';
import { registerActiveRun } from './run-signals.js';
import type { Workspace } from './workspace.js';
import { dataPaths } from '../data-dir.js';

export interface PipelineDeps {
  /** The model endpoint; checked with `checkModelEndpoint` before the loop. */
  modelConfig?: ModelConfigInput;
  /** A ready Model (tests); used instead of building one from `modelConfig`. */
  model?: Model;
  /**
   * The model endpoints, shared by every run of the process (their cap counts this process's
   * loops, or every worker's through Redis). Default: a fleet of `modelConfig`'s one endpoint.
   */
  fleet?: ModelFleet;
  /** The Docker engine (default: DOCKER_HOST or the local socket). */
  docker?: Docker;
  /** Process environment: FROGNANO_DATA_DIR, FROGNANO_SANDBOX_IMAGE, PATH/HOME for host git. */
  env?: NodeJS.ProcessEnv;
  /** Default `<dataDir>/cache` and `<dataDir>/runs`; dataDir defaults to FROGNANO_DATA_DIR or ./data. */
  dataDir?: string;
  cacheDir?: string;
  workRoot?: string;
  logger?: Logger;
  /** The image when neither the caller nor the repo config names one (default FROGNANO_SANDBOX_IMAGE). */
  defaultImage?: string;
  /** Default: FROGNANO_SANDBOX_MEMORY, _CPUS, _PIDS, _DISK and FROGNANO_DISK_FLOOR from `env`. */
  sandboxLimits?: Partial<DockerSandboxLimits>;
  /** Setup snapshots (Docker only). Default enabled, keeping 10. */
  snapshots?: { enabled?: boolean; keep?: number };
  setupTimeoutMs?: number;
  testTimeoutMs?: number;
  maxPatchBytes?: number;
  maxContextTokens?: number;
  /** Parent of the local sandbox's temporary copies (default: the OS temp dir). */
  localTempRoot?: string;
  /** Clean up on SIGINT/SIGTERM while the run is active (default true). */
  handleSignals?: boolean;
}

/** Why a phase could not go on: becomes the run's outcome and its one-sentence error. */
export interface Failure {
  outcome: RunOutcome;
  error: string;
}

export function isFailure(value: unknown): value is Failure {
  return typeof value === 'object' && value !== null && 'outcome' in value && 'error' in value;
}

export interface RunContext {
  readonly request: RunRequest;
  readonly deps: PipelineDeps;
  readonly log: Logger;
  readonly env: NodeJS.ProcessEnv;
  readonly dataDir: string;
  readonly cacheDir: string;
  readonly workRoot: string;
  /** Aborted by the caller's signal, SIGINT/SIGTERM, or nothing. */
  readonly signal: AbortSignal;
  /** Milliseconds per phase, as `phase` measures them: the result reports them. */
  readonly timings: Partial<Record<RunPhase, number>>;
  currentPhase: RunPhase;
  /** The work directory, once clone made it: cleanup removes it. */
  workspace?: Workspace;
  /** Every sandbox still up; cleanup disposes them all. */
  readonly sandboxes: Set<Sandbox>;
  /** Run after the sandboxes are gone (e.g. removing an image they were started from). */
  readonly cleanups: (() => Promise<void>)[];
  /** Sandboxes still starting (or going): cleanup waits for them, so none outlives it. */
  readonly starting: Promise<unknown>[];
  /** True once the agent phase starts; false when the run ends before it does. */
  readonly agentStarted: Promise<boolean>;
  report(event: RunProgress): void;
  /**
   * Runs `fn` as the named phase: reports it (with `shown`, e.g. the agent's time limit), adds
   * its time to `timings`.
   */
  phase<T>(name: RunPhase, fn: () => Promise<T>, shown?: { timeoutMs?: number }): Promise<T>;
  /** How the run ends with `failure`: as cancelled, when it was. */
  ending(failure: Failure): Failure;
  /** A container that will not go is the reaper's; it must not cost the run its result. */
  dispose(sandbox: Sandbox | undefined): Promise<void>;
  /** Always, last: sandboxes and the work directory go. The run's wall time, in ms. */
  finish(): Promise<number>;
}

export function startRun(request: RunRequest, deps: PipelineDeps): RunContext {
  const log = (deps.logger ?? defaultLogger).child({ runId: request.runId });
  const env = deps.env ?? process.env;
  const dataDir = path.resolve(deps.dataDir ?? env.FROGNANO_DATA_DIR ?? './data');
  const started = performance.now();
  const agent = agentGate();
  const signal = runSignal(request, deps);
  const timings: RunContext['timings'] = {};
  const run: RunContext = {
    request,
    deps,
    log,
    env,
    dataDir,
    cacheDir: deps.cacheDir ?? dataPaths.cacheDir(dataDir),
    workRoot: deps.workRoot ?? dataPaths.runsDir(dataDir),
    signal: signal.signal,
    timings,
    currentPhase: 'clone',
    sandboxes: new Set(),
    cleanups: [],
    starting: [],
    agentStarted: agent.started,
    report(event) {
      try {
        request.onProgress?.(event);
      } catch (error) {
        log.warn({ err: String(error) }, 'progress callback failed');
      }
    },
    async phase(name, fn, shown) {
      run.currentPhase = name;
      if (name === 'agent') agent.reach(true);
      run.report({ kind: 'phase', phase: name, ...shown });
      const t0 = performance.now();
      try {
        return await fn();
      } finally {
        timings[name] = Math.round((timings[name] ?? 0) + performance.now() - t0);
      }
    },
    ending: ({ outcome, error }) =>
      run.signal.aborted
        ? { outcome: 'cancelled', error: 'the run was cancelled' }
        : { outcome, error },
    async dispose(sandbox) {
      if (!sandbox) return;
      run.sandboxes.delete(sandbox);
      await sandbox
        .dispose()
        .catch((e: unknown) =>
          log.error({ err: errorText(e) }, 'sandbox removal failed; reap will finish it'),
        );
    },
    async finish() {
      agent.reach(false);
      await run.phase('cleanup', () => cleanUp(run)).catch(() => undefined);
      const wallMs = Math.round(performance.now() - started);
      signal.release();
      return wallMs;
    },
  };
  return run;
}

/** `started` resolves once: true when the agent phase starts, false when the run ends first. */
function agentGate(): { started: Promise<boolean>; reach(reached: boolean): void } {
  let reach!: (reached: boolean) => void;
  const started = new Promise<boolean>((resolve) => (reach = resolve));
  return { started, reach };
}

/** The run's own signal: the caller's, and SIGINT/SIGTERM while the run is active. */
function runSignal(
  request: RunRequest,
  deps: PipelineDeps,
): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  // Every attempt's tool calls and model requests listen on this one signal at once: up to 8
  // attempts, a few listeners each, is expected, not a leak.
  setMaxListeners(100, controller.signal);
  const onCallerAbort = () => controller.abort(request.signal?.reason);
  if (request.signal?.aborted) controller.abort(request.signal.reason);
  request.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const unregister =
    deps.handleSignals === false
      ? () => undefined
      : registerActiveRun(() => controller.abort(new Error('interrupted by a signal')));
  return {
    signal: controller.signal,
    release() {
      request.signal?.removeEventListener('abort', onCallerAbort);
      unregister();
    },
  };
}

/** The cleanup phase: every sandbox (those still starting too), then images, the work directory. */
async function cleanUp(run: RunContext): Promise<void> {
  const errors: string[] = [];
  // A sandbox that finishes starting may start others (the verification pool).
  for (let seen = -1; seen !== run.starting.length;) {
    seen = run.starting.length;
    await Promise.allSettled(run.starting);
  }
  await Promise.all(
    [...run.sandboxes].map((s) =>
      s.dispose().catch((e: unknown) => errors.push(`sandbox: ${errorText(e)}`)),
    ),
  );
  run.sandboxes.clear();
  for (const cleanup of run.cleanups)
    await cleanup().catch((e: unknown) => errors.push(errorText(e)));
  await run.workspace
    ?.dispose()
    .catch((e: unknown) => errors.push(`work directory: ${errorText(e)}`));
  if (errors.length > 0)
    run.log.error({ errors }, 'cleanup incomplete; `frognano reap` will finish it');
}

/** An unexpected error: a limit the disk guard hit, else a failure named after the phase. */
export function unexpectedFailure(run: RunContext, error: unknown): Failure {
  const limit = limitOf([...run.sandboxes], error);
  if (limit) return { outcome: 'sandbox_limit', error: limit.message };
  run.log.error({ err: errorText(error) }, 'run failed unexpectedly');
  const outcome: RunOutcome =
    run.currentPhase === 'clone'
      ? 'clone_failed'
      : run.currentPhase === 'config'
        ? 'config_error'
        : 'sandbox_failed';
  return { outcome, error: errorText(error) };
}

/** The disk guard's reason when it stopped a sandbox (the error itself, or the sandbox's). */
export function limitOf(
  sandboxes: readonly (Sandbox | undefined)[],
  error: unknown,
): SandboxLimitExceeded | undefined {
  if (error instanceof SandboxLimitExceeded) return error;
  for (const sandbox of sandboxes) {
    const limit = (sandbox as { limitExceeded?: SandboxLimitExceeded } | undefined)?.limitExceeded;
    if (limit) return limit;
  }
  return undefined;
}
