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
// The decision steps are here (when and in what order each delivery is decided, the sender's
// permission); what a permitted trigger does is intake-actions.ts, the replies intake-replies.ts.
// Deliveries stay pending in the queue's database until decided, so a crash in between loses
// nothing.
// Fair share: a run's queue group is its repository (owner/name), so runs are taken round robin
// across repositories and `maxQueuedPerRepo` caps what one repository may have waiting. Not the
// installation: one installation often covers a whole organization, and one team's burst must
// not make every other repository of it wait; the person labelling issues acts in one
// repository, and a repository is what the cap refusal can name.
import { issueKey } from '../job.js';
import { notOursLine, ownPullRequest } from '../publishing/index.js';
import { KeyedLock } from '../keyed-lock.js';
import { hasWriteAccess } from './permission-check.js';
import { RestBudget } from '../rest-budget.js';
import { IntakeActions } from './intake-actions.js';
import type { Deciding, IntakeDeps } from './intake-deps.js';
import { IntakeReplies } from './intake-replies.js';
import type { AcceptedTrigger } from './trigger-types.js';
import { jobFor } from './trigger-job.js';

export type { AcceptedTrigger } from './trigger-types.js';
export type { IntakeDeps } from './intake-deps.js';
export { repoKey } from './repo-key.js';
export { statusCommentId } from './status-comment-id.js';

/** How long a delivery whose decision failed (GitHub unreachable) waits before it is tried again. */
const RETRY_FAILED_MS = 30_000;

export class Intake {
  readonly #deciding = new Map<string, Promise<void>>();
  readonly #order = new KeyedLock();
  readonly #replies: IntakeReplies;
  readonly #actions: IntakeActions;
  #retryTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(private readonly deps: IntakeDeps) {
    this.#replies = new IntakeReplies(deps);
    this.#actions = new IntakeActions(deps, this.#replies);
  }

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
          ? { key, job: jobFor(deliveryId, decision), held: true, ...this.#actions.share(decision) }
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
    this.#replies.stop();
    await this.#settled();
  }

  /** Resolves when nothing is being decided and no write is waiting (tests, shutdown). */
  async idle(): Promise<void> {
    await this.#settled();
  }

  async #settled(): Promise<void> {
    while (this.#deciding.size > 0 || this.#replies.writing) {
      await Promise.all([...this.#deciding.values(), this.#replies.writing]);
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
    const runId = await this.#actions.carryOut(deciding);
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
      await this.#actions.discardHeld(held);
      this.#replies.write({
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
        await this.#actions.discardHeld(held);
        this.#replies.write({
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
}
