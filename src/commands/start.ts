// `npm start` / `frognano serve` / `frognano worker`: start the App and stop it cleanly on a signal.
import { startApp, type AppMode } from '../app.js';
import { log } from '../log.js';

export async function startCommand(options: { mode: AppMode }): Promise<void> {
  const app = await startApp({ mode: options.mode });
  if (app.registering) {
    log.info({ url: app.url }, 'open this URL in a browser to register the GitHub App');
  } else {
    log.info({ mode: options.mode, url: app.url }, 'frognano-bot started');
  }
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping; runs in flight are requeued at the next start');
    app.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
