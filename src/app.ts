// The GitHub App entry point: wiring only. The webhook handler verifies (Probot), filters
// (triggers.ts) and records the delivery (queue); intake, workers and publishing do the rest.
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  Probot,
  Server,
  run as runProbot,
  type ApplicationFunction,
  type ProbotOctokit,
} from 'probot';
import type { Logger } from 'pino';
import { loadProcessConfig } from './config.js';
import { loadDotenv } from './dotenv.js';
import { modelConfigFrom } from './commands/model-config-from.js';
import { modelFleetFrom } from './commands/model-fleet-from.js';
import type { ModelFleet } from './model-fleet/fleet.js';
import { createLogger } from './log.js';
import {
  countDelivery,
  createMetrics,
  fleetObserver,
  metricsHandler,
  type Metrics,
} from './metrics/index.js';
import { connectDocker } from './sandbox/docker-engine.js';
import { loadQueueConfig, openQueue } from './queue/open-queue.js';
import { runArtifacts } from './queue/read-run-artifact.js';
import type { Queue } from './queue/types.js';
import { lockDataDir, type DataDirHalf } from './queue/data-dir-lock.js';
import { startRetention } from './queue/retention.js';
import { reap } from './sandbox/reap.js';
import { runPipeline } from './runner/run.js';
import { AppConfigError, loadAppConfig, type AppConfig } from './github/app-config.js';
import { Intake } from './github/intake/index.js';
import type { IssueJob } from './github/job.js';
import { KeyedLock } from './github/keyed-lock.js';
import { appOctokit, type GitHubClient } from './github/octokit.js';
import { paceWrites, sharedThrottle, type SharedThrottle } from './github/shared-throttle.js';
import { type GitRunner, removeStalePublishDirs } from './github/publishing/index.js';
import { appIdentity, type AppIdentity } from './github/app-identity.js';
import {
  guardWebhookBodies,
  WEBHOOK_BODY_TIMEOUT_MS,
  webhookBodySha256,
} from './github/intake/index.js';
import { freePort } from './free-port.js';
import { prunePendingPublishes } from './github/publishing/index.js';
import { decideTrigger } from './github/intake/index.js';
import { ciCommandHandler, useCommandHandler } from './github/publishing/index.js';
import { createWorkerPool } from './github/create-worker-pool.js';
import type { RunPipelineFn, WorkerPool } from './runs/index.js';
import {
  queueRunListing,
  recordingRunResults,
  runPageHandler,
  runsPageConfig,
  runsPageHandler,
  trajectoryHandler,
} from './web/index.js';
import { dataPaths } from './data-dir.js';

export type AppMode = 'all' | 'serve' | 'worker';

