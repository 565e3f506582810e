// Intake: what happens to an accepted delivery right after GitHub got its answer. The webhook
// handler only verifies, filters and records the delivery (milliseconds); here, off the request
// path, the sender's permission is checked through the API, the trigger gets its 👀 reaction,
// and the run is enqueued, cancelled or politely refused. Deliveries wait in the queue's
// database until handled, so a crash in between loses nothing.
import type { Logger } from 'pino';
import type { RunQueue } from '../queue/queue.js';
import type { GitHubClient } from './octokit.js';
import type { IssueJob } from './job.js';
import type { KeyedLock } from './keyed-lock.js';
import { hasWriteAccess } from './permission-check.js';
import { RestBudget } from './rest-budget.js';
import { sanitizeIssueText } from './sanitize-issue-text.js';
import { ensureStatusComment, renderStatus } from './status-comment.js';
import { issueKey, type TriggerDecision, type TriggerTarget } from './triggers.js';

export type AcceptedTrigger = Exclude<TriggerDecision, { kind: 'ignore' }>;

export const STATUS_COMMENT_NOTE = 'status-comment-id';

export interface IntakeDeps {
  queue: RunQueue<IssueJob>;
  auth: (installationId: number) => Promise<GitHubClient>;
  log: Logger;
  /** A run was enqueued: wake the workers. */
  onEnqueued?: () => void;
  /** Shared with the workers: status comment writes per issue. */
  lock: KeyedLock;
  /** A running run should stop (the in-process fast path; workers also poll the flag). */
  onCancelRequested?: (runId: string) => void;
}

export class Intake {
  #draining: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(private readonly deps: IntakeDeps) {}

  /** Synchronous part, inside the webhook handler: record once, answer GitHub, work later. */
  accept(deliveryId: string, decision: AcceptedTrigger): 'accepted' | 'duplicate' {
    const fresh = this.deps.queue.recordDelivery(deliveryId, decision.kind, decision);
    if (!fresh) return 'duplicate';
    void this.kick();
    return 'accepted';
  }

  /** Handles every pending delivery; concurrent calls coalesce into one drain. */
  kick(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    if (this.#draining) {
      this.#again = true;
      return this.#draining;
    }
    this.#draining = (async () => {
      do {
        this.#again = false;
        for (const pending of this.deps.queue.pendingDeliveries()) {
          if (this.#stopped) return;
          try {
            await this.#handle(pending.deliveryId, pending.payload as AcceptedTrigger);
            this.deps.queue.completeDelivery(pending.deliveryId);
          } catch (error) {
            // Left pending: retried on the next kick or at the next start.
            this.deps.log.error({ err: error, deliveryId: pending.deliveryId }, 'intake failed');
          }
        }
      } while (this.#again);
    })().finally(() => {
      this.#draining = undefined;
    });
    return this.#draining;
  }

