// `frognano action`: the bot as a GitHub Actions step (src/action/). The workflow run being
// cancelled (the runner sends SIGINT, then SIGTERM) stops the run as a cancel does; a second
// signal leaves at once.
import { createLogger } from '../log.js';
import { runAction } from '../action/run-action.js';

export async function actionCommand(io: {
  env: NodeJS.ProcessEnv;
  stderr: (line: string) => void;
}): Promise<number> {
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) process.exit(130);
    io.stderr(`frognano: ${signal}: stopping the run`);
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await runAction({
      env: io.env,
      // A step's log is read by a person in the workflow's page: lines, unless asked for JSON.
      log: createLogger({ level: io.env.LOG_LEVEL, pretty: io.env.LOG_FORMAT !== 'json' }),
      stderr: io.stderr,
      signal: controller.signal,
    });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
