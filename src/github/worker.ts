// Workers: take a queued run, drive the pipeline, keep the status comment truthful, publish the
// draft PR, finish the record. All GitHub traffic of a run stays within its REST budget.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { RunQueue, RunRecord } from '../queue/queue.js';
import {
  countRunResult,
  type Metrics,
  type RunClock,
  startPhaseClock,
  startRunClock,
} from '../metrics/index.js';
import type { RunProgress, RunRequest, RunResult, SandboxKind } from '../runner/run-types.js';
import { redactSecrets, registerSecret } from '../redact.js';
import { FollowUpRefused, prepareFollowUp, publishFollowUp } from './follow-up.js';
import { STATUS_COMMENT_NOTE, statusCommentId, triggerWords } from './intake.js';
import type { IssueJob } from './job.js';
import type { KeyedLock } from './keyed-lock.js';
import type { GitHubClient } from './octokit.js';
import { renderPrBody } from './pr-body.js';
import {
  type BotIdentity,
  type GitRunner,
  mayPublishLater,
  noreplyDomainFor,
  publishPatch,
} from './publish.js';
import {
  findPendingPublishForIssue,
  loadPendingPublish,
  type PendingPublish,
  removePendingPublish,
  removePendingPublishes,
  savePendingPublish,
} from './pending-publish.js';
import { RestBudget } from './rest-budget.js';
import { evidenceOf, writePublishedAttempt } from './revision-record.js';
import {
  describeResult,
  StatusReporter,
  type StatusReporterOptions,
  type StatusState,
  verificationLine,
} from './status-comment.js';
import { issueKey } from './triggers.js';
import { runPageUrl } from '../web/index.js';

export type RunPipelineFn = (request: RunRequest) => Promise<RunResult>;

export interface WorkerDeps {
  queue: RunQueue<IssueJob>;
  auth: (installationId: number) => Promise<GitHubClient>;
  /**
   * A fresh installation token (one REST call). Through the App's client, so it honours the
   * API base URL: `octokit.auth({ refresh: true })` would ask api.github.com even on GHES.
   */
  mintInstallationToken: (installationId: number) => Promise<string>;
  runPipeline: RunPipelineFn;
  /**
   * The commit identity, asked of GitHub through this installation's client (cached per
   * process). `countAppCall` is called for a request made with the App's own client, which
   * the run's request hook does not see.
   */
  botIdentity: (installation: GitHubClient, countAppCall: () => void) => Promise<BotIdentity>;
  /** True once `botIdentity` answers without asking GitHub (its calls need no reserve then). */
  botIdentityKnown?: () => boolean;
  lock: KeyedLock;
  log: Logger;
  /** `${gitBaseUrl}/${owner}/${repo}.git` is cloned and pushed. */
  gitBaseUrl: string;
  /** Trajectories and publish clones live under here. */
  dataDir: string;
  sandbox: SandboxKind;
  statusThrottleMs: number;
  /** Base URL under which the run page `/frognano/runs/<id>/trajectory` is served publicly. */
  publicUrl?: string;
  /** How often workers look for queued runs and cancel flags (other processes may write them). */
  pollMs?: number;
  git?: GitRunner;
  /**
   * How long a run may take past its agent time limit (`timeout_minutes`: patch capture,
   * the tests after the change, the policy) before the worker stops it. Default 15 minutes.
   */
  jobDeadlineGraceMs?: number;
  /** After stopping an overdue run, how long to wait for it to wind down. Default 60 s. */
  jobAbandonMs?: number;
  metrics?: Metrics;
}

/** REST calls kept back for the push (token), PR lookup/create, review request and final status. */
const PUBLISH_RESERVE = 6;
export const DEFAULT_JOB_DEADLINE_GRACE_MS = 15 * 60_000;
const DEFAULT_JOB_ABANDON_MS = 60_000;
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The run went past its time limit plus the grace; the worker stopped it. */
class JobOverdue extends Error {
  constructor(readonly limitMs: number) {
    super('the run exceeded its time limit');
    this.name = 'JobOverdue';
  }
}
/** How long a worker's first status write waits for intake to post the "queued" comment. */
const INTAKE_WAIT_MS = 10_000;
/** Asking GitHub for the App's commit identity (GET /app, GET /users/<slug>[bot]), once per process. */
const IDENTITY_CALLS = 2;

