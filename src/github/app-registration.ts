// An App not registered yet: Probot's manifest flow registers it, and writes APP_ID,
// PRIVATE_KEY and WEBHOOK_SECRET into .env for the next start (never in production, never for a
// process that only runs workers).
import type { Logger } from 'pino';
import { run as runProbot } from 'probot';
import { freePort } from '../free-port.js';
import { AppConfigError, type AppConfig } from './app-config.js';

/** Without the App's credentials: Probot's manifest flow registers it (outside production). */
export async function startRegistration(
  config: AppConfig,
  env: NodeJS.ProcessEnv,
  worker: boolean,
  log: Logger,
): Promise<{ url: string; stop(): Promise<void> }> {
  if (worker) {
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
    url: `http://${server.host}:${server.port}`,
    stop: () => server.stop(),
  };
}
