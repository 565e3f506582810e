// The GitHub App entry point: wiring only. The webhook handler verifies (Probot), filters
// (triggers.ts) and records the delivery (queue); the run service (github/run-service.ts), the
// same one `frognano action` runs, does the rest: intake, workers, publishing.
import { Probot, type ProbotOctokit } from 'probot';
import type { Logger } from 'pino';
import { loadProcessConfig } from './config.js';
import { createLogger } from './log.js';
import { serviceMetrics, type Metrics } from './metrics/index.js';
import { loadQueueConfig, openQueue } from './queue/open-queue.js';
import type { Queue } from './queue/types.js';
import { lockDataDir, type DataDirHalf } from './queue/data-dir-lock.js';
import { startRetention } from './queue/retention.js';
import { reapDeadRuns } from './sandbox/reap.js';
import { loadAppConfig, type AppConfig } from './github/app-config.js';
import { appIdentity } from './github/app-identity.js';
import { startRegistration } from './github/app-registration.js';
import type { Intake } from './github/intake/index.js';
import type { IssueJob } from './github/job.js';
import { KeyedLock } from './github/keyed-lock.js';
import { appOctokit, type GitHubClient } from './github/octokit.js';
import { removePublishLeftovers, type GitRunner } from './github/publishing/index.js';
import { composeRunService, type RunService, type ServiceGitHub } from './github/run-service.js';
import { sharedThrottle, withSharedThrottle } from './github/shared-throttle.js';
import { startWebhookServer } from './github/webhook-server.js';
import type { RunPipelineFn, WorkerPool } from './runs/index.js';
import { dataPaths } from './data-dir.js';

export type AppMode = 'all' | 'serve' | 'worker';

export interface StartAppOptions {
  /** all: webhooks and workers in one process (npm start); serve: webhooks only; worker: runs only. */
  mode?: AppMode;
  /** The whole environment (default: the process's, with `.env` loaded by the CLI). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  log?: Logger;
  /** The App's configuration, when the caller read it already (`npm start` reads it once). */
  config?: AppConfig;
}

/** What the App is built from, each part real by default (test/support's harness swaps them). */
export interface AppParts {
  /** GitHub's client class; default `appOctokit`: Probot's, retrying as GitHub asks. */
  Octokit?: typeof ProbotOctokit;
  runPipeline?: RunPipelineFn;
  /** Removes containers and work directories of dead runs (default: the Docker reaper). */
  reapOrphans?: (liveRunIds: string[]) => Promise<void>;
  git?: GitRunner;
  pollMs?: number;
  /** Wait before deliveries whose permission check failed are tried again (default 30 s). */
  intakeRetryMs?: number;
  /** A webhook body not complete this long after its request arrived is cut (default 10 s). */
  webhookBodyTimeoutMs?: number;
}

export interface RunningApp {
  /** True when the App is not registered yet and the manifest flow is being served instead. */
  registering: boolean;
  /** Base URL of the HTTP server (absent in worker mode). */
  url?: string;
  config?: AppConfig;
  /** The Probot instance receiving webhooks (absent in worker mode and while registering). */
  probot?: Probot;
  queue?: Queue<IssueJob>;
  intake?: Intake;
  workers?: WorkerPool<IssueJob>;
  /** Prometheus metrics; `/metrics` on the HTTP server (serve, all), `frognano worker` serves its own. */
  metrics?: Metrics;
  /** Stops the server and the workers; runs in flight are left for the next start to requeue. */
  stop(): Promise<void>;
}

/** Starts the App as `npm start` does; without APP_ID and a private key, the registration flow. */
export async function startApp(
  options: StartAppOptions = {},
  parts: AppParts = {},
): Promise<RunningApp> {
  const env = options.env ?? process.env;
  const config = options.config ?? loadAppConfig(env, options.cwd ?? process.cwd());
  const mode = options.mode ?? 'all';
  const log = options.log ?? createLogger({ level: env.LOG_LEVEL });
  if (!config.credentials) {
    const server = await startRegistration(config, env, mode === 'worker', log);
    return { registering: true, ...server };
  }
  const core = await openCore({ config, credentials: config.credentials, env, mode, log }, parts);
  const { intake, workers } = await startService(core, parts).catch(core.failStart);
  const bodyTimeoutMs = parts.webhookBodyTimeoutMs;
  const web =
    mode === 'worker' ? undefined : await startWebhookServer({ ...core, intake, bodyTimeoutMs });
  return {
    registering: false,
    url: web?.url,
    config,
    probot: web?.probot,
    queue: core.queue,
    intake,
    workers,
    metrics: core.metrics,
    async stop() {
      await web?.stop();
      await intake.stop();
      await core.close();
    },
  };
}

