// The App's own parts, put together for one workflow run: the SQLite queue in the data directory
// (RUNNER_TEMP/frognano, empty on a fresh runner), Intake (triggers, the sender's permission
// through the API, the polite line, the status comment), and a WorkerPool of one that runs the
// pipeline and publishes, exactly as `frognano start` does. Only what must outlive the workflow
// run is answered from GitHub (action-queue.ts).
import type { Logger } from 'pino';
import type { ProcessConfig } from '../config.js';
import type { AppConfig } from '../github/app-config.js';
import type { Intake } from '../github/intake/index.js';
import { type AcceptedTrigger } from '../github/intake/index.js';
import { issueKey, type IssueJob } from '../github/job.js';
import { KeyedLock } from '../github/keyed-lock.js';
import { issueNumberOfBranch } from '../github/publishing/index.js';
import { composeRunService } from '../github/run-service.js';
import type { WorkerPool } from '../runs/index.js';
import { lockDataDir } from '../queue/data-dir-lock.js';
import { openQueue } from '../queue/open-queue.js';
import { pruneRetention } from '../queue/retention.js';
import type { Queue } from '../queue/types.js';
import type { RunResult } from '../runner/run-types.js';
import { dataPaths } from '../data-dir.js';
import type { ActionEnv } from './action-env.js';
import type { ActionGitHub } from './action-github.js';
import { actionQueue } from './action-queue.js';
import { ATTEMPTS_NOT_KEPT, WORKFLOW_TOKEN_STARTS_NO_CI } from './action-replies.js';
import { recoverPublishedAttempt } from './recover-attempt.js';
import { requestRemoteCancel } from './remote-cancel.js';

export interface ActionSession {
  /** The queue as intake and the worker see it. */
  queue: Queue<IssueJob>;
  /** The data directory's own queue (what this process wrote). */
  local: Queue<IssueJob>;
  intake: Intake;
  workers: WorkerPool<IssueJob>;
  /** Each run's result, by run id, as the pipeline returned it. */
  results: Map<string, RunResult>;
  /** Whether intake asked to cancel (only after the sender's permission check), and what. */
  cancel: { asked: boolean; runId?: string };
  /** Whether intake answered `/frognano use` (only after the permission check). */
  readonly used: boolean;
  /** Whether intake answered `/frognano ci` (only after the permission and ownership checks). */
  readonly ciAnswered: boolean;
  close(): Promise<void>;
}

export interface SessionDeps {
  env: ActionEnv;
  config: AppConfig;
  processConfig: ProcessConfig;
  processEnv: NodeJS.ProcessEnv;
  github: ActionGitHub;
  decision: AcceptedTrigger;
  log: Logger;
}

export async function openSession(d: SessionDeps): Promise<ActionSession> {
  const { config, log, github } = d;
  const { local, release } = await openLocalQueue(d);
  const cancel: ActionSession['cancel'] = { asked: false };
  const queue = actionQueue(local, {
    recover: () => recoverRecord(d),
    cancelRemote: (key) => cancelRemote(d, key, cancel),
    job: jobOf(d.decision),
  });
  const results = new Map<string, RunResult>();
  const answered = { use: false, ci: false };
  const { intake, workers, fleet } = composeRunService({
    config,
    env: d.processEnv,
    log,
    queue,
    github: {
      auth: () => github.client(),
      mintInstallationToken: () => github.mintToken(),
      botIdentity: () => github.identity(),
      // The pull request's author is the token's login; commits are made under it too.
      commandBot: async () => {
        const { email } = await github.identity();
        return { name: await github.login(), email };
      },
    },
    lock: sharedLock,
    workers: {
      processConfig: d.processConfig,
      onResult: (runId, result) => results.set(runId, result),
      pollMs: 1000,
      ...(d.env.workflowRunUrl && { workflowRunUrl: d.env.workflowRunUrl }),
    },
    intake: {
      // One event per process: a failed decision is not tried again here (the workflow fails).
      retryMs: 2 ** 31 - 1,
      beforeCommand: (kind) => {
        answered[kind] = true;
        // GitHub starts no workflow for a push made with the workflow token.
        return kind === 'ci' && d.env.credential.kind === 'token'
          ? WORKFLOW_TOKEN_STARTS_NO_CI
          : undefined;
      },
      notKeptReply: ATTEMPTS_NOT_KEPT,
    },
  });
  return {
    queue,
    local,
    intake,
    workers: workers!,
    results,
    cancel,
    get used() {
      return answered.use;
    },
    get ciAnswered() {
      return answered.ci;
    },
    async close() {
      await intake.stop();
      await workers!.stop();
      await fleet!.close();
      await release();
    },
  };
}

