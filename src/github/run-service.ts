// The run service both hosts run, composed once: the model fleet, the pipeline (each run's
// result kept beside its trajectory for the run page), the workers that run and publish, and
// intake with its `/frognano use` and `/frognano ci` answers. The App (`src/app.ts`) and the
// Action (`src/action/action-session.ts`) supply only what differs: their queue, how they reach
// GitHub, and their hooks.
import type { Logger } from 'pino';
import type { ProcessConfig } from '../config.js';
import { fleetObserver, type Metrics } from '../metrics/index.js';
import type { ModelFleet } from '../model-fleet/fleet.js';
import { modelConfigFrom } from '../model-fleet/model-config-from.js';
import { modelFleetFrom } from '../model-fleet/model-fleet-from.js';
import type { Queue } from '../queue/types.js';
import { runPipeline } from '../runner/run.js';
import type { RunResult } from '../runner/run-types.js';
import type { RunPipelineFn, WorkerPool } from '../runs/index.js';
import { recordingRunResults } from '../web/index.js';
import type { AppConfig } from './app-config.js';
import { createWorkerPool } from './create-worker-pool.js';
import { Intake, type IntakeDeps } from './intake/index.js';
import type { IssueJob } from './job.js';
import type { KeyedLock } from './keyed-lock.js';
import type { GitHubClient } from './octokit.js';
import {
  ciCommandHandler,
  useCommandHandler,
  type BotIdentity,
  type GitRunner,
} from './publishing/index.js';
import type { GitHubRunHostDeps } from './run-host-deps.js';

/** How a host reaches GitHub: the App through its installations, the Action with its token. */
export interface ServiceGitHub extends Pick<
  GitHubRunHostDeps,
  'auth' | 'mintInstallationToken' | 'botIdentity' | 'botIdentityKnown'
> {
  /** Who answers `/frognano use` and `/frognano ci`: whose pull requests they are, who commits. */
  commandBot: (installation: GitHubClient) => Promise<BotIdentity>;
}

export interface RunServiceDeps {
  config: AppConfig;
  env: NodeJS.ProcessEnv;
  log: Logger;
  queue: Queue<IssueJob>;
  github: ServiceGitHub;
  /** Intake and the workers share the status comment's lock. */
  lock: KeyedLock;
  /** Absent: intake only (`frognano serve`), no fleet and no workers. */
  workers?: WorkerOptions;
  git?: GitRunner;
  intake: Pick<IntakeDeps, 'retryMs' | 'maxQueuedPerRepo'> & {
    /** Told as intake answers a command; a reply returned here is given instead of doing it. */
    beforeCommand?: (kind: 'use' | 'ci') => string | undefined;
    /** `/frognano use` when the run's record is kept nowhere (use-attempt.ts `notKeptReply`). */
    notKeptReply?: string;
  };
}

export interface WorkerOptions {
  /** The model and the sandbox: read only where runs are made. */
  processConfig: ProcessConfig;
  metrics?: Metrics;
  /** Replaces the real pipeline on the fleet (test/support's App harness). */
  runPipeline?: RunPipelineFn;
  /** Told each run's result as the pipeline returned it (the Action reports it). */
  onResult?: (runId: string, result: RunResult) => void;
  pollMs?: number;
  /** The Action links the workflow run instead of a run page. */
  workflowRunUrl?: string;
}

export interface RunService {
  intake: Intake;
  /** Absent without workers (`frognano serve`). */
  workers?: WorkerPool<IssueJob>;
  /** The model endpoints, shared by every run of this process (with Redis, by every worker). */
  fleet?: ModelFleet;
}

export function composeRunService(deps: RunServiceDeps): RunService {
  const { fleet, workers } = deps.workers ? composeWorkers(deps, deps.workers) : {};
  return { intake: composeIntake(deps, workers), ...(workers && { fleet, workers }) };
}

function composeWorkers(
  deps: RunServiceDeps,
  w: WorkerOptions,
): { fleet: ModelFleet; workers: WorkerPool<IssueJob> } {
  const { config, env, log, github } = deps;
  const { processConfig, metrics } = w;
  const fleet = modelFleetFrom(processConfig, env, {
    ...(metrics && { observer: fleetObserver(metrics) }),
    log,
  });
  const real: RunPipelineFn = (request) =>
    runPipeline(request, {
      modelConfig: modelConfigFrom(processConfig),
      fleet,
      env,
      dataDir: config.dataDir,
      logger: log,
      handleSignals: false,
    });
  const pipeline = w.runPipeline ?? real;
  const workers = createWorkerPool({
    queue: deps.queue,
    auth: github.auth,
    mintInstallationToken: github.mintInstallationToken,
    // Each run's result is kept beside its trajectory for the run page.
    runPipeline: recordingRunResults(
      async (request) => {
        const result = await pipeline(request);
        w.onResult?.(request.runId, result);
        return result;
      },
      processConfig.FROGNANO_MODEL,
      (error) => log.warn({ err: error }, 'run.json write failed'),
    ),
    botIdentity: github.botIdentity,
    ...(github.botIdentityKnown && { botIdentityKnown: github.botIdentityKnown }),
    lock: deps.lock,
    log,
    gitBaseUrl: config.gitBaseUrl,
    dataDir: config.dataDir,
    sandbox: config.sandbox,
    statusThrottleMs: config.statusThrottleMs,
    publicUrl: config.publicUrl,
    ...(w.workflowRunUrl && { workflowRunUrl: w.workflowRunUrl }),
    pollMs: w.pollMs,
    git: deps.git,
    artifactTtlSeconds: config.retentionDays * 24 * 3600,
    metrics,
  });
  return { fleet, workers };
}

function composeIntake(deps: RunServiceDeps, workers: WorkerPool<IssueJob> | undefined): Intake {
  const { config, log, queue, github } = deps;
  const commands = {
    dataDir: config.dataDir,
    gitBaseUrl: config.gitBaseUrl,
    mintToken: github.mintInstallationToken,
    bot: github.commandBot,
    log,
    ...(deps.git && { git: deps.git }),
  };
  const use = useCommandHandler({
    ...commands,
    queue,
    artifactTtlSeconds: config.retentionDays * 24 * 3600,
    ...(config.publicUrl && { publicUrl: config.publicUrl }),
    ...(deps.intake.notKeptReply && { notKeptReply: deps.intake.notKeptReply }),
  });
  const ci = ciCommandHandler(commands);
  const before = deps.intake.beforeCommand ?? (() => undefined);
  return new Intake({
    queue,
    auth: github.auth,
    log,
    lock: deps.lock,
    onEnqueued: () => workers?.kick(),
    onCancelRequested: (runId) => workers?.abort(runId),
    retryMs: deps.intake.retryMs,
    ...(deps.intake.maxQueuedPerRepo !== undefined && {
      maxQueuedPerRepo: deps.intake.maxQueuedPerRepo,
    }),
    onUse: async (decision, octokit) => before('use') ?? use(decision, octokit),
    onCi: async (decision, octokit) => before('ci') ?? ci(decision, octokit),
  });
}