interface CoreInput {
  config: AppConfig;
  credentials: NonNullable<AppConfig['credentials']>;
  env: NodeJS.ProcessEnv;
  mode: AppMode;
  log: Logger;
}

/** What every mode shares: the data directory's lock, the queue, GitHub, metrics. */
interface AppCore extends CoreInput {
  queue: Queue<IssueJob>;
  Probot: typeof Probot;
  /** The App's client, its installations' clients and tokens, the bot's identity. */
  github: Omit<ServiceGitHub, 'commandBot'> & { appAuth: () => Promise<unknown> };
  metrics: Metrics;
  service?: RunService;
  /** Stops what the core holds (the run service included), in order. */
  close(): Promise<void>;
  /** A start that fails after taking the lock gives it back (an embedding process may retry). */
  failStart(error: unknown): Promise<never>;
}

async function openCore(input: CoreInput, parts: AppParts): Promise<AppCore> {
  const { config, credentials, env, mode, log } = input;
  // Before the queue is touched: a second process must not requeue the first one's runs.
  const halves: DataDirHalf[] =
    mode === 'all' ? ['intake', 'worker'] : mode === 'serve' ? ['intake'] : ['worker'];
  const dataDirLock = lockDataDir(config.dataDir, halves, mode === 'all' ? 'start' : mode);
  const queue = await openQueue<IssueJob>({
    env,
    dataDir: config.dataDir,
    concurrency: config.concurrency,
    replayWindowMs: config.replayWindowMs,
    worker: mode !== 'serve',
  }).catch((error: unknown) => {
    dataDirLock.release();
    throw error;
  });
  const { FROGNANO_REDIS_URL: redisUrl, FROGNANO_REDIS_PREFIX: redisPrefix } = loadQueueConfig(env);
  // Many machines: every process paces its GitHub requests through one state in Redis.
  const throttle = redisUrl ? sharedThrottle(redisUrl, redisPrefix, log) : undefined;
  const ProbotWithDefaults = Probot.defaults({
    appId: credentials.appId,
    privateKey: credentials.privateKey,
    secret: credentials.webhookSecret,
    baseUrl: config.apiBaseUrl,
    log,
    Octokit: withSharedThrottle(parts.Octokit ?? appOctokit(log), throttle),
  });
  const trajectoriesDir = dataPaths.trajectoriesDir(config.dataDir);
  const { retentionDays } = config;
  const retention = startRetention({ queue, trajectoriesDir, retentionDays, log });
  const probot = new ProbotWithDefaults();
  const appAuth = () => probot.auth();
  const core: AppCore = {
    ...input,
    queue,
    Probot: ProbotWithDefaults,
    github: {
      appAuth,
      auth: (installationId) => probot.auth(installationId) as Promise<GitHubClient>,
      ...appIdentity(appAuth, config),
    },
    metrics: serviceMetrics(queue, mode === 'serve' ? undefined : () => core.service?.fleet),
    async close() {
      await core.service?.workers?.stop();
      await core.service?.fleet?.close();
      await retention.stop();
      await queue.close();
      await throttle?.close();
      dataDirLock.release();
    },
    async failStart(error) {
      await core.close();
      throw error;
    },
  };
  return core;
}

/** The run service on the App's parts; its workers recover what a dead process left, then run. */
async function startService(core: AppCore, parts: AppParts): Promise<RunService> {
  const { config, env, log, mode } = core;
  // Intake's commands ask who the App is on their own, once per process.
  const commandIdentity = appIdentity(core.github.appAuth, config);
  const service = composeRunService({
    config,
    env,
    log,
    queue: core.queue,
    github: {
      ...core.github,
      commandBot: (installation) => commandIdentity.botIdentity(installation, () => undefined),
    },
    lock: new KeyedLock(),
    ...(mode !== 'serve' && {
      workers: {
        processConfig: loadProcessConfig(env),
        metrics: core.metrics,
        ...(parts.runPipeline && { runPipeline: parts.runPipeline }),
        pollMs: parts.pollMs,
      },
    }),
    ...(parts.git && { git: parts.git }),
    intake: { retryMs: parts.intakeRetryMs, maxQueuedPerRepo: config.maxQueuedPerRepo },
  });
  core.service = service;
  if (service.workers) {
    await removePublishLeftovers(config.dataDir, log);
    await service.workers.recover(parts.reapOrphans ?? reapDeadRuns(config, env, log));
    service.workers.start();
  }
  return service;
}
