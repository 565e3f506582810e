// `npm start` / `frognano serve` / `frognano worker`: start the App and stop it cleanly on a signal.
import { startApp, type AppMode } from '../app.js';
import { loadProcessConfig } from '../config.js';
import { log } from '../log.js';
import { startMetricsServer, type MetricsServer } from '../metrics/index.js';

export async function startCommand(options: { mode: AppMode }): Promise<void> {
  const app = await startApp({ mode: options.mode });
  // A worker has no HTTP server of its own: it gets one for /metrics (and /ping).
  let metricsServer: MetricsServer | undefined;
  const metricsPort = options.mode === 'worker' ? loadProcessConfig().FROGNANO_METRICS_PORT : 0;
  if (app.metrics && metricsPort !== 0) {
    try {
      metricsServer = await startMetricsServer(app.metrics, {
        port: metricsPort,
        host: app.config?.host,
        log,
      });
    } catch (error) {
      await app.stop();
      throw error;
    }
  }
  if (app.registering) {
    log.info({ url: app.url }, 'open this URL in a browser to register the GitHub App');
  } else {
    log.info(
      { mode: options.mode, url: app.url, metrics: metricsServer?.url },
      'frognano-bot started',
    );
  }
  // Workers' timers do not hold the process open (and the metrics server may be off): this
  // does, until a signal stops the App.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping; runs in flight are requeued at the next start');
    Promise.all([metricsServer?.close(), app.stop()]).then(
      () => {
        clearInterval(keepAlive);
        process.exit(0);
      },
      (error: unknown) => {
        log.error({ err: error }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