/** Where a run's trajectory is kept (outside the pipeline's work directories, which are reaped). */
export function runOutDir(dataDir: string, runId: string): string {
  return join(dataDir, 'trajectories', runId);
}

export class WorkerPool {
  readonly #running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  #timer: NodeJS.Timeout | undefined;
  #stopped = true;
  #idleWaiters: (() => void)[] = [];

  constructor(private readonly deps: WorkerDeps) {}

  start(): void {
    this.#stopped = false;
    const poll = () => {
      this.kick();
      for (const [runId, { controller }] of this.#running) {
        if (!controller.signal.aborted && this.deps.queue.isCancelRequested(runId))
          controller.abort();
      }
    };
    this.#timer = setInterval(poll, this.deps.pollMs ?? 2000);
    this.#timer.unref?.();
    this.kick();
  }

  /** Claims as many queued runs as the global concurrency allows. */
  kick(): void {
    if (this.#stopped) return;
    for (let run = this.deps.queue.claim(); run; run = this.deps.queue.claim()) {
      const claimed = run;
      const controller = new AbortController();
      const clock = startRunClock(this.deps.metrics);
      const done = this.#process(claimed, controller, clock)
        .catch((error: unknown) => {
          this.deps.log.error({ err: error, runId: claimed.id }, 'run crashed');
          clock.finish('failed', 'internal_error');
          this.deps.queue.finish(claimed.id, 'failed', {
            outcome: 'internal_error',
            summary: String(error),
          });
        })
        .finally(() => {
          this.#running.delete(claimed.id);
          this.kick();
          this.#notifyIdle();
        });
      this.#running.set(claimed.id, { controller, done });
      if (this.#stopped) break;
    }
    this.#notifyIdle();
  }

  /** Aborts a run of this process; false when it does not run here. */
  abort(runId: string): boolean {
    const entry = this.#running.get(runId);
    if (!entry) return false;
    entry.controller.abort();
    return true;
  }

  get runningIds(): string[] {
    return [...this.#running.keys()];
  }

  /** Resolves when this process runs nothing and nothing it could take is queued. */
  idle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Stops taking runs and aborts those in flight (their records end cancelled or failed). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    for (const { controller } of this.#running.values()) controller.abort();
    await Promise.all([...this.#running.values()].map((r) => r.done));
  }

  /**
   * At start, before taking runs: runs left `running` by a dead process are requeued once or
   * failed, whatever they left behind is reaped, and their issues are told what happened.
   */
  async recover(
    reapOrphans: (liveRunIds: string[]) => Promise<void>,
  ): Promise<{ requeued: number; failed: number }> {
    const { deps } = this;
    const { requeued, failed } = deps.queue.recoverInterrupted();
    await reapOrphans(this.runningIds);
    for (const run of [...requeued, ...failed]) {
      const budget = new RestBudget(undefined, run.restCalls);
      try {
        const octokit = budget.attach(await deps.auth(run.job.installationId));
        const state: StatusState =
          run.state === 'queued'
            ? { kind: 'queued', position: deps.queue.position(run.id) ?? 1, requeued: true }
            : run.state === 'cancelled'
              ? { kind: 'cancelled' }
              : {
                  kind: 'failed',
                  reason: `the run was interrupted ${run.attempts} times by a restart of the app (a crash or a deployment), so it was given up. Nothing was published.`,
                };
        const reporter = this.#statusReporter(run, octokit, budget, {
          throttleMs: 0,
          reserve: 0,
          log: deps.log,
        });
        await reporter.finish(state);
      } finally {
        deps.queue.addRestCalls(run.id, budget.spent);
      }
    }
    if (requeued.length + failed.length > 0) {
      deps.log.warn(
        { requeued: requeued.length, failed: failed.length },
        'recovered interrupted runs',
      );
    }
    return { requeued: requeued.length, failed: failed.length };
  }

  #isIdle(): boolean {
    return (
      this.#running.size === 0 && (this.#stopped || this.deps.queue.list('queued').length === 0)
    );
  }

  #notifyIdle(): void {
    if (!this.#isIdle()) return;
    const waiters = this.#idleWaiters.splice(0);
    for (const w of waiters) w();
  }

  /**
   * The issue's status comment for this run: its id shared with intake through the queue, its
   * writes under the issue's lock.
   */
  #statusReporter(
    run: RunRecord<IssueJob>,
    octokit: GitHubClient,
    budget: RestBudget,
    options: Pick<StatusReporterOptions, 'throttleMs' | 'reserve' | 'log'>,
  ): StatusReporter {
    const { queue, lock } = this.deps;
    const { job } = run;
    const key = issueKey(job);
    let intakeDone: Promise<void> | undefined;
    return new StatusReporter({
      ...options,
      octokit,
      issue: { owner: job.owner, repo: job.repo, issueNumber: job.issueNumber },
      commentId: () => statusCommentId(queue, key),
      onCommentId: (id) => queue.setNote(key, STATUS_COMMENT_NOTE, String(id)),
      serialize: async (write) => {
        intakeDone ??= this.#intakeDone(run);
        await intakeDone;
        await lock.run(key, write);
      },
      budget,
      meta: {
        runId: run.id,
        trigger: triggerWords(job),
        runPageUrl: this.deps.publicUrl ? runPageUrl(this.deps.publicUrl, run.id) : undefined,
      },
    });
  }

  /**
   * Waits (bounded) until intake has handled the delivery that made this run: intake in
   * another process (`frognano serve`) may still be posting the "queued" comment, and a
   * worker that wrote first would find no comment and post a second one. In one process the
   * issue's lock already orders them.
   */
  async #intakeDone(run: RunRecord<IssueJob>): Promise<void> {
    const { queue } = this.deps;
    const deadline = Date.now() + INTAKE_WAIT_MS;
    const pending = () =>
      run.deliveryId !== undefined &&
      statusCommentId(queue, issueKey(run.job)) === undefined &&
      queue.pendingDeliveries().some((d) => d.deliveryId === run.deliveryId);
    while (pending() && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async #process(
    record: RunRecord<IssueJob>,
    controller: AbortController,
    clock: RunClock,
  ): Promise<void> {
    const { deps } = this;
    const { signal } = controller;
    const job = record.job;
    const log = deps.log.child({
      runId: record.id,
      issue: `${job.owner}/${job.repo}#${job.issueNumber}`,
    });
    const budget = new RestBudget(undefined, () => deps.queue.get(record.id)?.restCalls ?? 0);
    const octokit = budget.attach(await deps.auth(job.installationId));
    const status = this.#statusReporter(record, octokit, budget, {
      throttleMs: deps.statusThrottleMs,
      reserve: () => PUBLISH_RESERVE + (deps.botIdentityKnown?.() === false ? IDENTITY_CALLS : 0),
      log,
    });
    const mintToken = async (): Promise<string> => {
      // Made with the App's own client, outside this run's request hook: counted by hand.
      budget.spend();
      const token = await deps.mintInstallationToken(job.installationId);
      registerSecret(token);
      return token;
    };
    const botIdentity = () => deps.botIdentity(octokit, () => budget.spend());
    const gitUrl = `${deps.gitBaseUrl}/${job.owner}/${job.repo}.git`;
    const outDir = runOutDir(deps.dataDir, record.id);
    await mkdir(outDir, { recursive: true });

