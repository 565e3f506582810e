// What a permitted trigger does, once Intake has decided it may: the held run released (or
// refused when the issue cannot be read, or its repository's queue is full), the cancel applied,
// the command done; and the replies each calls for, handed to IntakeReplies.
import type { RunRecord } from '../../queue/types.js';
import type { GitHubClient } from '../octokit.js';
import { issueKey, type IssueJob } from '../job.js';
import { renderStatus, triggerWords } from '../status/index.js';
import type { Deciding, IntakeDeps } from './intake-deps.js';
import type { IntakeReplies } from './intake-replies.js';
import { repoKey } from './repo-key.js';
import type { AcceptedTrigger, TriggerTarget } from './trigger-types.js';
import { jobFor } from './trigger-job.js';
import { visibleJob } from './visible-job.js';

export class IntakeActions {
  constructor(
    private readonly deps: IntakeDeps,
    private readonly replies: IntakeReplies,
  ) {}

  /** The run's fair-share group (its repository) and the cap on what that group may queue. */
  share(t: TriggerTarget): { group: string; maxQueuedInGroup?: number } {
    const cap = this.deps.maxQueuedPerRepo;
    return { group: repoKey(t), ...(cap !== undefined ? { maxQueuedInGroup: cap } : {}) };
  }

  /** The permitted trigger, done; the id of the run it touched, if any. */
  async carryOut(deciding: Deciding): Promise<string | undefined> {
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

  /** A refused delivery's held run goes; its place may have been what the workers waited for. */
  async discardHeld(held: RunRecord<IssueJob> | undefined): Promise<void> {
    if (held && (await this.deps.queue.discard(held.id))) this.deps.onEnqueued?.();
  }

  /** A trigger on a closed or locked issue or pull request: why nothing happens. */
  #answerRefusal(decision: Extract<AcceptedTrigger, { kind: 'refuse' }>): void {
    this.replies.write({ kind: 'reaction', target: decision });
    this.replies.write({
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
    this.replies.write({ kind: 'reaction', target: decision, runId });
    if (!cancelled) {
      this.replies.write({
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
    this.replies.write({
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
    this.replies.write({ kind: 'reaction', target: decision });
    const reply = this.deps.onUse
      ? await this.deps.onUse(decision, octokit)
      : '`/frognano use` is not available on this server.';
    this.#answer(decision, reply);
  }

  /** `/frognano ci`: the empty commit pushed by the publishing side (or why not), answered. */
  async #ci(
    decision: Extract<AcceptedTrigger, { kind: 'ci' }>,
    octokit: GitHubClient,
  ): Promise<void> {
    this.replies.write({ kind: 'reaction', target: decision });
    const reply = this.deps.onCi
      ? await this.deps.onCi(decision, octokit)
      : '`/frognano ci` is not available on this server.';
    this.#answer(decision, reply);
  }

  #answer(decision: AcceptedTrigger, reply: string): void {
    this.replies.write({
      kind: 'comment',
      target: decision,
      body: `@${decision.sender.login}, ${reply}`,
    });
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
      await this.discardHeld(held);
      this.replies.write({ kind: 'reaction', target: decision });
      this.replies.write({
        kind: 'comment',
        target: decision,
        body: `@${decision.sender.login}, frognano cannot use this issue: ${job.unreadable}. Edit it and try again.`,
      });
      return undefined;
    }
    return this.#release(deliveryId, decision, held?.id, job);
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
      const enqueued = await queue.enqueue({ key, job, deliveryId, ...this.share(decision) });
      if (enqueued.status === 'duplicate') return undefined;
      if (enqueued.status === 'full') {
        this.#refuseFull(decision, enqueued.queued);
        return undefined;
      }
      if (enqueued.status === 'active') {
        this.#answerBusy(decision, enqueued.run);
        return enqueued.run.id;
      }
      runId = enqueued.run.id;
      this.deps.onEnqueued?.();
    }
    log.info({ runId, key, position: await queue.position(runId) }, 'run queued');
    const id = runId;
    const trigger = triggerWords(decision);
    this.replies.write({ kind: 'reaction', target: decision, runId: id });
    this.replies.write({
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

  /** The issue has a run already: one comment says so (the status comment stays that run's). */
  #answerBusy(decision: TriggerTarget, run: RunRecord<IssueJob>): void {
    this.replies.write({ kind: 'reaction', target: decision, runId: run.id });
    this.replies.write({
      kind: 'comment',
      target: decision,
      runId: run.id,
      body: renderStatus({
        kind: 'busy',
        state: run.state === 'running' ? 'running' : 'queued',
      }).replace(/^<!--.*-->\n/, ''),
    });
  }

  /** One line in the status comment: the repository has as many runs waiting as allowed. */
  #refuseFull(decision: Extract<AcceptedTrigger, { kind: 'run' }>, queued: number): void {
    const { queue, log } = this.deps;
    const key = issueKey(decision);
    log.info(
      { key, queued, limit: this.deps.maxQueuedPerRepo },
      'run refused: repository queue full',
    );
    this.replies.write({ kind: 'reaction', target: decision });
    const limit = this.deps.maxQueuedPerRepo ?? queued;
    const repo = `${decision.owner}/${decision.repo}`;
    const followUp = decision.source === 'review';
    const trigger = triggerWords(decision);
    this.replies.write({
      kind: 'status',
      target: decision,
      render: async () => {
        // A run of this issue made meanwhile owns the comment.
        if (await queue.activeFor(key)) return undefined;
        return { body: renderStatus({ kind: 'full', repo, limit, followUp }, { trigger }) };
      },
    });
  }
}
