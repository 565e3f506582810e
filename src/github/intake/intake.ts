// Intake: from a verified delivery to a queued run, then the GitHub side of it.
// - accept (inside the webhook handler, milliseconds, no GitHub call): the delivery is recorded
//   and, for a run, the run is enqueued at once, held: it has its place in the queue (positions
//   count every accepted trigger) but no worker takes it before the sender's permission is known.
//   A redelivered id or a replayed raw body is refused here.
// - decide (right after, concurrently across issues, in order per issue): the sender's
//   permission is asked through the API; the run is released or discarded, the cancel applied,
//   the refusal decided. One GET each: a cancel never waits behind other issues' comments.
// - write (one at a time, as GitHub's write throttling wants): reactions, then comments. A status
//   comment is rendered when its turn comes, from the queue as it is then: a run that started
//   meanwhile gets no "queued" comment, and a position is the current one.
// Deliveries stay pending in the queue's database until decided, so a crash in between loses
// nothing.
// Fair share: a run's queue group is its repository (owner/name), so runs are taken round robin
// across repositories and `maxQueuedPerRepo` caps what one repository may have waiting. Not the
// installation: one installation often covers a whole organization, and one team's burst must
// not make every other repository of it wait; the person labelling issues acts in one
// repository, and a repository is what the cap refusal can name.
import type { Logger } from 'pino';
import type { DeliveryLog, KeyLock, Notes, RunRecord, RunStore } from '../../queue/types.js';
import type { GitHubClient } from '../octokit.js';
import { issueKey, type IssueJob } from '../job.js';
import { notOursLine, ownPullRequest } from '../publishing/index.js';
import { KeyedLock } from '../keyed-lock.js';
import { hasWriteAccess } from './permission-check.js';
import { RestBudget } from '../rest-budget.js';
import {
  ensureStatusComment,
  renderStatus,
  STATUS_COMMENT_NOTE,
  triggerWords,
} from '../status/index.js';
import type { AcceptedTrigger, TriggerTarget } from './trigger-types.js';
import { jobFor } from './trigger-job.js';
import { visibleJob } from './visible-job.js';
import { react } from './react-to-trigger.js';

export type { AcceptedTrigger } from './trigger-types.js';

/** How long a delivery whose decision failed (GitHub unreachable) waits before it is tried again. */
const RETRY_FAILED_MS = 30_000;

export interface IntakeDeps {
  /** Records deliveries, makes and stops runs, keeps the status comment's id under its lock. */
  queue: DeliveryLog<IssueJob> & RunStore<IssueJob> & Notes & KeyLock;
  auth: (installationId: number) => Promise<GitHubClient>;
  log: Logger;
  /** A run became claimable (or a held one went away): wake the workers. */
  onEnqueued?: () => void;
  /** Shared with the workers: status comment writes per issue. */
  lock: KeyedLock;
  /** A running run should stop (the in-process fast path; workers also poll the flag). */
  onCancelRequested?: (runId: string) => void;
  /** Wait before retrying deliveries whose decision failed (default 30 s). */
  retryMs?: number;
  /** Runs one repository may have waiting (held ones included); past it, refused. Unset: no cap. */
  maxQueuedPerRepo?: number;
  /** `/frognano use K` from a permitted sender: does it, returns the reply (src/github/use-attempt.ts). */
  onUse?: (
    decision: Extract<AcceptedTrigger, { kind: 'use' }>,
    octokit: GitHubClient,
  ) => Promise<string>;
  /** `/frognano ci` from a permitted sender on our pull request: pushes, returns the reply (ci-commit.ts). */
  onCi?: (
    decision: Extract<AcceptedTrigger, { kind: 'ci' }>,
    octokit: GitHubClient,
  ) => Promise<string>;
}

/** A GitHub write waiting for its turn. */
type WriteTask =
  | { kind: 'reaction'; target: TriggerTarget; runId?: string }
  | {
      kind: 'comment';
      target: TriggerTarget;
      body: string;
      runId?: string;
      /** Post once per (issue, note): a repeated command must not make the bot chatty. */
      onceNote?: string;
    }
  | {
      kind: 'status';
      target: TriggerTarget;
      /** Called under the issue's lock right before the write; undefined: nothing to say. */
      render: () => Promise<{ body: string; runId?: string } | undefined>;
    };

/** One delivery being decided: its trigger, the client counting its calls, its held run. */
interface Deciding<D extends AcceptedTrigger = AcceptedTrigger> {
  deliveryId: string;
  decision: D;
  octokit: GitHubClient;
  held: RunRecord<IssueJob> | undefined;
}