export interface StartAppOptions {
  /** all: webhooks and workers in one process (npm start); serve: webhooks only; worker: runs only. */
  mode?: AppMode;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  log?: Logger;
  /** Replaces the real pipeline (tests). */
  runPipeline?: RunPipelineFn;
  /** Removes containers and work directories of dead runs (default: the Docker reaper). */
  reapOrphans?: (liveRunIds: string[]) => Promise<void>;
  git?: GitRunner;
  /**
   * Octokit class for GitHub calls (tests shorten delays); default `appOctokit`: Probot's, with
   * retry on and rate limits retried as GitHub asks.
   */
  Octokit?: typeof ProbotOctokit;
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

export interface FrognanoAppDeps {
  label: string;
  intake: Intake;
  log: Logger;
  /** Serve `/frognano/runs/<id>/trajectory.json` from here (when a public URL is configured). */
  trajectoriesFrom?: string;
  /** A shared queue holding trajectories of runs made on other hosts. */
  queue?: Pick<Queue, 'getArtifact'>;
  /** The run pages and the runs page (src/web). */
  webHandlers?: ((req: IncomingMessage, res: ServerResponse) => Promise<boolean>)[];
  /** Counted here, and served at `/metrics`. */
  metrics?: Metrics;
}

/** The Probot application function: subscribe, filter, record. */
export function frognanoApp(deps: FrognanoAppDeps): ApplicationFunction {
  return (app, { addHandler }) => {
    const handle = async (context: { id: string; name: string; payload: unknown }) => {
      const decision = decideTrigger(context.name, context.payload, { label: deps.label });
      if (decision.kind === 'ignore') {
        deps.log.debug({ deliveryId: context.id, reason: decision.reason }, 'webhook ignored');
        countDelivery(deps.metrics, 'ignored', decision.kind);
        return;
      }
      // Read before the first await: the store belongs to this request's async context.
      const sha256 = webhookBodySha256();
      // Awaited: GitHub gets its answer only once the delivery is stored.
      const outcome = await deps.intake.accept(context.id, decision, sha256);
      countDelivery(deps.metrics, outcome, decision.kind);
      deps.log.info({ deliveryId: context.id, kind: decision.kind, outcome }, 'webhook accepted');
    };
    app.on('issues.labeled', handle);
    app.on('issue_comment.created', handle);
    // Follow-ups on the bot's draft pull requests (src/github/review-triggers.ts).
    app.on('pull_request_review.submitted', handle);
    app.on('pull_request_review_comment.created', handle);
    if (deps.trajectoriesFrom) addHandler(trajectoryHandler(deps.trajectoriesFrom, deps.queue));
    for (const handler of deps.webHandlers ?? []) addHandler(handler);
    if (deps.metrics) addHandler(metricsHandler(deps.metrics, deps.log));
  };
}

/** Starts the App as `npm start` does; without APP_ID and a private key, the registration flow. */
export async function startApp(options: StartAppOptions = {}): Promise<RunningApp> {
  const env = appEnv(options);
  const config = loadAppConfig(env, options.cwd ?? process.cwd());
  const mode = options.mode ?? 'all';
  const log = options.log ?? createLogger({ level: env.LOG_LEVEL });
  if (!config.credentials) return startRegistration(config, env, mode, log);
  const core = await openCore({ config, credentials: config.credentials, env, mode, log }, options);
  if (mode !== 'serve') await startWorkers(core, options).catch(core.failStart);
  const intake = createIntake(core, options);
  const web = mode === 'worker' ? undefined : await startWebhooks(core, intake, options);
  return {
    registering: false,
    url: web?.url,
    config,
    probot: web?.probot,
    queue: core.queue,
    intake,
    workers: core.workers,
    metrics: core.metrics,
    async stop() {
      await web?.stop();
      await intake.stop();
      await core.close();
    },
  };
}

/** The environment; Probot's registration flow writes APP_ID, PRIVATE_KEY and WEBHOOK_SECRET into .env. */
function appEnv(options: StartAppOptions): NodeJS.ProcessEnv {
  const env = options.env ?? process.env;
  loadDotenv(env, options.cwd);
  return env;
}

/** Without the App's credentials: Probot's manifest flow registers it (outside production). */
async function startRegistration(
  config: AppConfig,
  env: NodeJS.ProcessEnv,
  mode: AppMode,
  log: Logger,
): Promise<RunningApp> {
  if (mode === 'worker') {
    throw new AppConfigError([
      'APP_ID and PRIVATE_KEY (or PRIVATE_KEY_PATH) must be set to run workers: run `frognano start` once to register the App (it writes them to .env), or set them from the App settings',
    ]);
  }
  // Probot serves no registration flow in production (the Docker image sets NODE_ENV).
  if (env.NODE_ENV === 'production') {
    throw new AppConfigError([
      'APP_ID and PRIVATE_KEY (or PRIVATE_KEY_PATH) are not set, and NODE_ENV=production turns the registration flow off: register the App once elsewhere (`npm start` without NODE_ENV) or create it by hand, then set APP_ID, PRIVATE_KEY and WEBHOOK_SECRET',
    ]);
  }
  log.warn('APP_ID or the private key is missing: serving the GitHub App registration flow');
  const port = config.port === 0 ? await freePort(config.host) : config.port;
  const server = await runProbot(() => undefined, { env: { ...env, PORT: String(port) }, log });
  return {
    registering: true,
    url: `http://${server.host}:${server.port}`,
    stop: () => server.stop(),
  };
}

interface CoreInput {
  config: AppConfig;
  credentials: NonNullable<AppConfig['credentials']>;
  env: NodeJS.ProcessEnv;
  mode: AppMode;
  log: Logger;
}

/** What every mode shares: the data directory, the queue, GitHub clients, metrics. */
interface AppCore extends CoreInput {
  queue: Queue<IssueJob>;
  Probot: typeof Probot;
  auth: (installationId: number) => Promise<GitHubClient>;
  identity: AppIdentity;
  lock: KeyedLock;
  metrics: Metrics;
  /** The model endpoints, shared by every run of this process (with Redis, by every worker). */
  fleet?: ModelFleet;
  workers?: WorkerPool<IssueJob>;
  /** Stops what the core holds (workers included), in order. */
  close(): Promise<void>;
  /** A start that fails after taking the lock gives it back (an embedding process may retry). */
  failStart(error: unknown): Promise<never>;
}

async function openCore(input: CoreInput, options: StartAppOptions): Promise<AppCore> {
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
    Octokit: withThrottle(options.Octokit ?? appOctokit(log), throttle),
  });
  const retention = startRetention({
    queue,
    trajectoriesDir: dataPaths.trajectoriesDir(config.dataDir),
    retentionDays: config.retentionDays,
    log,
  });
  const probotForAuth = new ProbotWithDefaults();
  const core: AppCore = {
    ...input,
    queue,
    Probot: ProbotWithDefaults,
    auth: (installationId) => probotForAuth.auth(installationId) as Promise<GitHubClient>,
    identity: appIdentity(() => probotForAuth.auth(), config),
    lock: new KeyedLock(),
    metrics: appMetrics(queue, mode, () => core.fleet),
    async close() {
      await core.workers?.stop();
      await core.fleet?.close();
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

function appMetrics(
  queue: Queue<IssueJob>,
  mode: AppMode,
  fleet: () => ModelFleet | undefined,
): Metrics {
  return createMetrics({
    queueDepth: async () => ({
      queued: (await queue.list('queued')).length,
      running: (await queue.list('running')).length,
    }),
    ...(mode === 'serve'
      ? {}
      : {
          modelEndpoints: async () => {
            const current = fleet();
            if (!current) throw new Error('no fleet yet');
            return (await current.status()).map((s) => ({
              endpoint: s.endpoint.name,
              down: s.down !== undefined,
            }));
          },
        }),
  });
}

/** The workers: the pipeline on the model fleet, recovery of what a dead process left, then runs. */
async function startWorkers(core: AppCore, options: StartAppOptions): Promise<void> {
  const { config, env, log, metrics } = core;
  const processConfig = loadProcessConfig(env);
  const fleet = modelFleetFrom(processConfig, env, { observer: fleetObserver(metrics), log });
  core.fleet = fleet;
  // Each run's result is kept beside its trajectory for the run page.
  const pipeline: RunPipelineFn = recordingRunResults(
    options.runPipeline ??
      ((request) =>
        runPipeline(request, {
          modelConfig: modelConfigFrom(processConfig),
          fleet,
          env,
          dataDir: config.dataDir,
          logger: log,
          handleSignals: false,
        })),
    processConfig.FROGNANO_MODEL,
    (error) => log.warn({ err: error }, 'run.json write failed'),
  );
  const workers = createWorkerPool({
    queue: core.queue,
    auth: core.auth,
    mintInstallationToken: core.identity.mintInstallationToken,
    runPipeline: pipeline,
    botIdentity: core.identity.botIdentity,
    botIdentityKnown: core.identity.botIdentityKnown,
    lock: core.lock,
    log,
    gitBaseUrl: config.gitBaseUrl,
    dataDir: config.dataDir,
    sandbox: config.sandbox,
    statusThrottleMs: config.statusThrottleMs,
    publicUrl: config.publicUrl,
    pollMs: options.pollMs,
    git: options.git,
    artifactTtlSeconds: config.retentionDays * 24 * 3600,
    metrics,
  });
  core.workers = workers;
  await removePublishLeftovers(config.dataDir, log);
  await workers.recover(options.reapOrphans ?? reapWith(core));
  workers.start();
}

/** Removes containers and work directories of dead runs (the Docker reaper). */
function reapWith(core: AppCore): (liveRunIds: string[]) => Promise<void> {
  const { config, env, log } = core;
  return async (liveRunIds) => {
    const docker = config.sandbox === 'docker' ? connectDocker(env) : undefined;
    await reap(docker, { liveRunIds, workRoot: dataPaths.runsDir(config.dataDir), log });
  };
}

/** What a process killed mid-publish left: its clone, and records nobody will retry. */
async function removePublishLeftovers(dataDir: string, log: Logger): Promise<void> {
  const leftovers = await removeStalePublishDirs(dataPaths.publishDir(dataDir));
  const pruned = await prunePendingPublishes(dataDir);
  if (leftovers.length + pruned.length > 0) {
    log.info({ leftovers, pruned }, 'removed publish leftovers');
  }
}

function createIntake(core: AppCore, options: StartAppOptions): Intake {
  const { config, log, queue } = core;
  return new Intake({
    queue,
    auth: core.auth,
    log,
    lock: core.lock,
    onEnqueued: () => core.workers?.kick(),
    onCancelRequested: (runId) => core.workers?.abort(runId),
    retryMs: options.intakeRetryMs,
    ...(config.maxQueuedPerRepo !== undefined && { maxQueuedPerRepo: config.maxQueuedPerRepo }),
    onUse: useCommandHandler({
      queue,
      dataDir: config.dataDir,
      artifactTtlSeconds: config.retentionDays * 24 * 3600,
      gitBaseUrl: config.gitBaseUrl,
      ...(config.publicUrl ? { publicUrl: config.publicUrl } : {}),
      appAuth: core.identity.appClient,
      ...(config.botIdentity ? { botIdentity: config.botIdentity } : {}),
      log,
      ...(options.git ? { git: options.git } : {}),
    }),
    onCi: ciCommandHandler({
      dataDir: config.dataDir,
      gitBaseUrl: config.gitBaseUrl,
      appAuth: core.identity.appClient,
      ...(config.botIdentity ? { botIdentity: config.botIdentity } : {}),
      log,
      ...(options.git ? { git: options.git } : {}),
    }),
  });
}

interface Webhooks {
  url: string;
  probot: Probot | undefined;
  stop(): Promise<void>;
}

/** The HTTP server: webhooks (guarded), run pages, the runs page, metrics. */
async function startWebhooks(
  core: AppCore,
  intake: Intake,
  options: StartAppOptions,
): Promise<Webhooks> {
  const { config, log } = core;
  const server = new Server({
    Probot: core.Probot,
    log,
    host: config.host,
    port: config.port === 0 ? await freePort(config.host) : config.port,
    webhookPath: config.webhookPath,
    webhookProxy: config.webhookProxyUrl,
  });
  const appFn = frognanoApp({
    label: config.label,
    intake,
    log,
    trajectoriesFrom: config.publicUrl ? config.dataDir : undefined,
    queue: core.queue,
    webHandlers: webHandlers(core),
    metrics: core.metrics,
  });
  let probot: Probot | undefined;
  await server.load((app, appOptions) => {
    probot = app;
    return appFn(app, appOptions);
  });
  const httpServer = await server.start().catch(core.failStart);
  const bodyTimeoutMs = options.webhookBodyTimeoutMs ?? WEBHOOK_BODY_TIMEOUT_MS;
  guardWebhookBodies(httpServer, config.webhookPath, log, bodyTimeoutMs);
  // Deliveries recorded before a crash but not yet handled.
  void intake.kick();
  return {
    url: `http://${server.host}:${server.port}`,
    probot,
    async stop() {
      // Idle keep-alive connections would hold close() open until they time out.
      const closing = server.stop();
      httpServer.closeIdleConnections();
      await closing;
    },
  };
}

/** The run pages (with a public URL or the runs page) and the runs page (with OAuth set). */
function webHandlers(core: AppCore): NonNullable<FrognanoAppDeps['webHandlers']> {
  const { config, env, log, queue } = core;
  const listing = queueRunListing(queue, {
    gitBaseUrl: config.gitBaseUrl,
    files: (id) => runArtifacts(id, { dataDir: config.dataDir, queue }),
  });
  const runsPage = runsPageConfig(env);
  if (!runsPage) log.info('runs page /runs off: set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET');
  return [
    ...(config.publicUrl || runsPage
      ? [runPageHandler({ listing, model: env.FROGNANO_MODEL })]
      : []),
    ...(runsPage
      ? [
          runsPageHandler({
            ...runsPage,
            listing,
            webBaseUrl: config.gitBaseUrl,
            apiBaseUrl: config.apiBaseUrl,
            publicUrl: config.publicUrl,
            log,
          }),
        ]
      : []),
  ];
}

/**
 * The App's Octokit with the shared throttle under the options it is given (a class's own
 * defaults still win: the tests' unspaced writes) and writes paced as they leave.
 */
function withThrottle(
  Octokit: typeof ProbotOctokit,
  throttle: SharedThrottle | undefined,
): typeof ProbotOctokit {
  if (!throttle) return Octokit;
  return (Octokit.plugin(paceWrites as never) as typeof ProbotOctokit).defaults(
    (options: Record<string, unknown>) => ({
      ...options,
      throttle: { ...throttle.options, ...(options.throttle as object) },
    }),
  );
}
