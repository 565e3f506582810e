// The GitHub App entry point: wiring only. The webhook handler verifies (Probot), filters
// (triggers.ts) and records the delivery (queue); intake, workers and publishing do the rest.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { resolve } from 'node:path';
import {
  Probot,
  Server,
  run as runProbot,
  type ApplicationFunction,
  type ProbotOctokit,
} from 'probot';
import type { Logger } from 'pino';
import { loadProcessConfig } from './config.js';
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
import { readRunArtifact, runArtifacts } from './queue/read-run-artifact.js';
import type { Queue } from './queue/types.js';
import { lockDataDir, type DataDirHalf } from './queue/data-dir-lock.js';
import { startRetention } from './queue/retention.js';
import { reap } from './sandbox/reap.js';
import { runPipeline } from './runner/run.js';
import { AppConfigError, loadAppConfig, type AppConfig } from './github/app-config.js';
import { Intake } from './github/intake.js';
import type { IssueJob } from './github/job.js';
import { KeyedLock } from './github/keyed-lock.js';
import { appOctokit, type GitHubClient } from './github/octokit.js';
import { paceWrites, sharedThrottle, type SharedThrottle } from './github/shared-throttle.js';
import {
  type BotIdentity,
  type GitRunner,
  noreplyDomainFor,
  removeStalePublishDirs,
  resolveBotIdentity,
} from './github/publish.js';
import { prunePendingPublishes } from './github/pending-publish.js';
import { decideTrigger } from './github/triggers.js';
import { useCommandHandler } from './github/use-attempt.js';
import { createWorkerPool } from './github/create-worker-pool.js';
import type { RunPipelineFn, WorkerPool } from './runs/index.js';
import {
  queueRunListing,
  recordingRunResults,
  runPageHandler,
  runsPageConfig,
  runsPageHandler,
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
      const sha256 = webhookBody.getStore()?.sha256;
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

/**
 * Serves run trajectories: run ids only (no path from the URL reaches the file system); from
 * this host's data directory, else from the shared queue (the run was made on another host).
 */
export function trajectoryHandler(dataDir: string, queue?: Pick<Queue, 'getArtifact'>) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const m = /^\/frognano\/runs\/([0-9a-f-]{36})\/trajectory\.json$/.exec(req.url ?? '');
    if (req.method !== 'GET' || !m) return false;
    try {
      const body = await readRunArtifact(m[1] as string, 'trajectory.json', { dataDir, queue });
      if (!body) throw new Error('no such trajectory');
      // The content was written by a model: never let a browser sniff it into a page.
      res
        .writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'; sandbox",
          'content-disposition': 'inline; filename="trajectory.json"',
        })
        .end(body);
    } catch {
      res.writeHead(404).end();
    }
    return true;
  };
}