    let final: StatusState;
    let state: 'done' | 'failed' | 'cancelled' = 'failed';
    let outcome: string;
    // The job-level deadline (**Ours**): armed when the agent starts with its time limit; a run
    // still going that long plus the grace later is aborted, and abandoned if it will not stop.
    let overdue: JobOverdue | undefined;
    let deadlineTimer: NodeJS.Timeout | undefined;
    let giveUp: (error: JobOverdue) => void = () => undefined;
    const abandoned = new Promise<never>((_, reject) => (giveUp = reject));
    abandoned.catch(() => undefined);
    const armDeadline = (timeoutMs: number): void => {
      if (deadlineTimer || overdue) return;
      const limitMs = timeoutMs + (deps.jobDeadlineGraceMs ?? DEFAULT_JOB_DEADLINE_GRACE_MS);
      deadlineTimer = setTimeout(
        () => {
          overdue = new JobOverdue(limitMs);
          log.warn({ limitMs }, 'run exceeded its time limit; stopping it');
          controller.abort(overdue);
          deadlineTimer = setTimeout(
            () => giveUp(overdue as JobOverdue),
            deps.jobAbandonMs ?? DEFAULT_JOB_ABANDON_MS,
          );
        },
        Math.min(limitMs, MAX_TIMER_MS),
      );
    };
    const phases = startPhaseClock(deps.metrics);
    try {
      // A follow-up always runs the model: its brief is the pull request as it is now.
      const resumed = job.review ? undefined : await this.#resumablePublish(record);
      if (resumed) {
        // The change exists (this run's before a restart, or the last run's before a plain
        // retry): only publishing is left, so the model is not asked again.
        log.info(
          { from: resumed.runId, pushed: resumed.pushedCommit !== undefined },
          'resuming an unfinished publish',
        );
        final = await this.#finishPublish(resumed, octokit, botIdentity, mintToken, gitUrl, log);
        state = final.kind === 'done' ? 'done' : 'failed';
        outcome = final.kind === 'done' ? 'pull_request' : 'publish_failed';
      } else {
        status.update({ kind: 'running', phase: 'clone' });
        // A follow-up on the bot's pull request starts from its head, briefed with the feedback.
        const followUp = job.review ? await prepareFollowUp(octokit, deps.queue, job) : undefined;
        if (followUp && 'refused' in followUp) throw new FollowUpRefused(followUp.refused);
        let maxSteps: number | undefined;
        const attemptSteps: Record<number, number> = {};
        const onProgress = (event: RunProgress) => {
          if (event.kind === 'phase' && event.phase === 'agent' && event.timeoutMs !== undefined) {
            armDeadline(event.timeoutMs);
          }
          phases.progress(event);
          if (event.kind === 'phase') {
            status.update({
              kind: 'running',
              phase: event.phase,
              step: event.phase === 'agent' ? 0 : undefined,
              maxSteps,
            });
          } else {
            maxSteps = event.maxSteps;
            if (event.attempt !== undefined) attemptSteps[event.attempt] = event.step;
            status.update({
              kind: 'running',
              phase: 'agent',
              step: event.step,
              maxSteps: event.maxSteps,
              ...(event.attempt !== undefined ? { attempts: { ...attemptSteps } } : {}),
            });
          }
        };
        const pipeline = deps.runPipeline({
          runId: record.id,
          instanceId: `${job.owner}/${job.repo}#${job.issueNumber}`,
          repo: gitUrl,
          getCredential: /^https?:/i.test(gitUrl)
            ? async () => ({ username: 'x-access-token', password: await mintToken() })
            : undefined,
          issueText: job.issueText,
          extraGuidance: job.guidance,
          ...followUp?.request,
          ...(job.attempts !== undefined ? { overrides: { attempts: job.attempts } } : {}),
          sandbox: deps.sandbox,
          outDir,
          signal,
          onProgress,
        });
        pipeline.catch(() => undefined);
        const result = await Promise.race([pipeline, abandoned]);
        phases.end();
        countRunResult(deps.metrics, deps.sandbox, result);
        outcome = result.outcome;
        const refusal =
          signal.aborted && result.outcome !== 'completed'
            ? { kind: 'cancelled' as const }
            : describeResult(result);
        if (overdue) {
          final = overdueStatus(overdue);
          outcome = 'timed_out';
        } else if (refusal) {
          final = refusal;
          state = refusal.kind === 'cancelled' ? 'cancelled' : 'failed';
          if (refusal.kind === 'no-change' && result.exitReason === 'llm_query_error') {
            // The endpoint failed mid-run: a failure to retry, not the model choosing no change.
            final = { kind: 'failed', reason: refusal.reason };
            if (result.error) final.detail = result.error;
            outcome = 'llm_query_error';
          } else if (refusal.kind === 'no-change') {
            state = 'done';
            outcome = 'no_change';
          }
        } else if (signal.aborted) {
          final = { kind: 'cancelled' };
          state = 'cancelled';
          outcome = 'cancelled';
        } else if (followUp) {
          final = await publishFollowUp({
            brief: followUp,
            job,
            result,
            octokit,
            queue: deps.queue,
            mintToken,
            gitUrl,
            workRoot: join(deps.dataDir, 'publish'),
            bot: await botIdentity(),
            noreplyDomain: noreplyDomainFor(deps.gitBaseUrl),
            trajectoryUrl:
              deps.publicUrl && result.trajectoryPath
                ? runPageUrl(deps.publicUrl, record.id)
                : undefined,
            canSpend: () => budget.remaining() > 1,
            log,
            git: deps.git,
          }).catch((error: unknown) => {
            log.warn({ err: error }, 'publishing the revision failed');
            return publishFailure(error);
          });
          state = final.kind === 'revised' ? 'done' : 'failed';
          outcome = final.kind === 'revised' ? 'revision' : 'publish_failed';
        } else {
          final = await this.#publish(
            job,
            record.id,
            result,
            octokit,
            botIdentity,
            mintToken,
            gitUrl,
            log,
          );
          state = final.kind === 'done' ? 'done' : 'failed';
          outcome = final.kind === 'done' ? 'pull_request' : 'publish_failed';
        }
      }
    } catch (error) {
      if (error instanceof FollowUpRefused) {
        final = { kind: 'failed', reason: `no follow-up run: ${error.message}` };
        outcome = 'follow_up_refused';
      } else if (overdue) {
        if (error === overdue) log.error({ limitMs: overdue.limitMs }, 'overdue run did not stop');
        final = overdueStatus(overdue);
        outcome = 'timed_out';
      } else {
        log.error({ err: error }, 'run failed unexpectedly');
        final = {
          kind: 'failed',
          reason: `an internal error stopped the run: ${redactSecrets(error instanceof Error ? error.message : String(error))}`,
        };
        outcome = 'internal_error';
      }
    } finally {
      clearTimeout(deadlineTimer);
      phases.end();
    }
    if (this.#stopped && signal.aborted && state !== 'done' && !overdue) {
      // Shutdown, not a cancel: the record stays `running`, so the next start requeues it once.
      await status.finish({ kind: 'interrupted' });
      log.info({ restCalls: budget.used }, 'run interrupted by shutdown');
      clock.finish('interrupted', 'interrupted');
      deps.queue.addRestCalls(record.id, budget.spent);
      return;
    }
    if (job.review && (final.kind === 'failed' || final.kind === 'no-change')) {
      final = { ...final, followUp: true };
    }
    await status.finish(final);
    log.info({ state, outcome, restCalls: budget.used }, 'run finished');
    clock.finish(state, outcome);
    deps.queue.addRestCalls(record.id, budget.spent);
    deps.queue.finish(record.id, state, { outcome, summary: final.kind });
  }

  async #publish(
    job: IssueJob,
    runId: string,
    result: RunResult,
    octokit: GitHubClient,
    botIdentity: () => Promise<BotIdentity>,
    mintToken: () => Promise<string>,
    gitUrl: string,
    log: Logger,
  ): Promise<StatusState> {
    const { deps } = this;
    if (!result.baseCommit) {
      return {
        kind: 'failed',
        reason:
          'the run did not report the commit it started from, so the change cannot be applied.',
      };
    }
    const trajectoryUrl =
      deps.publicUrl && result.trajectoryPath ? runPageUrl(deps.publicUrl, runId) : undefined;
    const pending: PendingPublish = {
      version: 1,
      runId,
      installationId: job.installationId,
      owner: job.owner,
      repo: job.repo,
      issueNumber: job.issueNumber,
      issueTitle: job.issueTitle,
      baseBranch: job.defaultBranch ?? 'main',
      baseCommit: result.baseCommit,
      patch: result.patch,
      body: renderPrBody({
        result,
        issueNumber: job.issueNumber,
        triggeredBy: job.sender.login,
        trajectoryUrl,
      }),
      coAuthor: job.sender,
      partial: result.partial,
      verified: verificationLine(result),
      issueText: job.issueText,
      evidence: evidenceOf(result),
      savedAt: new Date().toISOString(),
    };
    try {
      await savePendingPublish(deps.dataDir, pending);
    } catch (error) {
      // Publishing can go ahead; it just could not be resumed if it failed.
      log.warn({ err: error }, 'could not keep the change for a resumed publish');
    }
    return this.#finishPublish(pending, octokit, botIdentity, mintToken, gitUrl, log);
  }

  /** This run's unfinished publish (after a restart), or for a plain retry the issue's newest. */
  async #resumablePublish(record: RunRecord<IssueJob>): Promise<PendingPublish | undefined> {
    const { dataDir } = this.deps;
    const own = await loadPendingPublish(dataDir, record.id);
    if (own) return own;
    const { job } = record;
    // A retry with guidance asks for a different change: the model runs again.
    if (job.source !== 'retry' || job.guidance) return undefined;
    return findPendingPublishForIssue(dataDir, job);
  }

  async #finishPublish(
    pending: PendingPublish,
    octokit: GitHubClient,
    botIdentity: () => Promise<BotIdentity>,
    mintToken: () => Promise<string>,
    gitUrl: string,
    log: Logger,
  ): Promise<StatusState> {
    const { deps } = this;
    try {
      const published = await publishPatch({
        octokit,
        owner: pending.owner,
        repo: pending.repo,
        issueNumber: pending.issueNumber,
        issueTitle: pending.issueTitle,
        baseBranch: pending.baseBranch,
        baseCommit: pending.baseCommit,
        patch: pending.patch,
        gitUrl,
        mintToken,
        workRoot: join(deps.dataDir, 'publish'),
        bot: await botIdentity(),
        coAuthor: pending.coAuthor,
        noreplyDomain: noreplyDomainFor(deps.gitBaseUrl),
        body: pending.body,
        log,
        git: deps.git,
        pushedCommit: pending.pushedCommit,
        onPushed: (commit) =>
          savePendingPublish(deps.dataDir, {
            ...pending,
            pushedCommit: commit,
            savedAt: new Date().toISOString(),
          }).catch((error: unknown) =>
            log.warn({ err: error }, 'could not record the pushed commit'),
          ),
      });
      // What a follow-up on this pull request is briefed with (revision-record.ts).
      const issueText = pending.issueText ?? deps.queue.get(pending.runId)?.job.issueText;
      if (issueText !== undefined) {
        writePublishedAttempt(deps.queue, issueKey(pending), {
          prNumber: published.prNumber,
          branch: published.branch,
          baseBranch: pending.baseBranch,
          baseCommit: pending.baseCommit,
          head: published.commit,
          issueTitle: pending.issueTitle,
          issueText,
          revision: 1,
          evidence: pending.evidence,
        });
      }
      await removePendingPublishes(deps.dataDir, pending).catch((error: unknown) =>
        log.warn({ err: error }, 'could not forget the finished publish'),
      );
      return {
        kind: 'done',
        prNumber: published.prNumber,
        prUrl: published.prUrl,
        partial: pending.partial,
        verified: pending.verified,
      };
    } catch (error) {
      log.warn({ err: error }, 'publishing failed');
      if (!mayPublishLater(error)) {
        // Kept, it would make every plain retry fail the same way instead of running the model.
        await removePendingPublish(deps.dataDir, pending.runId).catch(() => undefined);
        return publishFailure(error);
      }
      return publishFailure(error, await loadPendingPublish(deps.dataDir, pending.runId));
    }
  }
}

function overdueStatus(overdue: JobOverdue): StatusState {
  const minutes = Math.round((overdue.limitMs / 60_000) * 10) / 10;
  return {
    kind: 'failed',
    reason: `the run took longer than its time limit (timeout_minutes plus a grace for the tests, ${minutes} minutes in all) and was stopped. Nothing was published.`,
  };
}

/**
 * The status for a failed publish. The error carries git's output, which names files from the
 * patch (written by the model): shown in a code block, so it cannot ping or link anyone.
 */
export function publishFailure(error: unknown, kept?: PendingPublish): StatusState {
  const resume = kept
    ? ' The change is kept: comment `/frognano retry` with nothing after it to publish it without running the model again.'
    : '';
  return {
    kind: 'failed',
    reason: `the change was made, but pushing the branch or opening the draft pull request failed.${resume} The error:`,
    detail: redactSecrets(error instanceof Error ? error.message : String(error)),
  };
}
