// `frognano action`: one GitHub Actions event, handled in this process from start to end, with
// the App's own parts (triggers, intake, queue, worker, pipeline, publishing). Exit 0 when the
// event was handled, 1 when its run failed, 2 when the environment is not a workflow's. Only
// what reading the environment and the event needs is loaded before the event turns out to be
// ours: most events a workflow sees are not (a comment without a command, another label).
import { ConfigError, loadProcessConfig } from '../config.js';
import { AppConfigError, loadAppConfig } from '../github/app-config.js';
import { decideTrigger, repoKey } from '../github/intake/index.js';
import { ActionEnvError, readActionEnv, type ActionEnv } from './action-env.js';
import { appendStepSummary, writeOutputs } from './action-files.js';
import { crashedReport, ignoredReport, type ActionReport } from './action-report.js';
import type { ActionSetup, RunActionOptions } from './action-setup.js';
import { localSandboxProblem } from './local-sandbox-guard.js';

/** How often a running run looks for a cancel made by another workflow run (default 10 s). */
export const CANCEL_POLL_VARIABLE = 'FROGNANO_ACTION_CANCEL_POLL_SECONDS';

export async function runAction(o: RunActionOptions): Promise<number> {
  let setup: ActionSetup;
  try {
    setup = readSetup(o.env, o.cwd ?? process.cwd());
  } catch (error) {
    if (!(
      error instanceof ActionEnvError ||
      error instanceof AppConfigError ||
      error instanceof ConfigError
    )) {
      throw error;
    }
    o.stderr(`frognano: ${error.message.split('\n').join('; ')}`);
    return 2;
  }
  let report: ActionReport;
  try {
    report = await handleEvent(setup, o);
  } catch (error) {
    if (error instanceof ActionEnvError) {
      o.stderr(`frognano: ${error.message}`);
      return 2;
    }
    // Not the environment's fault: the run could not be done (exit 1), said in one line.
    o.log.error({ err: error }, 'frognano action failed');
    report = crashedReport(error);
  }
  await publishReport(setup.env, report, o);
  return report.exitCode;
}

function readSetup(processEnv: NodeJS.ProcessEnv, cwd: string): ActionSetup {
  const env = readActionEnv(processEnv, cwd);
  // The App's variables as the App reads them; the workflow's name the hosts and the directory.
  const appEnv = {
    ...processEnv,
    APP_ID: undefined,
    PRIVATE_KEY: undefined,
    PRIVATE_KEY_PATH: undefined,
    WEBHOOK_SECRET: undefined,
    GITHUB_API_URL: env.apiUrl,
    FROGNANO_GIT_URL: processEnv.FROGNANO_GIT_URL || env.serverUrl,
    FROGNANO_DATA_DIR: env.dataDir,
  };
  const config = loadAppConfig(appEnv, cwd);
  const sandboxProblem = localSandboxProblem(config.sandbox, processEnv);
  if (sandboxProblem) throw new ActionEnvError(sandboxProblem);
  const processConfig = loadProcessConfig({ ...processEnv, FROGNANO_DATA_DIR: env.dataDir });
  const raw = processEnv[CANCEL_POLL_VARIABLE]?.trim() || '10';
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds < 0.1) {
    throw new ActionEnvError(
      `${CANCEL_POLL_VARIABLE} must be a number of seconds, 0.1 or more (got ${JSON.stringify(raw)})`,
    );
  }
  return { env, config, processConfig, cancelPollMs: Math.round(seconds * 1000) };
}

async function handleEvent(setup: ActionSetup, o: RunActionOptions): Promise<ActionReport> {
  const { env, config } = setup;
  // A workflow's payload names no installation of ours: the credential decides which it is.
  const payload = { ...env.payload, installation: { id: 0 } };
  const decision = decideTrigger(env.eventName, payload, { label: config.label });
  if (decision.kind === 'ignore') {
    o.log.info({ event: env.eventName, reason: decision.reason }, 'event ignored');
    return ignoredReport(env.eventName, decision.reason);
  }
  if (repoKey(env) !== repoKey(decision)) {
    throw new ActionEnvError(
      `GITHUB_REPOSITORY (${env.owner}/${env.repo}) is not the event's repository (${decision.owner}/${decision.repo})`,
    );
  }
  const { handleTrigger } = await import('./handle-trigger.js');
  return handleTrigger(setup, decision, o);
}

async function publishReport(env: ActionEnv, report: ActionReport, o: RunActionOptions) {
  if (env.output) await writeOutputs(env.output, report.outputs);
  if (env.stepSummary) await appendStepSummary(env.stepSummary, report.summary);
  if (report.failure) o.stderr(`frognano: ${report.failure}`);
}
