// The App's HTTP side: Probot's server receiving webhooks (bodies guarded before Probot checks
// their signature), the Probot application function that filters each delivery and records it
// through intake, and beside it the run pages, the runs page and `/metrics`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { Server, type ApplicationFunction, type Probot } from 'probot';
import { freePort } from '../free-port.js';
import { countDelivery, metricsHandler, type Metrics } from '../metrics/index.js';
import { runArtifacts } from '../queue/read-run-artifact.js';
import type { Queue } from '../queue/types.js';
import {
  queueRunListing,
  runPageHandler,
  runsPageConfig,
  runsPageHandler,
  trajectoryHandler,
} from '../web/index.js';
import type { AppConfig } from './app-config.js';
import {
  decideTrigger,
  guardWebhookBodies,
  WEBHOOK_BODY_TIMEOUT_MS,
  webhookBodySha256,
  type Intake,
} from './intake/index.js';
import type { IssueJob } from './job.js';

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

export interface WebhookServerDeps {
  Probot: typeof Probot;
  config: AppConfig;
  env: NodeJS.ProcessEnv;
  log: Logger;
  intake: Intake;
  queue: Queue<IssueJob>;
  metrics: Metrics;
  /** A webhook body not complete this long after its request arrived is cut (default 10 s). */
  bodyTimeoutMs?: number;
  /** Called when the server cannot start (the App gives back what it holds, then throws). */
  failStart: (error: unknown) => Promise<never>;
}

export interface WebhookServer {
  url: string;
  probot: Probot | undefined;
  stop(): Promise<void>;
}

/** The HTTP server: webhooks (guarded), run pages, the runs page, metrics. */
export async function startWebhookServer(d: WebhookServerDeps): Promise<WebhookServer> {
  const { config, log } = d;
  const server = new Server({
    Probot: d.Probot,
    log,
    host: config.host,
    port: config.port === 0 ? await freePort(config.host) : config.port,
    webhookPath: config.webhookPath,
    webhookProxy: config.webhookProxyUrl,
  });
  const appFn = frognanoApp({
    label: config.label,
    intake: d.intake,
    log,
    trajectoriesFrom: config.publicUrl ? config.dataDir : undefined,
    queue: d.queue,
    webHandlers: webHandlers(d),
    metrics: d.metrics,
  });
  let probot: Probot | undefined;
  await server.load((app, appOptions) => {
    probot = app;
    return appFn(app, appOptions);
  });
  const httpServer = await server.start().catch(d.failStart);
  const bodyTimeoutMs = d.bodyTimeoutMs ?? WEBHOOK_BODY_TIMEOUT_MS;
  guardWebhookBodies(httpServer, config.webhookPath, log, bodyTimeoutMs);
  // Deliveries recorded before a crash but not yet handled.
  void d.intake.kick();
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
function webHandlers(d: WebhookServerDeps): NonNullable<FrognanoAppDeps['webHandlers']> {
  const { config, env, log, queue } = d;
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
