// Follow-up triggers on a pull request (no I/O): `/frognano <feedback>` in a PR comment, in the
// body of a submitted review (its inline comments are the feedback), or in an inline review
// comment; `/frognano cancel` on the PR. Whether the PR is one this App opened is asked later,
// through the API, after the sender's permission (intake.ts).
import { z } from 'zod';
import { visibilityOf } from '../job.js';
import { isBot, parseCommand } from './parse-command.js';
import type { TriggerDecision, TriggerTarget } from './trigger-types.js';

const User = z.object({ login: z.string(), id: z.number(), type: z.string().optional() });

const Repository = z.object({
  name: z.string(),
  owner: z.object({ login: z.string() }),
  default_branch: z.string().optional(),
  private: z.boolean().optional(),
  visibility: z.string().optional(),
});

const PullRequest = z.object({
  number: z.number().int().positive(),
  title: z.string(),
  state: z.string().optional(),
  locked: z.boolean().optional(),
});

const Common = {
  repository: Repository,
  sender: User,
  installation: z.object({ id: z.number() }).optional(),
};

export const PullRequestReviewPayload = z.object({
  action: z.string(),
  review: z.object({
    id: z.number(),
    body: z.string().nullable(),
    state: z.string(),
    user: User,
    submitted_at: z.string().nullable().optional(),
  }),
  pull_request: PullRequest,
  ...Common,
});

export const PullRequestReviewCommentPayload = z.object({
  action: z.string(),
  comment: z.object({
    id: z.number(),
    body: z.string(),
    user: User,
    created_at: z.string(),
  }),
  pull_request: PullRequest,
  ...Common,
});

export const PullRequestCommentPayload = z.object({
  action: z.string(),
  comment: z.object({
    id: z.number(),
    body: z.string().nullable(),
    user: User,
    created_at: z.string().optional(),
  }),
  issue: PullRequest.extend({ pull_request: z.object({}).passthrough() }),
  ...Common,
});

export type ReviewCommand =
  | { verb: 'feedback'; text: string }
  | { verb: 'cancel' }
  | { verb: 'use'; attempt: number | undefined }
  | { verb: 'ci' };

/**
 * `/frognano` at the very start, then the feedback (possibly none: the review threads may say
 * it all), or exactly `/frognano cancel`. `/frognanox` or a quoted command is not a command.
 */
export function parseReviewCommand(body: string): ReviewCommand | undefined {
  const text = body.replace(/\r\n?/g, '\n').trim();
  const m = /^\/frognano(?=$|[ \t\n])([\s\S]*)$/i.exec(text);
  if (!m) return undefined;
  const rest = (m[1] ?? '').trim();
  if (/^cancel$/i.test(rest)) return { verb: 'cancel' };
  return { verb: 'feedback', text: rest };
}

/**
 * `/frognano use K` (a bad K too) or `/frognano ci` wherever it is written on the pull request,
 * else the rest.
 */
function readCommand(body: string): ReviewCommand | undefined {
  const command = parseCommand(body);
  return command?.verb === 'use' || command?.verb === 'ci' ? command : parseReviewCommand(body);
}

/** The decision for a PR event, or undefined when the event is not one of ours. */
export function decideReviewTrigger(
  eventName: string,
  rawPayload: unknown,
): TriggerDecision | undefined {
  if (eventName === 'pull_request_review') {
    const parsed = PullRequestReviewPayload.safeParse(rawPayload);
    if (!parsed.success)
      return { kind: 'ignore', reason: 'unexpected pull_request_review payload' };
    const p = parsed.data;
    if (p.action !== 'submitted') return { kind: 'ignore', reason: `review.${p.action}` };
    const state = p.review.state.toLowerCase();
    if (state !== 'commented' && state !== 'changes_requested') {
      return { kind: 'ignore', reason: `review state ${state}` };
    }
    const command = readCommand(p.review.body ?? '');
    if (!command) return { kind: 'ignore', reason: 'not a command' };
    if (isBot(p.review.user)) return { kind: 'ignore', reason: 'review by a bot' };
    return gatePull(p, p.pull_request, command, {
      trigger: 'review',
      at: p.review.submitted_at ?? new Date().toISOString(),
    });
  }
  if (eventName === 'pull_request_review_comment') {
    const parsed = PullRequestReviewCommentPayload.safeParse(rawPayload);
    if (!parsed.success) {
      return { kind: 'ignore', reason: 'unexpected pull_request_review_comment payload' };
    }
    const p = parsed.data;
    // Edited comments are ignored: editing an old comment must not start a new run.
    if (p.action !== 'created') return { kind: 'ignore', reason: `review_comment.${p.action}` };
    const command = readCommand(p.comment.body);
    if (!command) return { kind: 'ignore', reason: 'not a command' };
    if (isBot(p.comment.user)) return { kind: 'ignore', reason: 'comment by a bot' };
    return gatePull(p, p.pull_request, command, {
      trigger: 'review_comment',
      at: p.comment.created_at,
      commentId: p.comment.id,
    });
  }
  if (eventName === 'issue_comment') {
    const parsed = PullRequestCommentPayload.safeParse(rawPayload);
    if (!parsed.success) return undefined;
    const p = parsed.data;
    if (p.action !== 'created') return { kind: 'ignore', reason: `issue_comment.${p.action}` };
    const command = readCommand(p.comment.body ?? '');
    if (!command) return { kind: 'ignore', reason: 'not a command' };
    if (isBot(p.comment.user)) return { kind: 'ignore', reason: 'comment by a bot' };
    return gatePull(p, p.issue, command, {
      trigger: 'comment',
      at: p.comment.created_at ?? new Date().toISOString(),
      commentId: p.comment.id,
    });
  }
  return undefined;
}

function gatePull(
  p: {
    sender: z.infer<typeof User>;
    installation?: { id: number } | undefined;
    repository: z.infer<typeof Repository>;
  },
  pull: z.infer<typeof PullRequest>,
  command: ReviewCommand,
  trigger: { trigger: 'comment' | 'review' | 'review_comment'; at: string; commentId?: number },
): TriggerDecision {
  if (isBot(p.sender)) return { kind: 'ignore', reason: 'sender is a bot' };
  if (!p.installation) return { kind: 'ignore', reason: 'no installation in payload' };
  const target: TriggerTarget = {
    installationId: p.installation.id,
    owner: p.repository.owner.login,
    repo: p.repository.name,
    issueNumber: pull.number,
    issueTitle: pull.title,
    issueBody: '',
    defaultBranch: p.repository.default_branch,
    ...visibilityOf(p.repository),
    sender: { login: p.sender.login, id: p.sender.id },
    commentId: trigger.commentId,
    commentKind: trigger.trigger === 'review_comment' ? 'review_comment' : 'issue',
    pullRequest: true,
  };
  if (command.verb === 'cancel') return { kind: 'cancel', ...target };
  // Closed or not ours: use-attempt.ts and ci-commit.ts answer that themselves.
  if (command.verb === 'use') return { kind: 'use', attempt: command.attempt, ...target };
  if (command.verb === 'ci') return { kind: 'ci', ...target };
  if (pull.locked) return { kind: 'refuse', reason: 'locked', ...target };
  if (pull.state === 'closed') return { kind: 'refuse', reason: 'closed', ...target };
  return {
    kind: 'run',
    source: 'review',
    review: { trigger: trigger.trigger, feedback: command.text, at: trigger.at },
    ...target,
  };
}
