// `npm start` / `frognano serve` / `frognano worker`: check what runs need (the doctor's checks),
// build the sandbox image when it is missing, start the App and stop it cleanly on a signal.
import { startApp, type AppMode } from '../app.js';
import { loadAppConfig, type AppConfig } from '../github/app-config.js';
import { log } from '../log.js';
import { loadProcessConfig } from '../config.js';
import { assertDockerReachable, connectDocker } from '../sandbox/docker-engine.js';
import { ensureSandboxImage } from '../sandbox/ensure-sandbox-image.js';
import { runChecks } from './doctor.js';
import { startMetricsServer, type MetricsServer } from '../metrics/index.js';

export async function startCommand(options: { mode: AppMode }): Promise<void> {
  // The CLI loaded .env into the environment; the App's configuration is read here, once.
  const env = process.env;
  const cwd = process.cwd();
  const config = loadAppConfig(env, cwd);
  // Unregistered: serve the registration flow; the checks run at the next start.
  if (config.credentials && !(await preflight(options.mode, env, cwd, config))) {
    process.exitCode = 1;
    return;
  }

  const app = await startApp({ mode: options.mode, env, cwd, config });
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

/**
 * Builds the default sandbox image if it is missing, then runs the doctor's checks. A blocking
 * failure is printed as the doctor's line and refuses the start; a model that is down only
 * warns (GPUs restart; each run then fails with its own clear message).
 */
async function preflight(
  mode: AppMode,
  env: NodeJS.ProcessEnv,
  cwd: string,
  app: AppConfig,
): Promise<boolean> {
  const config = loadProcessConfig(env);
  if (mode !== 'serve' && config.FROGNANO_SANDBOX === 'docker') {
    const docker = connectDocker(env);
    const engineUp = await assertDockerReachable(docker, { env }).then(
      () => true,
      () => false, // the Docker engine check below says what to do
    );
    if (engineUp) {
      try {
        await ensureSandboxImage({
          docker,
          image: config.FROGNANO_SANDBOX_IMAGE,
          env,
          progress: (line) => log.info({ line }, 'sandbox image'),
        });
      } catch (error) {
        process.stderr.write(`✗ sandbox image: ${(error as Error).message}\n`);
        return false;
      }
    }
  }
  const outcomes = await runChecks({ env, cwd, mode, atStart: true, app });
  for (const { check, result, line, blocks } of outcomes) {
    if (blocks) process.stderr.write(`${line}\n`);
    else if (result.ok)
      log.info({ check: check.name, detail: result.detail }, 'start-up check passed');
    else
      log.warn(
        { check: check.name, problem: result.problem, fix: result.fix },
        'start-up check failed; starting anyway',
      );
  }
  return !outcomes.some((outcome) => outcome.blocks);
}
