// What a webhook means for us, decided from the payload alone (no I/O): start a run, cancel
// one, refuse politely, or ignore. The permission check happens later, through the API.
import { z } from 'zod';
import { decideReviewTrigger } from './review-triggers.js';
import { visibilityOf } from '../job.js';
import { isBot, parseCommand } from './parse-command.js';
import type { TriggerDecision, TriggerTarget } from './trigger-types.js';

export type { ReviewTrigger, TriggerDecision, TriggerTarget } from './trigger-types.js';
export { isBot, parseCommand, type Command } from './parse-command.js';
export { issueKey } from '../job.js';

const User = z.object({ login: z.string(), id: z.number(), type: z.string().optional() });

const Issue = z.object({
  number: z.number().int().positive(),
  title: z.string(),
  body: z.string().nullable().optional(),
  state: z.string().optional(),
  locked: z.boolean().optional(),
  pull_request: z.unknown().optional(),
});

const Repository = z.object({
  name: z.string(),
  full_name: z.string().optional(),
  owner: z.object({ login: z.string() }),
  default_branch: z.string().optional(),
  private: z.boolean().optional(),
  visibility: z.string().optional(),
});

const Common = {
  issue: Issue,
  repository: Repository,
  sender: User,
  installation: z.object({ id: z.number() }).optional(),
};

export const IssuesLabeledPayload = z.object({
  action: z.string(),
  label: z.object({ name: z.string() }).optional(),
  ...Common,
});
export type IssuesLabeledPayload = z.infer<typeof IssuesLabeledPayload>;

export const IssueCommentPayload = z.object({
  action: z.string(),
  comment: z.object({ id: z.number(), body: z.string().nullable(), user: User }),
  ...Common,
});
export type IssueCommentPayload = z.infer<typeof IssueCommentPayload>;

export interface TriggerOptions {
  /** The label that starts a run (compared case-insensitively, as GitHub does). */
  label: string;
}

export function decideTrigger(
  eventName: string,
  rawPayload: unknown,
  options: TriggerOptions,
): TriggerDecision {
  if (eventName === 'issues') {
    const parsed = IssuesLabeledPayload.safeParse(rawPayload);
    if (!parsed.success) return { kind: 'ignore', reason: 'unexpected issues payload' };
    const p = parsed.data;
    if (p.action !== 'labeled') return { kind: 'ignore', reason: `issues.${p.action}` };
    if (!p.label || p.label.name.toLowerCase() !== options.label.toLowerCase()) {
      return { kind: 'ignore', reason: 'another label' };
    }
    return gate(p, { kind: 'run', source: 'label' }, undefined);
  }
  // `/frognano use K` is a command of its own on the bot's pull request, not feedback.
  const use = eventName === 'issue_comment' ? useCommand(rawPayload) : undefined;
  if (use) return use;
  // Follow-ups on the bot's pull requests (review-triggers.ts).
  const onPullRequest = decideReviewTrigger(eventName, rawPayload);
  if (onPullRequest) return onPullRequest;
  if (eventName === 'issue_comment') {
    const parsed = IssueCommentPayload.safeParse(rawPayload);
    if (!parsed.success) return { kind: 'ignore', reason: 'unexpected issue_comment payload' };
    const p = parsed.data;
    // Edited comments are ignored: editing an old comment must not start a new run.
    if (p.action !== 'created') return { kind: 'ignore', reason: `issue_comment.${p.action}` };
    const command = parseCommand(p.comment.body ?? '');
    if (!command) return { kind: 'ignore', reason: 'not a command' };
    if (isBot(p.comment.user)) return { kind: 'ignore', reason: 'comment by a bot' };
    if (command.verb === 'use') return gateUse(p, command.attempt);
    // On a pull request `ci` was read above (review-triggers.ts); on an issue it means nothing
    // and must never fall through to a retry.
    if (command.verb === 'ci') return { kind: 'ignore', reason: '`ci` on an issue' };
    const wanted =
      command.verb === 'cancel'
        ? ({ kind: 'cancel' } as const)
        : ({
            kind: 'run',
            source: 'retry',
            guidance: command.guidance,
            ...(command.attempts !== undefined ? { attempts: command.attempts } : {}),
          } as const);
    return gate(p, wanted, p.comment.id);
  }
  return { kind: 'ignore', reason: `event ${eventName}` };
}

type Wanted =
  | { kind: 'run'; source: 'label' | 'retry'; guidance?: string; attempts?: number }
  | { kind: 'cancel' };

function useCommand(rawPayload: unknown): TriggerDecision | undefined {
  const parsed = IssueCommentPayload.safeParse(rawPayload);
  if (!parsed.success || parsed.data.action !== 'created') return undefined;
  const command = parseCommand(parsed.data.comment.body ?? '');
  if (command?.verb !== 'use' || isBot(parsed.data.comment.user)) return undefined;
  return gateUse(parsed.data, command.attempt);
}

/** `/frognano use K` means something only on a pull request (publishing checks it is ours). */
function gateUse(p: IssueCommentPayload, attempt: number | undefined): TriggerDecision {
  if (isBot(p.sender)) return { kind: 'ignore', reason: 'sender is a bot' };
  if (p.issue.pull_request === undefined || p.issue.pull_request === null)
    return { kind: 'ignore', reason: '`use` on an issue, not a pull request' };
  if (!p.installation) return { kind: 'ignore', reason: 'no installation in payload' };
  return {
    kind: 'use',
    attempt,
    installationId: p.installation.id,
    owner: p.repository.owner.login,
    repo: p.repository.name,
    issueNumber: p.issue.number,
    issueTitle: p.issue.title,
    issueBody: p.issue.body ?? '',
    defaultBranch: p.repository.default_branch,
    ...visibilityOf(p.repository),
    sender: { login: p.sender.login, id: p.sender.id },
    commentId: p.comment.id,
  };
}

function gate(
  p: IssuesLabeledPayload | IssueCommentPayload,
  wanted: Wanted,
  commentId: number | undefined,
): TriggerDecision {
  if (isBot(p.sender)) return { kind: 'ignore', reason: 'sender is a bot' };
  if (p.issue.pull_request !== undefined && p.issue.pull_request !== null) {
    return { kind: 'ignore', reason: 'a pull request, not an issue' };
  }
  if (!p.installation) return { kind: 'ignore', reason: 'no installation in payload' };
  const target: TriggerTarget = {
    installationId: p.installation.id,
    owner: p.repository.owner.login,
    repo: p.repository.name,
    issueNumber: p.issue.number,
    issueTitle: p.issue.title,
    issueBody: p.issue.body ?? '',
    defaultBranch: p.repository.default_branch,
    ...visibilityOf(p.repository),
    sender: { login: p.sender.login, id: p.sender.id },
    commentId,
  };
  // Cancelling is always allowed: it only stops work.
  if (wanted.kind === 'run') {
    if (p.issue.locked) return { kind: 'refuse', reason: 'locked', ...target };
    if (p.issue.state === 'closed') return { kind: 'refuse', reason: 'closed', ...target };
  }
  return { ...wanted, ...target };
}