/**
 * The data directory's lock and queue, with what an earlier workflow run may have left there
 * (a cached directory) ended or pruned; given back if any of it fails.
 */
async function openLocalQueue(
  d: SessionDeps,
): Promise<{ local: Queue<IssueJob>; release: () => Promise<void> }> {
  const { config, log } = d;
  const lock = lockDataDir(config.dataDir, ['intake', 'worker'], 'action');
  let local: Queue<IssueJob> | undefined;
  const release = async () => {
    await local?.close();
    lock.release();
  };
  try {
    // The workflow's own queue: a shared Redis queue has no place in a workflow run.
    const env = { ...d.processEnv, FROGNANO_REDIS_URL: undefined };
    local = await openQueue<IssueJob>({
      env,
      dataDir: config.dataDir,
      concurrency: 1,
      worker: true,
    });
    await endLeftovers(local, log);
    // A data directory kept with a cache would otherwise only grow.
    await pruneRetention({
      queue: local,
      trajectoriesDir: dataPaths.trajectoriesDir(config.dataDir),
      retentionDays: config.retentionDays,
      log,
    });
    return { local, release };
  } catch (error) {
    await release();
    throw error;
  }
}

/** Intake's cancel, after the sender's permission check: asked of the run on the issue. */
async function cancelRemote(
  d: SessionDeps,
  key: string,
  cancel: ActionSession['cancel'],
): Promise<string | undefined> {
  cancel.asked = true;
  const { owner, repo, issueNumber } = d.decision;
  const client = await d.github.client();
  cancel.runId = await requestRemoteCancel(
    client,
    { owner, repo, issueNumber },
    await d.github.login(),
  );
  d.log.info({ key, runId: cancel.runId }, 'cancel asked of the run in another workflow run');
  return cancel.runId;
}

/** Intake and the worker share the status comment's lock, as in the App. */
const sharedLock = new KeyedLock();

/**
 * A data directory kept between workflow runs (a cache) may hold runs a killed workflow run
 * left unfinished: they are not this event's, and must not run here.
 */
async function endLeftovers(queue: Queue<IssueJob>, log: Logger): Promise<void> {
  const left = [...(await queue.list('queued')), ...(await queue.list('running'))];
  for (const run of left) {
    await queue.finish(run.id, 'failed', {
      outcome: 'interrupted',
      summary: 'left by an earlier workflow run',
    });
  }
  for (const delivery of await queue.pendingDeliveries()) {
    await queue.completeDelivery(delivery.deliveryId);
  }
  if (left.length > 0) log.warn({ runs: left.length }, 'ended runs an earlier workflow run left');
}

/** The record of the event's pull request, when it is the bot's (recover-attempt.ts). */
async function recoverRecord(d: SessionDeps) {
  if (!d.decision.pullRequest) return undefined;
  const attempt = await recoverPublishedAttempt(await d.github.client(), {
    owner: d.decision.owner,
    repo: d.decision.repo,
    prNumber: d.decision.issueNumber,
    bot: await d.github.login(),
  });
  const issueNumber = attempt ? issueNumberOfBranch(attempt.branch) : undefined;
  if (!attempt || issueNumber === undefined) return undefined;
  const key = issueKey({ owner: d.decision.owner, repo: d.decision.repo, issueNumber });
  return { key, attempt };
}

/** The event's trigger as a job record (a cancelled remote run is shown with it). */
function jobOf(t: AcceptedTrigger): IssueJob {
  return {
    installationId: t.installationId,
    owner: t.owner,
    repo: t.repo,
    issueNumber: t.issueNumber,
    issueTitle: t.issueTitle,
    issueText: '',
    defaultBranch: t.defaultBranch,
    sender: t.sender,
    source: 'retry',
    deliveryId: '',
  };
}
