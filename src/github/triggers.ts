// What a webhook means for us, decided from the payload alone (no I/O): start a run, cancel
// one, refuse politely, or ignore. The permission check happens later, through the API.
import { z } from 'zod';
import { decideReviewTrigger } from './review-triggers.js';

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

/** Everything later stages need about the issue and the person who triggered us. */
export interface TriggerTarget {
  installationId: number;
  owner: string;
  repo: string;
  issueNumber: number;
  issueTitle: string;
  issueBody: string;
  defaultBranch?: string;
  sender: { login: string; id: number };
  /** The triggering comment (reactions go there); absent for labels (reactions go on the issue). */
  commentId?: number;
  /** `review_comment`: `commentId` is an inline review comment (its reactions live elsewhere). */
  commentKind?: 'issue' | 'review_comment';
  /** The target is the bot's pull request (a follow-up), `issueNumber` its number. */
  pullRequest?: boolean;
}

/** What a follow-up on the pull request was asked with (review-triggers.ts). */
export interface ReviewTrigger {
  trigger: 'comment' | 'review' | 'review_comment';
  /** The text after `/frognano`, unsanitized. */
  feedback: string;
  /** When the maintainer acted (ISO time). */
  at: string;
}

export type TriggerDecision =
  | { kind: 'ignore'; reason: string }
  | ({
      kind: 'run';
      source: 'label' | 'retry' | 'review';
      guidance?: string;
      review?: ReviewTrigger;
      attempts?: number;
    } & TriggerTarget)
  | ({ kind: 'cancel' } & TriggerTarget)
  /**
   * `/frognano use K` on a pull request (`issueNumber` is the pull request's); `attempt` is
   * undefined when K is not a whole number (refused with the valid range by use-attempt.ts).
   */
  | ({ kind: 'use'; attempt: number | undefined } & TriggerTarget)
  | ({ kind: 'refuse'; reason: 'closed' | 'locked' } & TriggerTarget);

export interface TriggerOptions {
  /** The label that starts a run (compared case-insensitively, as GitHub does). */
  label: string;
}

export function isBot(user: { login: string; type?: string | undefined }): boolean {
  return user.type === 'Bot' || /\[bot\]$/i.test(user.login);
}

export type Command =
  | { verb: 'retry'; guidance?: string; attempts?: number }
  | { verb: 'cancel' }
  | { verb: 'use'; attempt: number | undefined };

/**
 * A command is the whole comment: its first line is `/frognano retry [xN] [guidance]`, exactly
 * `/frognano cancel`, or `/frognano use K` (on the bot's pull request). Retry guidance may continue on the following lines; `xN` (N from
 * 1 to 8, right after `retry`) asks for N parallel attempts. A command quoted in a reply, buried in prose or glued to other words
 * (`/frognano retrying`) is not a command.
 *
 * `use` with nothing after it, or with anything starting like a number (`use 9`, `use -1`,
 * `use 1e3`, `use 1 2`) is `use`: a bad K is answered with the valid range, never read as
 * feedback for a follow-up run. `use` followed by words (`use the project's style`) is not a
 * command here: on a pull request it is feedback.
 */
export function parseCommand(body: string): Command | undefined {
  const text = body.replace(/\r\n?/g, '\n').trim();
  const m = /^\/frognano[ \t]+(retry|cancel|use)(?=$|[ \t\n])([\s\S]*)$/i.exec(text);
  if (!m) return undefined;
  const verb = (m[1] ?? '').toLowerCase();
  const rest = (m[2] ?? '').trim();
  if (verb === 'cancel') return rest === '' ? { verb: 'cancel' } : undefined;
  if (verb === 'use') {
    if (rest !== '' && !/^[-+]?[.\d]/.test(rest)) return undefined;
    return { verb: 'use', attempt: /^[-+]?\d+$/.test(rest) ? Number(rest) : undefined };
  }
  const count = /^[x×]([1-8])(?=$|[ \t\n])([\s\S]*)$/i.exec(rest);
  const attempts = count ? { attempts: Number(count[1]) } : {};
  const guidance = (count ? (count[2] ?? '') : rest).trim();
  return guidance === ''
    ? { verb: 'retry', ...attempts }
    : { verb: 'retry', guidance, ...attempts };
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

export function issueKey(t: { owner: string; repo: string; issueNumber: number }): string {
  return `${t.owner}/${t.repo}#${t.issueNumber}`.toLowerCase();
}
