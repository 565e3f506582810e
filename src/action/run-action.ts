// `frognano action`: one GitHub Actions event, handled in this process from start to end, with
// the App's own parts (triggers, intake, queue, worker, pipeline, publishing). Exit 0 when the
// event was handled, 1 when its run failed, 2 when the environment is not a workflow's.
import type { Logger } from 'pino';
import { ConfigError, loadProcessConfig, type ProcessConfig } from '../config.js';
import { AppConfigError, loadAppConfig, type AppConfig } from '../github/app-config.js';
import type { AcceptedTrigger } from '../github/intake.js';
import { STATUS_COMMENT_NOTE } from '../github/intake.js';
import { decideTrigger, issueKey } from '../github/triggers.js';
import { runOutDir } from '../github/worker.js';
import { connectDocker } from '../sandbox/docker-engine.js';
import { ensureSandboxImage } from '../sandbox/ensure-sandbox-image.js';
import { ActionEnvError, readActionEnv, type ActionEnv } from './action-env.js';
import { appendStepSummary, writeOutputs } from './action-files.js';
import { actionGitHub, type ActionGitHub } from './action-github.js';
import {
  answeredReport,
  ignoredReport,
  intakeFailedReport,
  runReport,
  type ActionReport,
} from './action-report.js';
import { openSession, type ActionSession } from './action-session.js';
import { watchCancel } from './remote-cancel.js';
import { writeActionRunPage } from './run-page.js';

export interface RunActionOptions {
  env: NodeJS.ProcessEnv;
  cwd?: string;
  log: Logger;
  stderr: (line: string) => void;
  /** Aborted when the workflow run is cancelled (SIGINT, SIGTERM): the run stops, cancelled. */
  signal?: AbortSignal;
}

/** How often a running run looks for a cancel made by another workflow run (default 10 s). */
const CANCEL_POLL_VARIABLE = 'FROGNANO_ACTION_CANCEL_POLL_SECONDS';

interface Setup {
  env: ActionEnv;
  config: AppConfig;
  processConfig: ProcessConfig;
  cancelPollMs: number;
}

export async function runAction(o: RunActionOptions): Promise<number> {
  let setup: Setup;
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
  const report = await handleEvent(setup, o);
  await publishReport(setup.env, report, o);
  return report.exitCode;
}

function readSetup(processEnv: NodeJS.ProcessEnv, cwd: string): Setup {
  const env = readActionEnv(processEnv, cwd);
  // The App's variables as the App reads them; the workflow's names the hosts and the directory.
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

async function handleEvent(setup: Setup, o: RunActionOptions): Promise<ActionReport> {
  const { env, config, processConfig } = setup;
  // A workflow's payload names no installation of ours: the credential decides which it is.
  const payload = { ...env.payload, installation: { id: 0 } };
  const decision = decideTrigger(env.eventName, payload, { label: config.label });
  if (decision.kind === 'ignore') {
    o.log.info({ event: env.eventName, reason: decision.reason }, 'event ignored');
    return ignoredReport(env.eventName, decision.reason);
  }
  const github = actionGitHub(env, {
    log: o.log,
    gitBaseUrl: config.gitBaseUrl,
    ...(config.botIdentity ? { botIdentity: config.botIdentity } : {}),
  });
  const session = await openSession({
    env,
    config,
    processConfig,
    processEnv: o.env,
    github,
    decision,
    log: o.log,
  });
  try {
    return await decide(setup, session, github, decision, o);
  } finally {
    await session.close();
  }
}

async function decide(
  setup: Setup,
  session: ActionSession,
  github: ActionGitHub,
  decision: AcceptedTrigger,
  o: RunActionOptions,
): Promise<ActionReport> {
  const { env } = setup;
  await session.intake.accept(env.deliveryId, decision);
  await session.intake.idle();
  const pending = await session.local.pendingDeliveries();
  if (pending.some((p) => p.deliveryId === env.deliveryId)) return intakeFailedReport();
  const run = await session.local.runForDelivery(env.deliveryId);
  if (run?.state === 'queued') return runIt(setup, session, github, run.id, o);
  return answeredReport(answerOutcome(session, decision), github.lastCommentBody());
}

function answerOutcome(session: ActionSession, decision: AcceptedTrigger): string {
  if (decision.kind === 'cancel' && session.cancel.asked) {
    return session.cancel.runId ? 'cancel_requested' : 'nothing_to_cancel';
  }
  if (decision.kind === 'use' && session.used) return 'use_answered';
  return 'refused';
}

async function runIt(
  setup: Setup,
  session: ActionSession,
  github: ActionGitHub,
  runId: string,
  o: RunActionOptions,
): Promise<ActionReport> {
  const { env, config } = setup;
  const record = (await session.local.get(runId))!;
  if (config.sandbox === 'docker') await prepareSandboxImage(setup, o.env, o.log);
  const key = issueKey(record.job);
  const issue = {
    owner: record.job.owner,
    repo: record.job.repo,
    issueNumber: record.job.issueNumber,
  };
  const stop = () => session.workers.abort(runId);
  o.signal?.addEventListener('abort', stop, { once: true });
  const watch = watchCancel({
    client: () => github.client(),
    issue,
    login: () => github.login(),
    commentId: async () => {
      const note = await session.local.getNote(key, STATUS_COMMENT_NOTE);
      return note ? Number(note) : undefined;
    },
    since: () => github.firstAnswerAt(),
    everyMs: setup.cancelPollMs,
    onCancel: stop,
    log: o.log,
  });
  try {
    session.workers.start();
    if (o.signal?.aborted) stop();
    await session.workers.idle();
  } finally {
    o.signal?.removeEventListener('abort', stop);
    await watch.stop();
  }
  const finished = (await session.local.get(runId)) ?? record;
  const result = session.results.get(runId);
  const outDir = runOutDir(config.dataDir, runId);
  await writeActionRunPage(outDir, {
    run: finished,
    result,
    model: setup.processConfig.FROGNANO_MODEL,
  }).catch((error: unknown) => o.log.warn({ err: error }, 'run page not written'));
  return runReport({
    run: finished,
    result,
    statusBody: github.lastStatusBody(),
    model: setup.processConfig.FROGNANO_MODEL,
    outDir,
    serverUrl: env.serverUrl,
  });
}

/** The default sandbox image, built when this runner has none yet (as `frognano start` does). */
async function prepareSandboxImage(
  setup: Setup,
  env: NodeJS.ProcessEnv,
  log: Logger,
): Promise<void> {
  try {
    await ensureSandboxImage({
      docker: connectDocker(env),
      image: setup.processConfig.FROGNANO_SANDBOX_IMAGE,
      env,
      progress: (line) => log.info({ line }, 'sandbox image'),
    });
  } catch (error) {
    // The run's sandbox phase then fails with the engine's own words in the status comment.
    log.error({ err: error }, 'the sandbox image could not be made ready');
  }
}

async function publishReport(env: ActionEnv, report: ActionReport, o: RunActionOptions) {
  if (env.output) await writeOutputs(env.output, report.outputs);
  if (env.stepSummary) await appendStepSummary(env.stepSummary, report.summary);
  if (report.failure) o.stderr(`frognano: ${report.failure}`);
}
