// The issue's status comment for one run: its id shared with intake through the queue (intake
// may run in another process), its writes under the issue's lock, here and across processes.
import type { RunRecord } from '../../queue/types.js';
import { runPageUrl } from '../../web/index.js';
import { issueKey, type IssueJob } from '../job.js';
import { workflowRunLink } from '../workflow-run.js';
import type { GitHubClient } from '../octokit.js';
import type { RestBudget } from '../rest-budget.js';
import type { KeyedLock } from '../keyed-lock.js';
import type { DeliveryLog, KeyLock, Notes } from '../../queue/types.js';
import {
  STATUS_COMMENT_NOTE,
  StatusReporter,
  type StatusReporterOptions,
  triggerWords,
} from './status-comment.js';

/** What the reporter shares with intake and other processes. */
export interface StatusDeps {
  /** The comment's id (a note), the issue's lock, the deliveries intake has yet to handle. */
  queue: Notes & KeyLock & Pick<DeliveryLog<IssueJob>, 'pendingDeliveries'>;
  lock: KeyedLock;
  /** Base URL of the public run page, linked from the comment. */
  publicUrl?: string;
  /** Actions mode: the workflow run, linked with the run's artifact. */
  workflowRunUrl?: string;
}

/** How long a worker's first status write waits for intake to post the "queued" comment. */
const INTAKE_WAIT_MS = 10_000;

export async function runStatusReporter(
  deps: StatusDeps,
  run: RunRecord<IssueJob>,
  client: { octokit: GitHubClient; budget: RestBudget },
  options: Pick<StatusReporterOptions, 'throttleMs' | 'reserve' | 'log'>,
  onWrite?: () => Promise<void>,
): Promise<StatusReporter> {
  const { queue, lock } = deps;
  const key = issueKey(run.job);
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
    octokit: client.octokit,
    issue: { owner: run.job.owner, repo: run.job.repo, issueNumber: run.job.issueNumber },
    commentId: () => commentId,
    onCommentId: (id) => {
      commentId = id;
      saving = queue.setNote(key, STATUS_COMMENT_NOTE, String(id));
    },
    serialize: async (write) => {
      intakeDone ??= waitForIntake(deps, run);
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
    budget: client.budget,
    meta: {
      runId: run.id,
      trigger: triggerWords(run.job),
      runPageUrl: deps.publicUrl ? runPageUrl(deps.publicUrl, run.id) : undefined,
      workflowRun: deps.workflowRunUrl ? workflowRunLink(deps.workflowRunUrl, run.id) : undefined,
    },
  });
}

/**
 * Waits (bounded) until intake has handled the delivery that made this run: intake in
 * another process (`frognano serve`) may still be posting the "queued" comment.
 */
async function waitForIntake(deps: StatusDeps, run: RunRecord<IssueJob>): Promise<void> {
  const { queue } = deps;
  const deadline = Date.now() + INTAKE_WAIT_MS;
  const pending = async () =>
    run.deliveryId !== undefined &&
    (await queue.getNote(issueKey(run.job), STATUS_COMMENT_NOTE)) === undefined &&
    (await queue.pendingDeliveries()).some((d) => d.deliveryId === run.deliveryId);
  while ((await pending()) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
