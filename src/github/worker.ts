// Workers: take a queued run, drive the pipeline, keep the status comment truthful, publish the
// draft PR, finish the record. All GitHub traffic of a run stays within its REST budget.
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Queue, RunRecord } from '../queue/types.js';
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
import { STATUS_COMMENT_NOTE, triggerWords } from './intake.js';
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
import { instructionFileNotes, withNotes } from './instruction-files-notes.js';
import { ownerConfigBase } from './owner-config.js';
import { RestBudget } from './rest-budget.js';
import { ModelWaits } from './model-waits.js';
import { RunningStatus } from './running-status.js';
import { readIssueTextsOffThread } from './sanitize-off-thread.js';
import { evidenceOf, writePublishedAttempt } from './revision-record.js';
import {
  describeResult,
  StatusReporter,
  type StatusReporterOptions,
  type StatusState,
  verificationLine,
} from './status-comment.js';
import { issueKey } from './triggers.js';
import { RUN_RECORD_FILE, attemptTrajectoryName, runPageUrl } from '../web/index.js';
import { DEFAULT_ARTIFACT_TTL_SECONDS } from '../queue/read-run-artifact.js';

export type RunPipelineFn = (request: RunRequest) => Promise<RunResult>;

export interface WorkerDeps {
  queue: Queue<IssueJob>;
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
  /** How long a run's trajectory is kept in a shared queue for serve to show (default 14 days). */
  artifactTtlSeconds?: number;
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
  #kicking: Promise<void> | undefined;
  #kickAgain = false;
  #polling: Promise<void> | undefined;
  #sweeping: Promise<void> | undefined;
  /** Runs this process lost to another worker: they end here without a word. */
  readonly #lost = new Set<string>();
  #reapOrphans: ((liveRunIds: string[]) => Promise<void>) | undefined;

  constructor(private readonly deps: WorkerDeps) {}

