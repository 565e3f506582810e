// `/metrics` over HTTP: a handler for the App's Probot server, and a small server of its own for
// `frognano worker`, which has no other (it also answers `/ping` for health checks).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from './registry.js';

/** Probot `addHandler` style: true when the request was answered here. */
export function metricsHandler(metrics: Metrics, log?: Logger) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') return false;
    try {
      const body = await metrics.scrape();
      res.writeHead(200, { 'content-type': metrics.contentType }).end(body);
    } catch (error) {
      log?.warn({ err: error }, 'metrics scrape failed');
      res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics scrape failed\n');
    }
    return true;
  };
}

/** The worker's metrics port cannot be had: the one line says which variable picks another. */
export class MetricsPortError extends Error {
  constructor(port: number, cause: NodeJS.ErrnoException) {
    const why =
      cause.code === 'EADDRINUSE'
        ? 'EADDRINUSE: another process, perhaps another frognano worker, listens there'
        : (cause.code ?? cause.message);
    super(
      `cannot serve metrics on port ${port} (${why}): set FROGNANO_METRICS_PORT to a free port (one per worker on a host), or 0 to turn the metrics server off`,
      { cause },
    );
    this.name = 'MetricsPortError';
  }
}

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/** Listens on `port` (0: any free port) and serves `GET /metrics` and `GET /ping`. */
export async function startMetricsServer(
  metrics: Metrics,
  options: { port: number; host?: string; log?: Logger },
): Promise<MetricsServer> {
  const handle = metricsHandler(metrics, options.log);
  const server = createServer((req, res) => {
    void handle(req, res).then((answered) => {
      if (answered) return;
      const path = (req.url ?? '').split('?')[0];
      if (req.method === 'GET' && path === '/ping') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('PONG');
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(new MetricsPortError(options.port, error)),
    );
    server.listen(options.port, options.host, resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host ?? 'localhost';
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