export class Intake {
  readonly #deciding = new Map<string, Promise<void>>();
  readonly #order = new KeyedLock();
  readonly #writes: WriteTask[] = [];
  #writing: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(private readonly deps: IntakeDeps) {}

  /**
   * Inside the webhook handler, before GitHub gets its answer: record once, enqueue a run held
   * for its permission check, decide later. Stored before the answer, so never lost after it.
   */
  async accept(
    deliveryId: string,
    decision: AcceptedTrigger,
    bodySha256?: string,
  ): Promise<'accepted' | 'duplicate' | 'replay'> {
    const { queue, log } = this.deps;
    const key = issueKey(decision);
    const admitted = await queue.admit({
      deliveryId,
      event: decision.kind,
      payload: decision,
      bodySha256,
      run:
        decision.kind === 'run'
          ? { key, job: jobFor(deliveryId, decision), held: true, ...this.#share(decision) }
          : undefined,
    });
    if (admitted.status === 'duplicate') return 'duplicate';
    if (admitted.status === 'replay') {
      // Signed, so it came from GitHub once; the same bytes under a new delivery id are a replay.
      log.warn(
        { deliveryId, firstDeliveryId: admitted.firstDeliveryId, key },
        'webhook body seen before under another delivery id: ignored as a replay',
      );
      return 'replay';
    }
    const enqueued = admitted.enqueued;
    if (enqueued?.status === 'queued') {
      log.info(
        { runId: enqueued.run.id, key, position: enqueued.position },
        'run accepted, held for the permission check',
      );
    } else if (enqueued?.status === 'full') {
      // Decided (and answered) after the permission check, when the queue may have room again.
      log.info({ key, queued: enqueued.queued }, 'run not accepted: its repository queue is full');
    }
    this.#decideLater(deliveryId, decision);
    return 'accepted';
  }

  /** The run's fair-share group (its repository) and the cap on what that group may queue. */
  #share(t: TriggerTarget): { group: string; maxQueuedInGroup?: number } {
    const cap = this.deps.maxQueuedPerRepo;
    return { group: repoKey(t), ...(cap !== undefined ? { maxQueuedInGroup: cap } : {}) };
  }

  /** Decides every pending delivery not being decided already (at start, and retries). */
  async kick(): Promise<void> {
    if (this.#stopped) return;
    for (const pending of await this.deps.queue.pendingDeliveries()) {
      this.#decideLater(pending.deliveryId, pending.payload as AcceptedTrigger);
    }
    await this.#settled();
  }

  /** Stops deciding and writing; undecided deliveries stay pending in the database. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#writes.length = 0;
    await this.#settled();
  }

  /** Resolves when nothing is being decided and no write is waiting (tests, shutdown). */
  async idle(): Promise<void> {
    await this.#settled();
  }

  async #settled(): Promise<void> {
    while (this.#deciding.size > 0 || this.#writing) {
      await Promise.all([...this.#deciding.values(), this.#writing]);
    }
  }

  #decideLater(deliveryId: string, decision: AcceptedTrigger): void {
    if (this.#stopped || this.#deciding.has(deliveryId)) return;
    const key = issueKey(decision);
    const deciding = this.#order
      .run(key, () => this.#decide(deliveryId, decision))
      .then(
        () => this.deps.queue.completeDelivery(deliveryId),
        (error: unknown) => {
          // Left pending (its run held): tried again soon, and at the next start.
          if (this.#stopped) return;
          this.deps.log.error({ err: error, deliveryId, key }, 'intake failed');
          this.#retrySoon();
        },
      )
      .finally(() => this.#deciding.delete(deliveryId));
    this.#deciding.set(deliveryId, deciding);
  }

  #retrySoon(): void {
    if (this.#stopped || this.#retryTimer) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      void this.kick();
    }, this.deps.retryMs ?? RETRY_FAILED_MS);
    this.#retryTimer.unref();
  }

  /**
   * One delivery, after its acceptance: the sender's permission, then what the trigger asks for.
   * The REST calls it spent count towards the run it touched.
   */
  async #decide(deliveryId: string, decision: AcceptedTrigger): Promise<void> {
    if (this.#stopped) throw new Error('intake stopped');
    const budget = new RestBudget();
    const octokit = budget.attach(await this.deps.auth(decision.installationId));
    // The installation token mint happens inside the auth strategy, unseen by the hook; count
    // it as if it happened (it does unless a cached token is reused).
    budget.spend();
    const held = await this.deps.queue.runForDelivery(deliveryId);
    const deciding: Deciding = { deliveryId, decision, octokit, held };
    if (!(await this.#permitted(deciding))) return;
    const runId = await this.#carryOut(deciding);
    if (runId) await this.deps.queue.addRestCalls(runId, budget.spent);
  }

  /** Whether the sender may do this here; when not, the held run goes and the sender is told. */
  async #permitted({ deliveryId, decision, octokit, held }: Deciding): Promise<boolean> {
    const { log, queue } = this.deps;
    const key = issueKey(decision);
    const who = decision.sender.login;
    const allowed = await hasWriteAccess(octokit, {
      owner: decision.owner,
      repo: decision.repo,
      username: who,
    });
    if (!allowed) {
      log.info({ deliveryId, key, sender: who }, 'trigger refused: no write access');
      await this.#discardHeld(held);
      this.#write({
        kind: 'comment',
        target: decision,
        onceNote: `refused:${who.toLowerCase()}`,
        body: `Sorry @${who}, only people with write access to this repository can start or cancel frognano runs.`,
      });
      return false;
    }
    if ((decision.kind === 'run' && decision.source === 'review') || decision.kind === 'ci') {
      // A follow-up or a CI commit only on a pull request this App opened (follow-up.ts).
      const own = await ownPullRequest(octokit, queue, decision);
      if (!own.ours) {
        log.info({ deliveryId, key, kind: decision.kind }, 'refused: not our pull request');
        await this.#discardHeld(held);
        this.#write({
          kind: 'comment',
          target: decision,
          onceNote: 'refused:not-ours',
          body: notOursLine(who),
        });
        return false;
      }
    }
    return true;
  }