  start(): void {
    this.#stopped = false;
    let sweeps = 0;
    const poll = async () => {
      for (const [runId, { controller }] of this.#running) {
        if (controller.signal.aborted) continue;
        if (!(await this.deps.queue.stillHeld(runId))) {
          // Thought lost (this process stalled past its lock): another worker runs it now.
          this.#lost.add(runId);
          controller.abort();
        } else if (await this.deps.queue.isCancelRequested(runId)) {
          controller.abort();
        }
      }
      // A shared queue loses runs with their workers at any time, not only before a start:
      // every few polls, runs BullMQ found stalled are requeued or failed and their issues
      // told (on its own chain: telling an issue must not hold up claiming).
      if (this.deps.queue.kind === 'bullmq' && ++sweeps % 3 === 0 && this.#reapOrphans) {
        const reapOrphans = this.#reapOrphans;
        this.#sweeping ??= this.recover(reapOrphans, { reap: false })
          .then(() => undefined)
          .catch((error: unknown) => this.deps.log.warn({ err: error }, 'lost-run sweep failed'))
          .finally(() => (this.#sweeping = undefined));
      }
    };
    this.#timer = setInterval(() => {
      this.kick();
      if (this.#polling) return;
      this.#polling = poll()
        .catch((error: unknown) => this.deps.log.warn({ err: error }, 'worker poll failed'))
        .finally(() => (this.#polling = undefined));
    }, this.deps.pollMs ?? 2000);
    this.#timer.unref?.();
    this.kick();
  }

  /** Claims as many queued runs as the concurrency allows (calls coalesce). */
  kick(): void {
    if (this.#stopped) return;
    if (this.#kicking) {
      this.#kickAgain = true;
      return;
    }
    this.#kicking = this.#claimAll()
      .catch((error: unknown) => this.deps.log.error({ err: error }, 'claiming runs failed'))
      .finally(() => {
        this.#kicking = undefined;
        if (this.#kickAgain) {
          this.#kickAgain = false;
          this.kick();
        } else {
          this.#notifyIdle();
        }
      });
  }

  async #claimAll(): Promise<void> {
    do {
      this.#kickAgain = false;
      for (let run = await this.#claim(); run; run = await this.#claim()) {
        const claimed = run;
        const controller = new AbortController();
        const clock = startRunClock(this.deps.metrics);
        const done = this.#process(claimed, controller, clock)
          .catch(async (error: unknown) => {
            this.deps.log.error({ err: error, runId: claimed.id }, 'run crashed');
            clock.finish('failed', 'internal_error');
            await this.deps.queue.finish(claimed.id, 'failed', {
              outcome: 'internal_error',
              summary: String(error),
            });
          })
          .catch((error: unknown) => this.deps.log.error({ err: error }, 'finishing failed'))
          .finally(() => {
            this.#running.delete(claimed.id);
            this.#lost.delete(claimed.id);
            this.kick();
            this.#notifyIdle();
          });
        this.#running.set(claimed.id, { controller, done });
      }
    } while (this.#kickAgain && !this.#stopped);
  }

  #claim(): Promise<RunRecord<IssueJob> | undefined> {
    if (this.#stopped || this.#running.size >= this.deps.queue.concurrency) {
      return Promise.resolve(undefined);
    }
    return this.deps.queue.claim();
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
  async idle(): Promise<void> {
    while (!(await this.#isIdle())) {
      await new Promise<void>((resolve) => {
        this.#idleWaiters.push(resolve);
        setTimeout(resolve, 50).unref?.();
      });
    }
  }

  /** Stops taking runs and aborts those in flight (their records end cancelled or failed). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#kicking;
    await this.#polling;
    await this.#sweeping;
    for (const { controller } of this.#running.values()) controller.abort();
    await Promise.all([...this.#running.values()].map((r) => r.done));
  }

  /**
   * At start, before taking runs: runs left `running` by a dead process are requeued once or
   * failed, whatever they left behind is reaped, and their issues are told what happened.
   * With a shared queue it runs again now and then (runs of workers on other hosts).
   */
  async recover(
    reapOrphans: (liveRunIds: string[]) => Promise<void>,
    options: { reap?: boolean } = {},
  ): Promise<{ requeued: number; failed: number }> {
    const { deps } = this;
    this.#reapOrphans = reapOrphans;
    const { requeued, failed } = await deps.queue.recoverInterrupted();
    if (options.reap !== false) await reapOrphans(this.runningIds);
    const lostWhat =
      deps.queue.kind === 'bullmq'
        ? 'its worker was lost (a crash, a kill or a host going away)'
        : 'by a restart of the app (a crash or a deployment)';
    for (const run of [...requeued, ...failed]) {
      const budget = new RestBudget(undefined, run.restCalls);
      try {
        const octokit = budget.attach(await deps.auth(run.job.installationId));
        const state: StatusState =
          run.state === 'queued'
            ? {
                kind: 'queued',
                position: (await deps.queue.position(run.id)) ?? 1,
                requeued: true,
              }
            : run.state === 'cancelled'
              ? { kind: 'cancelled' }
              : {
                  kind: 'failed',
                  reason: `the run was interrupted ${run.attempts} times: ${lostWhat}, so it was given up. Nothing was published.`,
                };
        const reporter = await this.#statusReporter(run, octokit, budget, {
          throttleMs: 0,
          reserve: 0,
          log: deps.log,
        });
        await reporter.finish(state);
      } finally {
        await deps.queue.addRestCalls(run.id, budget.spent);
      }
    }
    if (requeued.length + failed.length > 0) {
      deps.log.warn(
        { requeued: requeued.length, failed: failed.length },
        'recovered interrupted runs',
      );
      this.kick();
    }
    return { requeued: requeued.length, failed: failed.length };
  }

  async #isIdle(): Promise<boolean> {
    if (this.#running.size > 0 || this.#kicking) return false;
    return this.#stopped || (await this.deps.queue.list('queued')).length === 0;
  }

  #notifyIdle(): void {
    const waiters = this.#idleWaiters.splice(0);
    for (const w of waiters) w();
  }

  /**
   * The issue's status comment for this run: its id shared with intake through the queue, its
   * writes under the issue's lock.
   */
  async #statusReporter(
    run: RunRecord<IssueJob>,
    octokit: GitHubClient,
    budget: RestBudget,
    options: Pick<StatusReporterOptions, 'throttleMs' | 'reserve' | 'log'>,
    onWrite?: () => Promise<void>,
  ): Promise<StatusReporter> {
    const { queue, lock } = this.deps;
    const { job } = run;
    const key = issueKey(job);
    // Shared with intake (maybe on another host) through the queue: read afresh before each write.
    const note = async () => {
      const value = await queue.getNote(key, STATUS_COMMENT_NOTE);
      return value ? Number(value) : undefined;
    };
    let commentId = await note();
    let saving: Promise<void> = Promise.resolve();
    let intakeDone: Promise<void> | undefined;
    return new StatusReporter({
      ...options,
      octokit,
      issue: { owner: job.owner, repo: job.repo, issueNumber: job.issueNumber },
      commentId: () => commentId,
      onCommentId: (id) => {
        commentId = id;
        saving = queue.setNote(key, STATUS_COMMENT_NOTE, String(id));
      },
      serialize: async (write) => {
        intakeDone ??= this.#intakeDone(run);
        await intakeDone;
        await lock.run(key, () =>
          queue.exclusive(key, async () => {
            commentId = await note();
            await onWrite?.();
            await write();
            await saving;
          }),
        );
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
   * another process (`frognano serve`) may still be posting the "queued" comment.
   */
  async #intakeDone(run: RunRecord<IssueJob>): Promise<void> {
    const { queue } = this.deps;
    const deadline = Date.now() + INTAKE_WAIT_MS;
    const pending = async () =>
      run.deliveryId !== undefined &&
      (await queue.getNote(issueKey(run.job), STATUS_COMMENT_NOTE)) === undefined &&
      (await queue.pendingDeliveries()).some((d) => d.deliveryId === run.deliveryId);
    while ((await pending()) && Date.now() < deadline) {
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
    // Calls intake made for this run (maybe still recording them): refreshed before each status write.
    let before = record.restCalls;
    const budget = new RestBudget(undefined, () => before);
    const octokit = budget.attach(await deps.auth(job.installationId));
    const status = await this.#statusReporter(
      record,
      octokit,
      budget,
      {
        throttleMs: deps.statusThrottleMs,
        reserve: () => PUBLISH_RESERVE + (deps.botIdentityKnown?.() === false ? IDENTITY_CALLS : 0),
        log,
      },
      async () => {
        before = (await deps.queue.get(record.id))?.restCalls ?? before;
      },
    );
    // A run taken up again after its first attempt was lost says so while it runs.
    const retried = record.attempts > 1 ? true : undefined;
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
    // About the run's instruction files, whatever the outcome.
    let notes: string[] = [];
    let state: 'done' | 'failed' | 'cancelled' = 'failed';
    let outcome: string;
    // The job-level deadline (**Ours**): armed when the agent starts with its time limit; a run
    // still going that long plus the grace later is aborted, and abandoned if it will not stop.
    let overdue: JobOverdue | undefined;
    let deadlineTimer: NodeJS.Timeout | undefined;
    let giveUp: (error: JobOverdue) => void = () => undefined;
    const abandoned = new Promise<never>((_, reject) => (giveUp = reject));
    abandoned.catch(() => undefined);
    const waits = new ModelWaits();
    const armDeadline = (timeoutMs: number): void => {
      if (deadlineTimer || overdue) return;
      const limitMs = timeoutMs + (deps.jobDeadlineGraceMs ?? DEFAULT_JOB_DEADLINE_GRACE_MS);
      const armedAt = performance.now();
      const fire = (): void => {
        // Waiting for a model slot moved the loops' budgets on, and so the job's deadline.
        const due = armedAt + limitMs + waits.extraMs() - performance.now();
        if (waits.waiting || (waits.extraMs() > 0 && due > 0)) {
          deadlineTimer = setTimeout(fire, Math.min(Math.max(due, 1000), MAX_TIMER_MS));
          return;
        }
        overdue = new JobOverdue(limitMs);
        log.warn({ limitMs }, 'run exceeded its time limit; stopping it');
        controller.abort(overdue);
        deadlineTimer = setTimeout(
          () => giveUp(overdue as JobOverdue),
          deps.jobAbandonMs ?? DEFAULT_JOB_ABANDON_MS,
        );
      };
      deadlineTimer = setTimeout(fire, Math.min(limitMs, MAX_TIMER_MS));
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
        status.update({ kind: 'running', phase: 'clone', retried });
        const running = new RunningStatus();
        // A follow-up on the bot's pull request starts from its head, briefed with the feedback.
        const followUp = job.review ? await prepareFollowUp(octokit, deps.queue, job) : undefined;
        if (followUp && 'refused' in followUp) throw new FollowUpRefused(followUp.refused);
        const onProgress = (event: RunProgress) => {
          if (event.kind === 'phase' && event.phase === 'agent' && event.timeoutMs !== undefined) {
            armDeadline(event.timeoutMs);
          }
          phases.progress(event);
          waits.note(event);
          status.update(running.next(event, retried));
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
          configBase: ownerConfigBase(octokit, { owner: job.owner, repo: job.repo }),
          readUntrustedTexts: readIssueTextsOffThread,
          ...followUp?.request,
          ...(job.attempts !== undefined ? { overrides: { attempts: job.attempts } } : {}),
          sandbox: deps.sandbox,
          outDir,
          signal,
          onProgress,
        });
        pipeline.catch(() => undefined);
        const result = await Promise.race([pipeline, abandoned]);
        notes = instructionFileNotes(result.instructionFiles);
        phases.end();
        countRunResult(deps.metrics, deps.sandbox, result);
        outcome = result.outcome;
        await this.#shareRunFiles(record.id, outDir, result, log);
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
        } else if (!(await deps.queue.stillHeld(record.id))) {
          // Another worker took the run up meanwhile: it publishes, not this one.
          this.#lost.add(record.id);
          final = { kind: 'interrupted' };
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
    if (this.#lost.delete(record.id)) {
      log.warn(
        { restCalls: budget.used },
        'run taken up by another worker; this attempt ends silently',
      );
      clock.finish('interrupted', 'interrupted');
      return;
    }
    if (this.#stopped && signal.aborted && state !== 'done' && !overdue) {
      // Shutdown, not a cancel: the record stays `running`, so the next start requeues it once.
      await status.finish({ kind: 'interrupted' });
      log.info({ restCalls: budget.used }, 'run interrupted by shutdown');
      clock.finish('interrupted', 'interrupted');
      await deps.queue.addRestCalls(record.id, budget.spent);
      return;
    }
    if (job.review && (final.kind === 'failed' || final.kind === 'no-change')) {
      final = { ...final, followUp: true };
    }
    await status.finish(withNotes(final, notes));
    log.info({ state, outcome, restCalls: budget.used }, 'run finished');
    clock.finish(state, outcome);
    await deps.queue.addRestCalls(record.id, budget.spent);
    await deps.queue.finish(record.id, state, { outcome, summary: final.kind });
  }

  /**
   * With a shared queue, serve (another host) shows the run from there and `/frognano use K`
   * finds its attempts: the trajectories and the run record.
   */
  async #shareRunFiles(runId: string, outDir: string, result: RunResult, log: Logger) {
    if (this.deps.queue.kind === 'sqlite') return;
    const ttl = this.deps.artifactTtlSeconds ?? DEFAULT_ARTIFACT_TTL_SECONDS;
    const names = [
      RUN_RECORD_FILE,
      ...(result.attempts ?? [{ attempt: 1 }]).map((a) => attemptTrajectoryName(a.attempt)),
    ];
    for (const name of names) {
      try {
        const body = await readFile(join(outDir, name)).catch(() => undefined);
        if (body) await this.deps.queue.putArtifact(runId, name, body, ttl);
      } catch (error) {
        // The PR still opens; only the run page and `use K` on other hosts miss this file.
        log.warn({ err: error, name }, 'run file not shared through the queue');
      }
    }
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
      const issueText = pending.issueText ?? (await deps.queue.get(pending.runId))?.job.issueText;
      if (issueText !== undefined) {
        await writePublishedAttempt(deps.queue, issueKey(pending), {
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
