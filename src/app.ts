// The GitHub App entry point: wiring only. The webhook handler verifies (Probot), filters
// (triggers.ts) and records the delivery (queue); intake, workers and publishing do the rest.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { join, resolve } from 'node:path';
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
import { createLogger } from './log.js';
import { connectDocker } from './sandbox/docker-engine.js';
import { RunQueue } from './queue/queue.js';
import { reap } from './sandbox/reap.js';
import { runPipeline } from './runner/run.js';
import { loadAppConfig, type AppConfig } from './github/app-config.js';
import { Intake } from './github/intake.js';
import type { IssueJob } from './github/job.js';
import { KeyedLock } from './github/keyed-lock.js';
import { appOctokit, type GitHubClient } from './github/octokit.js';
import {
  type BotIdentity,
  type GitRunner,
  noreplyDomainFor,
  removeStalePublishDirs,
  resolveBotIdentity,
} from './github/publish.js';
import { prunePendingPublishes } from './github/pending-publish.js';
import { decideTrigger } from './github/triggers.js';
import { type RunPipelineFn, WorkerPool, runOutDir } from './github/worker.js';

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
}

export interface RunningApp {
  /** True when the App is not registered yet and the manifest flow is being served instead. */
  registering: boolean;
  /** Base URL of the HTTP server (absent in worker mode). */
  url?: string;
  config?: AppConfig;
  /** The Probot instance receiving webhooks (absent in worker mode and while registering). */
  probot?: Probot;
  queue?: RunQueue<IssueJob>;
  intake?: Intake;
  workers?: WorkerPool;
  /** Stops the server and the workers; runs in flight are left for the next start to requeue. */
  stop(): Promise<void>;
}

export interface FrognanoAppDeps {
  label: string;
  intake: Intake;
  log: Logger;
  /** Serve `/frognano/runs/<id>/trajectory.json` from here (when a public URL is configured). */
  trajectoriesFrom?: string;
}

/** The Probot application function: subscribe, filter, record. */
export function frognanoApp(deps: FrognanoAppDeps): ApplicationFunction {
  return (app, { addHandler }) => {
    const handle = (context: { id: string; name: string; payload: unknown }) => {
      const decision = decideTrigger(context.name, context.payload, { label: deps.label });
      if (decision.kind === 'ignore') {
        deps.log.debug({ deliveryId: context.id, reason: decision.reason }, 'webhook ignored');
        return;
      }
      const outcome = deps.intake.accept(context.id, decision);
      deps.log.info({ deliveryId: context.id, kind: decision.kind, outcome }, 'webhook accepted');
    };
    app.on('issues.labeled', handle);
    app.on('issue_comment.created', handle);
    if (deps.trajectoriesFrom) addHandler(trajectoryHandler(deps.trajectoriesFrom));
  };
}

/** Serves run trajectories: run ids only (no path from the URL reaches the file system). */
export function trajectoryHandler(dataDir: string) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const m = /^\/frognano\/runs\/([0-9a-f-]{36})\/trajectory\.json$/.exec(req.url ?? '');
    if (req.method !== 'GET' || !m) return false;
    try {
      const body = await readFile(join(runOutDir(dataDir, m[1] as string), 'trajectory.json'));
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
      throw new Error('APP_ID and PRIVATE_KEY (or PRIVATE_KEY_PATH) must be set to run workers');
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
  const ProbotWithDefaults = Probot.defaults({
    appId,
    privateKey,
    secret: webhookSecret,
    baseUrl: config.apiBaseUrl,
    log,
    Octokit: options.Octokit ?? appOctokit(log),
  });
  const queue = RunQueue.open<IssueJob>({
    dataDir: config.dataDir,
    concurrency: config.concurrency,
  });
  const lock = new KeyedLock();
  const probotForAuth = new ProbotWithDefaults();
  const auth = (installationId: number) =>
    probotForAuth.auth(installationId) as Promise<GitHubClient>;

  let workers: WorkerPool | undefined;
  if (mode !== 'serve') {
    const processConfig = loadProcessConfig(env);
    const pipeline: RunPipelineFn =
      options.runPipeline ??
      ((request) =>
        runPipeline(request, {
          modelConfig: modelConfigFrom(processConfig),
          env,
          dataDir: config.dataDir,
          logger: log,
          handleSignals: false,
        }));
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
    workers = new WorkerPool({
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
    });
    const reapOrphans =
      options.reapOrphans ??
      (async (liveRunIds: string[]) => {
        const docker = config.sandbox === 'docker' ? connectDocker(env) : undefined;
        await reap(docker, { liveRunIds, workRoot: join(config.dataDir, 'runs'), log });
      });
    // What a process killed mid-publish left: its clone, and records nobody will retry.
    const leftovers = await removeStalePublishDirs(join(config.dataDir, 'publish'));
    const pruned = await prunePendingPublishes(config.dataDir);
    if (leftovers.length + pruned.length > 0) {
      log.info({ leftovers, pruned }, 'removed publish leftovers');
    }
    await workers.recover(reapOrphans);
    workers.start();
  }

  const intake = new Intake({
    queue,
    auth,
    log,
    lock,
    onEnqueued: () => workers?.kick(),
    onCancelRequested: (runId) => workers?.abort(runId),
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
    const appFn = frognanoApp({
      label: config.label,
      intake,
      log,
      trajectoriesFrom: config.publicUrl ? config.dataDir : undefined,
    });
    await server.load((app, appOptions) => {
      probot = app;
      return appFn(app, appOptions);
    });
    httpServer = await server.start();
    limitWebhookBodies(httpServer, config.webhookPath);
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
    async stop() {
      // Idle keep-alive connections would hold close() open until they time out.
      const closing = server?.stop();
      httpServer?.closeIdleConnections();
      await closing;
      await intake.stop();
      await workers?.stop();
      queue.close();
    },
  };
}

/** GitHub caps webhook payloads at 25 MB; anything announcing more is not GitHub. */
export const MAX_WEBHOOK_BYTES = 25 * 1024 * 1024;

/**
 * Probot's webhook middleware reads the whole body into memory before it checks the signature,
 * so anyone could make it buffer gigabytes. A request to the webhook path whose Content-Length
 * is over the cap is answered 413 before any listener reads it. (A chunked body has no length
 * to check up front; Node's request timeout still bounds it.)
 */
function limitWebhookBodies(server: HttpServer, webhookPath: string): void {
  const listeners = server.listeners('request') as ((
    req: IncomingMessage,
    res: ServerResponse,
  ) => void)[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0];
    const length = Number(req.headers['content-length'] ?? 0);
    if (path === webhookPath && length > MAX_WEBHOOK_BYTES) {
      res.writeHead(413, { connection: 'close', 'content-type': 'text/plain' });
      res.end('payload too large\n');
      return;
    }
    for (const listener of listeners) listener.call(server, req, res);
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