  /** The permitted trigger, done; the id of the run it touched, if any. */
  async #carryOut(deciding: Deciding): Promise<string | undefined> {
    const { decision } = deciding;
    switch (decision.kind) {
      case 'refuse':
        this.#answerRefusal(decision);
        return undefined;
      case 'cancel':
        return this.#cancel(decision);
      case 'use':
        await this.#use(decision, deciding.octokit);
        return undefined;
      case 'ci':
        await this.#ci(decision, deciding.octokit);
        return undefined;
      default:
        return this.#run({ ...deciding, decision });
    }
  }

  /** A trigger on a closed or locked issue or pull request: why nothing happens. */
  #answerRefusal(decision: Extract<AcceptedTrigger, { kind: 'refuse' }>): void {
    this.#write({ kind: 'reaction', target: decision });
    this.#write({
      kind: 'comment',
      target: decision,
      body: decision.pullRequest
        ? `frognano does not work on ${decision.reason} pull requests. ${decision.reason === 'closed' ? 'Reopen it' : 'Unlock it'} and try again.`
        : `frognano does not run on ${decision.reason} issues. ${decision.reason === 'closed' ? 'Reopen the issue' : 'Unlock the issue'} and try again.`,
    });
  }

  /** `/frognano cancel`: the issue's run stopped (running) or dropped (queued). */
  async #cancel(
    decision: Extract<AcceptedTrigger, { kind: 'cancel' }>,
  ): Promise<string | undefined> {
    const { log, queue } = this.deps;
    const key = issueKey(decision);
    const who = decision.sender.login;
    const cancelled = await queue.requestCancel(key);
    const runId = cancelled?.run.id;
    this.#write({ kind: 'reaction', target: decision, runId });
    if (!cancelled) {
      this.#write({
        kind: 'comment',
        target: decision,
        body: `@${who}, there is no queued or running frognano run on this ${decision.pullRequest ? 'pull request' : 'issue'} to cancel.`,
      });
    } else if (cancelled.wasRunning) {
      log.info({ runId, key }, 'cancel requested for a running run');
      this.deps.onCancelRequested?.(cancelled.run.id);
    } else {
      log.info({ runId, key }, 'queued run cancelled');
      // A held run that went away may have been all the workers were waiting for.
      this.deps.onEnqueued?.();
      this.#cancelledStatus(decision, cancelled.run.id);
    }
    return runId;
  }

  /** The status comment of a queued run that was cancelled, unless a newer run owns it. */
  #cancelledStatus(decision: Extract<AcceptedTrigger, { kind: 'cancel' }>, id: string): void {
    const { queue } = this.deps;
    const key = issueKey(decision);
    const who = decision.sender.login;
    this.#write({
      kind: 'status',
      target: decision,
      render: async () => {
        // A newer run on the issue owns the comment now.
        const active = await queue.activeFor(key);
        if (active && active.id !== id) return undefined;
        return { body: renderStatus({ kind: 'cancelled', by: who }, { runId: id }), runId: id };
      },
    });
  }

  /** `/frognano use K`: done by the publishing side, its reply posted. */
  async #use(
    decision: Extract<AcceptedTrigger, { kind: 'use' }>,
    octokit: GitHubClient,
  ): Promise<void> {
    this.#write({ kind: 'reaction', target: decision });
    const reply = this.deps.onUse
      ? await this.deps.onUse(decision, octokit)
      : '`/frognano use` is not available on this server.';
    this.#write({ kind: 'comment', target: decision, body: `@${decision.sender.login}, ${reply}` });
  }

  /** `/frognano ci`: the empty commit pushed by the publishing side (or why not), answered. */
  async #ci(
    decision: Extract<AcceptedTrigger, { kind: 'ci' }>,
    octokit: GitHubClient,
  ): Promise<void> {
    this.#write({ kind: 'reaction', target: decision });
    const reply = this.deps.onCi
      ? await this.deps.onCi(decision, octokit)
      : '`/frognano ci` is not available on this server.';
    this.#write({ kind: 'comment', target: decision, body: `@${decision.sender.login}, ${reply}` });
  }

  /** A run trigger: its text made visible, then its run released, or refused when unreadable. */
  async #run({
    deliveryId,
    decision,
    held,
  }: Deciding<Extract<AcceptedTrigger, { kind: 'run' }>>): Promise<string | undefined> {
    // Only now, for a permitted sender, and off the event loop: what the model may see.
    const job = await visibleJob(jobFor(deliveryId, decision));
    if ('unreadable' in job) {
      this.deps.log.info(
        { deliveryId, key: issueKey(decision), reason: job.unreadable },
        'run refused: unreadable issue text',
      );
      await this.#discardHeld(held);
      this.#write({ kind: 'reaction', target: decision });
      this.#write({
        kind: 'comment',
        target: decision,
        body: `@${decision.sender.login}, frognano cannot use this issue: ${job.unreadable}. Edit it and try again.`,
      });
      return undefined;
    }
    return this.#release(deliveryId, decision, held?.id, job);
  }

  /** A refused delivery's held run goes; its place may have been what the workers waited for. */
  async #discardHeld(held: RunRecord<IssueJob> | undefined): Promise<void> {
    if (held && (await this.deps.queue.discard(held.id))) this.deps.onEnqueued?.();
  }

  /** The permitted run trigger: its held run released (or enqueued now), its status scheduled. */
  async #release(
    deliveryId: string,
    decision: Extract<AcceptedTrigger, { kind: 'run' }>,
    heldId: string | undefined,
    job: IssueJob,
  ): Promise<string | undefined> {
    const { queue, log } = this.deps;
    const key = issueKey(decision);
    let runId = heldId;
    if (runId) {
      if (await queue.release(runId, job)) this.deps.onEnqueued?.();
    } else {
      // Accepted while another run was active (or recorded before runs were made at accept).
      const enqueued = await queue.enqueue({ key, job, deliveryId, ...this.#share(decision) });
      if (enqueued.status === 'duplicate') return undefined;
      if (enqueued.status === 'full') {
        this.#refuseFull(decision, enqueued.queued);
        return undefined;
      }
      if (enqueued.status === 'active') {
        this.#write({ kind: 'reaction', target: decision, runId: enqueued.run.id });
        this.#write({
          kind: 'comment',
          target: decision,
          runId: enqueued.run.id,
          body: renderStatus({
            kind: 'busy',
            state: enqueued.run.state === 'running' ? 'running' : 'queued',
          }).replace(/^<!--.*-->\n/, ''),
        });
        return enqueued.run.id;
      }
      runId = enqueued.run.id;
      this.deps.onEnqueued?.();
    }
    log.info({ runId, key, position: await queue.position(runId) }, 'run queued');
    const id = runId;
    const trigger = triggerWords(decision);
    this.#write({ kind: 'reaction', target: decision, runId: id });
    this.#write({
      kind: 'status',
      target: decision,
      render: async () => {
        const run = await queue.get(id);
        // Started, finished or cancelled meanwhile: whoever changed it writes the status.
        if (!run || run.state !== 'queued' || run.held) return undefined;
        const position = (await queue.position(id)) ?? 1;
        return {
          body: renderStatus({ kind: 'queued', position }, { runId: id, trigger }),
          runId: id,
        };
      },
    });
    return id;
  }

  /** One line in the status comment: the repository has as many runs waiting as allowed. */
  #refuseFull(decision: Extract<AcceptedTrigger, { kind: 'run' }>, queued: number): void {
    const { queue, log } = this.deps;
    const key = issueKey(decision);
    log.info(
      { key, queued, limit: this.deps.maxQueuedPerRepo },
      'run refused: repository queue full',
    );
    this.#write({ kind: 'reaction', target: decision });
    const limit = this.deps.maxQueuedPerRepo ?? queued;
    const repo = `${decision.owner}/${decision.repo}`;
    const followUp = decision.source === 'review';
    const trigger = triggerWords(decision);
    this.#write({
      kind: 'status',
      target: decision,
      render: async () => {
        // A run of this issue made meanwhile owns the comment.
        if (await queue.activeFor(key)) return undefined;
        return { body: renderStatus({ kind: 'full', repo, limit, followUp }, { trigger }) };
      },
    });
  }

  #write(task: WriteTask): void {
    if (this.#stopped) return;
    if (task.kind === 'status') {
      // One pending status write per issue: the newest supersedes what was not sent yet.
      const key = issueKey(task.target);
      const i = this.#writes.findIndex((t) => t.kind === 'status' && issueKey(t.target) === key);
      if (i >= 0) {
        this.#writes[i] = task;
        return;
      }
    }
    this.#writes.push(task);
    this.#drain();
  }

  #drain(): void {
    this.#writing ??= this.#drainWrites().finally(() => {
      this.#writing = undefined;
      // A write pushed after the loop found nothing left, and before this ran, saw a loop still
      // going and started none: it would wait for the next write (a cancel's "cancelled" for
      // ever, the comment left saying "queued").
      if (this.#writes.length > 0 && !this.#stopped) this.#drain();
    });
  }

  async #drainWrites(): Promise<void> {
    for (;;) {
      // Reactions first: they are the quick sign of life, and never go stale.
      const i = this.#writes.findIndex((t) => t.kind === 'reaction');
      const [task] = this.#writes.splice(i >= 0 ? i : 0, 1);
      if (!task || this.#stopped) return;
      try {
        await this.#send(task);
      } catch (error) {
        // A lost reaction or comment must not stop the others; the worker's status follows.
        this.deps.log.warn(
          { err: error, kind: task.kind, key: issueKey(task.target) },
          'intake write failed',
        );
      }
    }
  }

  async #send(task: WriteTask): Promise<void> {
    const { queue, lock } = this.deps;
    const t = task.target;
    const key = issueKey(t);
    const budget = new RestBudget();
    const octokit = () => this.deps.auth(t.installationId).then((o) => budget.attach(o));
    let runId: string | undefined;
    try {
      if (task.kind === 'reaction') {
        runId = task.runId;
        await react(await octokit(), t);
      } else if (task.kind === 'comment') {
        runId = task.runId;
        if (task.onceNote && (await queue.getNote(key, task.onceNote))) return;
        await (
          await octokit()
        ).rest.issues.createComment({
          owner: t.owner,
          repo: t.repo,
          issue_number: t.issueNumber,
          body: task.body,
        });
        if (task.onceNote) await queue.setNote(key, task.onceNote, String(Date.now()));
      } else {
        const client = await octokit();
        // Under the issue's lock, shared with the workers: "queued" cannot land after "running".
        // And across processes (serve and workers on other hosts) through the queue.
        await lock.run(key, () =>
          queue.exclusive(key, async () => {
            const now = await task.render();
            if (!now) return;
            runId = now.runId;
            const id = await ensureStatusComment(
              client,
              { owner: t.owner, repo: t.repo, issueNumber: t.issueNumber },
              now.body,
              await statusCommentId(queue, key),
            );
            await queue.setNote(key, STATUS_COMMENT_NOTE, String(id));
          }),
        );
      }
    } finally {
      if (runId && budget.spent > 0) await queue.addRestCalls(runId, budget.spent);
    }
  }
}

export async function statusCommentId(
  queue: Pick<Notes, 'getNote'>,
  key: string,
): Promise<number | undefined> {
  const note = await queue.getNote(key, STATUS_COMMENT_NOTE);
  return note ? Number(note) : undefined;
}

/** The fair-share group of a run: its repository, `owner/name` as GitHub compares them. */
export function repoKey(t: { owner: string; repo: string }): string {
  return `${t.owner}/${t.repo}`.toLowerCase();
}
