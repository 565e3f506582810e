// Intake's replies, one at a time as GitHub's write throttling wants: reactions first (the quick
// sign of life, never stale), then comments. A status comment is rendered when its turn comes,
// from the queue as it is then: a run that started meanwhile gets no "queued" comment, and a
// position is the current one.
import { issueKey } from '../job.js';
import { RestBudget } from '../rest-budget.js';
import { ensureStatusComment, STATUS_COMMENT_NOTE } from '../status/index.js';
import type { IntakeDeps } from './intake-deps.js';
import { react } from './react-to-trigger.js';
import { statusCommentId } from './status-comment-id.js';
import type { TriggerTarget } from './trigger-types.js';

/** A GitHub write waiting for its turn. */
export type Reply =
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

export class IntakeReplies {
  readonly #waiting: Reply[] = [];
  #writing: Promise<void> | undefined;
  #stopped = false;

  constructor(private readonly deps: Pick<IntakeDeps, 'queue' | 'auth' | 'lock' | 'log'>) {}

  /** The writes under way, if any (Intake waits for them to settle). */
  get writing(): Promise<void> | undefined {
    return this.#writing;
  }

  /** Drops what was not sent yet and writes nothing more. */
  stop(): void {
    this.#stopped = true;
    this.#waiting.length = 0;
  }

  write(task: Reply): void {
    if (this.#stopped) return;
    if (task.kind === 'status') {
      // One pending status write per issue: the newest supersedes what was not sent yet.
      const key = issueKey(task.target);
      const i = this.#waiting.findIndex((t) => t.kind === 'status' && issueKey(t.target) === key);
      if (i >= 0) {
        this.#waiting[i] = task;
        return;
      }
    }
    this.#waiting.push(task);
    this.#drain();
  }

  #drain(): void {
    this.#writing ??= this.#drainWrites().finally(() => {
      this.#writing = undefined;
      // A write pushed after the loop found nothing left, and before this ran, saw a loop still
      // going and started none: it would wait for the next write (a cancel's "cancelled" for
      // ever, the comment left saying "queued").
      if (this.#waiting.length > 0 && !this.#stopped) this.#drain();
    });
  }

  async #drainWrites(): Promise<void> {
    for (;;) {
      // Reactions first: they are the quick sign of life, and never go stale.
      const i = this.#waiting.findIndex((t) => t.kind === 'reaction');
      const [task] = this.#waiting.splice(i >= 0 ? i : 0, 1);
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

  async #send(task: Reply): Promise<void> {
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
