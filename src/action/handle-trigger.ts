// A trigger that is ours, handled as the App handles a webhook: intake records it and asks the
// sender's permission through the API, then refuses, answers or releases the run, which the
// worker runs and publishes in this process. A cancel from another workflow run, or the
// workflow run being cancelled (a signal), stops the run.
import type { Logger } from 'pino';
import { renderSummary } from '../github/publishing/index.js';
import type { AcceptedTrigger } from '../github/intake/index.js';
import { issueKey, statusCommentId } from '../github/intake/index.js';
import { runOutDir } from '../data-dir.js';
import { connectDocker } from '../sandbox/docker-engine.js';
import { ensureSandboxImage } from '../sandbox/ensure-sandbox-image.js';
import { actionGitHub, type ActionGitHub } from './action-github.js';
import {
  answeredReport,
  intakeFailedReport,
  runReport,
  type ActionReport,
} from './action-report.js';
import { openSession, type ActionSession } from './action-session.js';
import type { ActionSetup, RunActionOptions } from './action-setup.js';
import { watchCancel } from './remote-cancel.js';
import { writeActionRunPage } from './run-page.js';

export async function handleTrigger(
  setup: ActionSetup,
  decision: AcceptedTrigger,
  o: RunActionOptions,
): Promise<ActionReport> {
  const { env, config, processConfig } = setup;
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
  setup: ActionSetup,
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
  if (decision.kind === 'ci' && session.ciAnswered) return 'ci_answered';
  return 'refused';
}

async function runIt(
  setup: ActionSetup,
  session: ActionSession,
  github: ActionGitHub,
  runId: string,
  o: RunActionOptions,
): Promise<ActionReport> {
  const { config, processConfig } = setup;
  const record = (await session.local.get(runId))!;
  if (config.sandbox === 'docker') await prepareSandboxImage(setup, o.env, o.log);
  const key = issueKey(record.job);
  // Also through the queue's flag: a run being claimed right now is not abortable yet, and the
  // worker's own poll then stops it (a queued one is cancelled at once).
  const stop = () => {
    session.workers.abort(runId);
    session.local.requestCancel(key).catch(() => undefined);
  };
  o.signal?.addEventListener('abort', stop, { once: true });
  const watch = watchCancel({
    client: () => github.client(),
    issue: { owner: record.job.owner, repo: record.job.repo, issueNumber: record.job.issueNumber },
    login: () => github.login(),
    commentId: () => statusCommentId(session.local, key),
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
  const run = (await session.local.get(runId)) ?? record;
  const result = session.results.get(runId);
  const outDir = runOutDir(config.dataDir, runId);
  const model = processConfig.FROGNANO_MODEL;
  await writeActionRunPage(outDir, { run, result, model }).catch((error: unknown) =>
    o.log.warn({ err: error }, 'run page not written'),
  );
  return runReport({
    run,
    statusBody: github.lastStatusBody(),
    summaryMd: result
      ? renderSummary(result, { model, outDir, heading: `frognano run ${runId}` })
      : undefined,
    serverUrl: setup.env.serverUrl,
  });
}

/** The default sandbox image, built when this runner has none yet (as `frognano start` does). */
async function prepareSandboxImage(
  setup: ActionSetup,
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