/** Starts the App as `npm start` does; without APP_ID and a private key, the registration flow. */
export async function startApp(options: StartAppOptions = {}): Promise<RunningApp> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  // Probot's registration flow writes APP_ID, PRIVATE_KEY and WEBHOOK_SECRET into .env.
  const dotenv = resolve(cwd, '.env');
  if (env === process.env && existsSync(dotenv)) process.loadEnvFile(dotenv);
  const config = loadAppConfig(env, cwd);
  const mode = options.mode ?? 'all';
  const log = options.log ?? createLogger({ level: env.LOG_LEVEL });

  if (!config.credentials) {
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

  const { appId, privateKey, webhookSecret } = config.credentials;
  // Before the queue is touched: a second process must not requeue the first one's runs.
  const halves: DataDirHalf[] =
    mode === 'all' ? ['intake', 'worker'] : mode === 'serve' ? ['intake'] : ['worker'];
  const dataDirLock = lockDataDir(config.dataDir, halves, mode === 'all' ? 'start' : mode);
  let queue: Queue<IssueJob>;
  try {
    queue = await openQueue<IssueJob>({
      env,
      dataDir: config.dataDir,
      concurrency: config.concurrency,
      replayWindowMs: config.replayWindowMs,
      worker: mode !== 'serve',
    });
  } catch (error) {
    dataDirLock.release();
    throw error;
  }
  const { FROGNANO_REDIS_URL: redisUrl, FROGNANO_REDIS_PREFIX: redisPrefix } = loadQueueConfig(env);
  // Many machines: every process paces its GitHub requests through one state in Redis.
  const throttle = redisUrl ? sharedThrottle(redisUrl, redisPrefix, log) : undefined;
  const ProbotWithDefaults = Probot.defaults({
    appId,
    privateKey,
    secret: webhookSecret,
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
  // The model endpoints, shared by every run of this process (with Redis, by every worker).
  let fleet: ModelFleet | undefined;
  // A start that fails after taking the lock gives it back (an embedding process may retry).
  const failStart = async (error: unknown): Promise<never> => {
    await workers?.stop();
    await fleet?.close();
    await retention.stop();
    await queue.close();
    await throttle?.close();
    dataDirLock.release();
    throw error;
  };
  const metrics = createMetrics({
    queueDepth: async () => ({
      queued: (await queue.list('queued')).length,
      running: (await queue.list('running')).length,
    }),
    ...(mode === 'serve'
      ? {}
      : {
          modelEndpoints: async () => {
            if (!fleet) throw new Error('no fleet yet');
            return (await fleet.status()).map((s) => ({
              endpoint: s.endpoint.name,
              down: s.down !== undefined,
            }));
          },
        }),
  });
  const lock = new KeyedLock();
  const probotForAuth = new ProbotWithDefaults();
  const auth = (installationId: number) =>
    probotForAuth.auth(installationId) as Promise<GitHubClient>;

  let workers: WorkerPool<IssueJob> | undefined;
  if (mode !== 'serve') {
    const processConfig = loadProcessConfig(env);
    const runFleet = modelFleetFrom(processConfig, env, { observer: fleetObserver(metrics), log });
    fleet = runFleet;
    // Each run's result is kept beside its trajectory for the run page.
    const pipeline: RunPipelineFn = recordingRunResults(
      options.runPipeline ??
        ((request) =>
          runPipeline(request, {
            modelConfig: modelConfigFrom(processConfig),
            fleet: runFleet,
            env,
            dataDir: config.dataDir,
            logger: log,
            handleSignals: false,
          })),
      processConfig.FROGNANO_MODEL,
      (error) => log.warn({ err: error }, 'run.json write failed'),
    );
    // Asked once per process; a failed attempt is forgotten so the next run asks again.
    let identity: Promise<BotIdentity> | undefined;
    let identityKnown = config.botIdentity !== undefined;
    const botIdentity = (installation: GitHubClient, countAppCall: () => void) => {
      if (config.botIdentity) return Promise.resolve(config.botIdentity);
      identity ??= probotForAuth.auth().then(async (appOctokit) => {
        countAppCall();
        const resolved = await resolveBotIdentity(
          { app: appOctokit as GitHubClient, installation },
          noreplyDomainFor(config.gitBaseUrl),
        );
        identityKnown = true;
        return resolved;
      });
      identity.catch(() => (identity = undefined));
      return identity;
    };
    const mintInstallationToken = async (installationId: number): Promise<string> => {
      const appOctokit = (await probotForAuth.auth()) as GitHubClient;
      const { data } = await appOctokit.rest.apps.createInstallationAccessToken({
        installation_id: installationId,
      });
      return data.token;
    };
    workers = createWorkerPool({
      queue,
      auth,
      mintInstallationToken,
      runPipeline: pipeline,
      botIdentity,
      botIdentityKnown: () => identityKnown,
      lock,
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
    const reapOrphans =
      options.reapOrphans ??
      (async (liveRunIds: string[]) => {
        const docker = config.sandbox === 'docker' ? connectDocker(env) : undefined;
        await reap(docker, { liveRunIds, workRoot: dataPaths.runsDir(config.dataDir), log });
      });
    // What a process killed mid-publish left: its clone, and records nobody will retry.
    const leftovers = await removeStalePublishDirs(dataPaths.publishDir(config.dataDir));
    const pruned = await prunePendingPublishes(config.dataDir);
    if (leftovers.length + pruned.length > 0) {
      log.info({ leftovers, pruned }, 'removed publish leftovers');
    }
    await workers.recover(reapOrphans).catch(failStart);
    workers.start();
  }

  const intake = new Intake({
    queue,
    auth,
    log,
    lock,
    onEnqueued: () => workers?.kick(),
    onCancelRequested: (runId) => workers?.abort(runId),
    retryMs: options.intakeRetryMs,
    ...(config.maxQueuedPerRepo !== undefined && { maxQueuedPerRepo: config.maxQueuedPerRepo }),
    onUse: useCommandHandler({
      queue,
      dataDir: config.dataDir,
      artifactTtlSeconds: config.retentionDays * 24 * 3600,
      gitBaseUrl: config.gitBaseUrl,
      ...(config.publicUrl ? { publicUrl: config.publicUrl } : {}),
      appAuth: async () => (await probotForAuth.auth()) as GitHubClient,
      ...(config.botIdentity ? { botIdentity: config.botIdentity } : {}),
      log,
      ...(options.git ? { git: options.git } : {}),
    }),
  });

  let server: Server | undefined;
  let probot: Probot | undefined;
  let httpServer: HttpServer | undefined;
  if (mode !== 'worker') {
    server = new Server({
      Probot: ProbotWithDefaults,
      log,
      host: config.host,
      port: config.port === 0 ? await freePort(config.host) : config.port,
      webhookPath: config.webhookPath,
      webhookProxy: config.webhookProxyUrl,
    });
    const listing = queueRunListing(queue, {
      gitBaseUrl: config.gitBaseUrl,
      files: (id) => runArtifacts(id, { dataDir: config.dataDir, queue }),
    });
    const runsPage = runsPageConfig(env);
    if (!runsPage) log.info('runs page /runs off: set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET');
    const webHandlers = [
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
    const appFn = frognanoApp({
      label: config.label,
      intake,
      log,
      trajectoriesFrom: config.publicUrl ? config.dataDir : undefined,
      queue,
      webHandlers,
      metrics,
    });
    await server.load((app, appOptions) => {
      probot = app;
      return appFn(app, appOptions);
    });
    httpServer = await server.start().catch(failStart);
    guardWebhookBodies(
      httpServer,
      config.webhookPath,
      log,
      options.webhookBodyTimeoutMs ?? WEBHOOK_BODY_TIMEOUT_MS,
    );
    // Deliveries recorded before a crash but not yet handled.
    void intake.kick();
  }

  return {
    registering: false,
    url: server ? `http://${server.host}:${server.port}` : undefined,
    config,
    probot,
    queue,
    intake,
    workers,
    metrics,
    async stop() {
      // Idle keep-alive connections would hold close() open until they time out.
      const closing = server?.stop();
      httpServer?.closeIdleConnections();
      await closing;
      await intake.stop();
      await workers?.stop();
      await fleet?.close();
      await retention.stop();
      await queue.close();
      await throttle?.close();
      dataDirLock.release();
    },
  };
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

/** GitHub caps webhook payloads at 25 MB; anything bigger is not GitHub. */
export const MAX_WEBHOOK_BYTES = 25 * 1024 * 1024;
/** All webhook bodies being read at once may hold at most this much memory. */
export const MAX_WEBHOOK_BYTES_IN_FLIGHT = 4 * MAX_WEBHOOK_BYTES;

/**
 * GitHub gives up on a delivery that takes more than 10 s; a body still arriving after that is
 * not GitHub's, and would hold its share of the in-flight budget for Node's 5-minute request
 * timeout: four such senders would turn every real delivery away.
 */
export const WEBHOOK_BODY_TIMEOUT_MS = 10_000;

/** The raw body of the webhook request being handled (its hash detects replays). */
const webhookBody = new AsyncLocalStorage<{ sha256: string }>();

/**
 * @octokit/webhooks' path test, verbatim: trailing slashes dropped, then resolved as a URL, so
 * `/api/github/webhooks/`, `/api/github/x/../webhooks` and `//host/api/github/webhooks` all
 * reach the webhook handler. Whatever it routes there, we guard.
 */
function webhookPathname(url: string): string | undefined {
  try {
    return new URL(url.replace(/\/+$/, '') || '/', 'http://localhost').pathname;
  } catch {
    return undefined;
  }
}

/**
 * Probot's webhook middleware reads the whole body into memory before it checks the signature,
 * so anyone could make it buffer gigabytes. Every request Probot would route to the webhook
 * handler is read here instead, counting bytes as they arrive: a declared length over the cap
 * is refused unread, and a body (chunked or not) that grows past it is cut off at the cap, the
 * connection closed. The body read is handed to Probot as `rawBody` (which its middleware
 * takes instead of reading the stream), and its SHA-256 to our handler.
 */
function guardWebhookBodies(
  server: HttpServer,
  webhookPath: string,
  log: Logger,
  bodyTimeoutMs: number,
): void {
  const target = webhookPathname(webhookPath);
  const listeners = server.listeners('request') as ((
    req: IncomingMessage,
    res: ServerResponse,
  ) => void)[];
  let inFlight = 0;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const forward = () => {
      for (const listener of listeners) listener.call(server, req, res);
    };
    if (webhookPathname(req.url ?? '/') !== target) return forward();
    const refuse = (status: number, why: string, bytes: number) => {
      // Nothing of the body is kept or logged; connection: close makes Node drop the socket
      // once the answer is out instead of reading on.
      log.warn({ url: (req.url ?? '').slice(0, 200), bytes, status }, why);
      if (!res.headersSent) {
        res.writeHead(status, { connection: 'close', 'content-type': 'text/plain' });
        res.end(status === 413 ? 'payload too large\n' : status === 408 ? 'too slow\n' : 'busy\n');
      }
    };
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > MAX_WEBHOOK_BYTES) {
      refuse(413, 'webhook body over the size cap refused unread', declared);
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    let done = false;
    const slow = setTimeout(() => {
      if (done) return;
      stop();
      req.pause();
      refuse(408, 'webhook body slower than GitHub sends: connection cut', received);
      req.socket.destroy();
    }, bodyTimeoutMs).unref();
    const stop = () => {
      done = true;
      clearTimeout(slow);
      inFlight -= received;
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      chunks.length = 0;
    };
    const onData = (chunk: Buffer) => {
      if (done) return;
      received += chunk.length;
      inFlight += chunk.length;
      if (received > MAX_WEBHOOK_BYTES) {
        stop();
        req.pause();
        refuse(413, 'webhook body over the size cap cut off', received);
        return;
      }
      if (inFlight > MAX_WEBHOOK_BYTES_IN_FLIGHT) {
        stop();
        req.pause();
        refuse(503, 'too many webhook bytes in flight: connection cut', received);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      if (done) return;
      const body = Buffer.concat(chunks);
      stop();
      const sha256 = createHash('sha256').update(body).digest('hex');
      // @octokit/webhooks' getPayload uses `rawBody` when `body` is an object.
      Object.assign(req, { rawBody: body, body: {} });
      webhookBody.run({ sha256 }, forward);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', () => {
      if (!done) stop();
    });
    req.on('close', () => {
      if (!done) stop();
    });
  });
}

// Probot's Server treats port 0 as "use 3000"; pick a free port ourselves.
function freePort(host?: string): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(0, host ?? '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