  /** Stops after the delivery in hand; the rest stay pending in the database for the next start. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.idle();
  }

  /** Resolves when no delivery is being handled (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  async #handle(deliveryId: string, decision: AcceptedTrigger): Promise<void> {
    const { log, queue } = this.deps;
    const budget = new RestBudget();
    const octokit = budget.attach(await this.deps.auth(decision.installationId));
    // The installation token mint happens inside the auth strategy, unseen by the hook; count
    // it as if it happened (it does unless a cached token is reused).
    budget.spend();
    const ref = { owner: decision.owner, repo: decision.repo };
    const key = issueKey(decision);
    const who = decision.sender.login;

    const allowed = await hasWriteAccess(octokit, { ...ref, username: who });
    if (!allowed) {
      log.info({ deliveryId, key, sender: who }, 'trigger refused: no write access');
      // One reply per person and issue: repeating the command must not make the bot chatty.
      const note = `refused:${who.toLowerCase()}`;
      if (queue.getNote(key, note)) return;
      await octokit.rest.issues.createComment({
        ...ref,
        issue_number: decision.issueNumber,
        body: `Sorry @${who}, only people with write access to this repository can start or cancel frognano runs.`,
      });
      queue.setNote(key, note, String(Date.now()));
      return;
    }
    await react(octokit, decision);

    if (decision.kind === 'refuse') {
      await octokit.rest.issues.createComment({
        ...ref,
        issue_number: decision.issueNumber,
        body: `frognano does not run on ${decision.reason} issues. ${decision.reason === 'closed' ? 'Reopen the issue' : 'Unlock the issue'} and try again.`,
      });
      return;
    }

    const setStatus = async (body: string) => {
      const id = await ensureStatusComment(
        octokit,
        { ...ref, issueNumber: decision.issueNumber },
        body,
        statusCommentId(queue, key),
      );
      queue.setNote(key, STATUS_COMMENT_NOTE, String(id));
    };

    if (decision.kind === 'cancel') {
      const cancelled = queue.requestCancel(key);
      if (!cancelled) {
        await octokit.rest.issues.createComment({
          ...ref,
          issue_number: decision.issueNumber,
          body: `@${who}, there is no queued or running frognano run on this issue to cancel.`,
        });
      } else if (cancelled.wasRunning) {
        log.info({ runId: cancelled.run.id, key }, 'cancel requested for a running run');
        this.deps.onCancelRequested?.(cancelled.run.id);
      } else {
        await setStatus(renderStatus({ kind: 'cancelled', by: who }, { runId: cancelled.run.id }));
      }
      if (cancelled) queue.addRestCalls(cancelled.run.id, budget.spent);
      return;
    }

    const job: IssueJob = {
      installationId: decision.installationId,
      owner: decision.owner,
      repo: decision.repo,
      issueNumber: decision.issueNumber,
      issueTitle: decision.issueTitle,
      issueText: sanitizeIssueText(`${decision.issueTitle}\n\n${decision.issueBody}`),
      defaultBranch: decision.defaultBranch,
      sender: decision.sender,
      source: decision.source,
      guidance: decision.guidance ? sanitizeIssueText(decision.guidance) || undefined : undefined,
      deliveryId,
    };
    // Under the issue's lock, so a worker claiming the run at once cannot post "running"
    // before this "queued" lands.
    await this.deps.lock.run(key, async () => {
      await this.#enqueue(octokit, budget, key, job, decision, setStatus);
    });
  }

  async #enqueue(
    octokit: GitHubClient,
    budget: RestBudget,
    key: string,
    job: IssueJob,
    decision: AcceptedTrigger,
    setStatus: (body: string) => Promise<void>,
  ): Promise<void> {
    const { log, queue } = this.deps;
    const ref = { owner: decision.owner, repo: decision.repo };
    const enqueued = queue.enqueue({ key, job, deliveryId: job.deliveryId });
    if (enqueued.status === 'duplicate') return;
    if (enqueued.status === 'active') {
      await octokit.rest.issues.createComment({
        ...ref,
        issue_number: decision.issueNumber,
        body: renderStatus({
          kind: 'busy',
          state: enqueued.run.state === 'running' ? 'running' : 'queued',
        }).replace(/^<!--.*-->\n/, ''),
      });
      queue.addRestCalls(enqueued.run.id, budget.spent);
      return;
    }
    log.info({ runId: enqueued.run.id, key, position: enqueued.position }, 'run queued');
    this.deps.onEnqueued?.();
    await setStatus(
      renderStatus(
        { kind: 'queued', position: enqueued.position },
        { runId: enqueued.run.id, trigger: triggerWords(decision) },
      ),
    );
    queue.addRestCalls(enqueued.run.id, budget.spent);
  }
}

export function statusCommentId(queue: RunQueue<IssueJob>, key: string): number | undefined {
  const note = queue.getNote(key, STATUS_COMMENT_NOTE);
  return note ? Number(note) : undefined;
}

export function triggerWords(t: AcceptedTrigger | IssueJob): string {
  const source = 'source' in t ? t.source : undefined;
  return source === 'retry' ? `retried by @${t.sender.login}` : `requested by @${t.sender.login}`;
}

async function react(octokit: GitHubClient, t: TriggerTarget): Promise<void> {
  if (t.commentId !== undefined) {
    await octokit.rest.reactions.createForIssueComment({
      owner: t.owner,
      repo: t.repo,
      comment_id: t.commentId,
      content: 'eyes',
    });
  } else {
    await octokit.rest.reactions.createForIssue({
      owner: t.owner,
      repo: t.repo,
      issue_number: t.issueNumber,
      content: 'eyes',
    });
  }
}
