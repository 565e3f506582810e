// Webhook payloads for tests: real examples from @octokit/webhooks-examples, adjusted per test.
import examplesModule from '@octokit/webhooks-examples';

interface Definition {
  name: string;
  examples: unknown[];
}
// The package's main is a JSON array; its typings describe it as a default export.
const examples: Definition[] = Array.isArray(examplesModule)
  ? (examplesModule as unknown as Definition[])
  : ((examplesModule as unknown as { default: Definition[] }).default ?? []);

type Payload = Record<string, unknown> & {
  issue: Record<string, unknown>;
  repository: Record<string, unknown> & { owner: Record<string, unknown> };
  sender: Record<string, unknown>;
};

function example(event: string, action: string, pick = 0): Payload {
  const def = examples.find((d) => d.name === event);
  const found = (def?.examples ?? []).filter((e) => (e as { action?: string }).action === action);
  const chosen = found[pick] ?? found[0];
  if (!chosen) throw new Error(`no ${event}.${action} example`);
  return structuredClone(chosen) as unknown as Payload;
}

export interface PayloadOptions {
  label?: string;
  body?: string;
  sender?: { login: string; id: number; type?: string };
  commenter?: { login: string; id: number; type?: string };
  issueNumber?: number;
  issueTitle?: string;
  issueBody?: string;
  state?: 'open' | 'closed';
  locked?: boolean;
  pullRequest?: boolean;
  installationId?: number | null;
  owner?: string;
  repo?: string;
  action?: string;
}

function adjust(p: Payload, o: PayloadOptions): Payload {
  if (o.installationId !== null) p.installation = { id: o.installationId ?? 1 };
  else delete p.installation;
  if (o.sender) p.sender = { ...p.sender, ...o.sender, type: o.sender.type ?? 'User' };
  if (o.issueNumber !== undefined) p.issue.number = o.issueNumber;
  if (o.issueTitle !== undefined) p.issue.title = o.issueTitle;
  if (o.issueBody !== undefined) p.issue.body = o.issueBody;
  if (o.state) p.issue.state = o.state;
  if (o.locked !== undefined) p.issue.locked = o.locked;
  if (o.pullRequest) p.issue.pull_request = { url: 'https://api.github.com/repos/x/y/pulls/1' };
  else delete p.issue.pull_request;
  if (o.owner) p.repository.owner = { ...p.repository.owner, login: o.owner };
  if (o.repo) {
    p.repository.name = o.repo;
    p.repository.full_name = `${p.repository.owner.login as string}/${o.repo}`;
  }
  return p;
}

/** `issues.labeled` (Codertocat/Hello-World#1 unless changed). */
export function labeledPayload(o: PayloadOptions = {}): Payload {
  const p = adjust(example('issues', 'labeled'), o);
  p.label = { ...(p.label as object), name: o.label ?? 'frognano' };
  if (o.action) p.action = o.action;
  return p;
}

/** `issue_comment.created` with the given body. */
export function commentPayload(o: PayloadOptions = {}): Payload {
  const p = adjust(example('issue_comment', 'created'), o);
  const comment = p.comment as Record<string, unknown>;
  comment.body = o.body ?? '/frognano retry';
  comment.id = 4242;
  const commenter = o.commenter ?? (p.sender as { login: string; id: number; type?: string });
  comment.user = { ...(comment.user as object), ...commenter, type: commenter.type ?? 'User' };
  if (o.action) p.action = o.action;
  return p;
}

export interface PullPayloadOptions {
  prNumber?: number;
  headRef?: string;
  headSha?: string;
  body?: string;
  sender?: { login: string; id: number; type?: string };
  state?: 'commented' | 'changes_requested' | 'approved';
  at?: string;
  action?: string;
}

function adjustPull(p: Record<string, unknown>, o: PullPayloadOptions): void {
  p.installation = { id: 1 };
  if (o.sender) p.sender = { ...(p.sender as object), ...o.sender, type: o.sender.type ?? 'User' };
  const pr = p.pull_request as Record<string, unknown> & { head: Record<string, unknown> };
  pr.number = o.prNumber ?? 7;
  pr.title = 'frognano: add() subtracts instead of adding';
  pr.head = { ...pr.head, ref: o.headRef ?? 'frognano/issue-1', sha: o.headSha ?? pr.head.sha };
  if (o.action) p.action = o.action;
}

/** `pull_request_review.submitted` on the bot's PR #7 (Codertocat/Hello-World). */
export function reviewPayload(o: PullPayloadOptions = {}): Record<string, unknown> {
  const p = structuredClone(
    (examples.find((d) => d.name === 'pull_request_review')?.examples ?? []).find(
      (e) => (e as { action?: string }).action === 'submitted',
    ),
  ) as Record<string, unknown>;
  adjustPull(p, o);
  const review = p.review as Record<string, unknown>;
  review.body = o.body ?? '/frognano';
  review.state = o.state ?? 'commented';
  review.submitted_at = o.at ?? new Date().toISOString();
  if (o.sender) review.user = { ...(review.user as object), ...o.sender, type: 'User' };
  return p;
}

/** `pull_request_review_comment.created` on the bot's PR #7. */
export function reviewCommentPayload(
  o: PullPayloadOptions & { commentId?: number } = {},
): Record<string, unknown> {
  const p = structuredClone(
    (examples.find((d) => d.name === 'pull_request_review_comment')?.examples ?? []).find(
      (e) => (e as { action?: string }).action === 'created',
    ),
  ) as Record<string, unknown>;
  adjustPull(p, o);
  const comment = p.comment as Record<string, unknown>;
  comment.body = o.body ?? '/frognano';
  comment.id = o.commentId ?? 5151;
  comment.created_at = o.at ?? new Date().toISOString();
  if (o.sender) comment.user = { ...(comment.user as object), ...o.sender, type: 'User' };
  return p;
}

/** `issue_comment.created` on pull request #N (GitHub sends PR comments as issue comments). */
export function pullCommentPayload(o: PullPayloadOptions = {}): Payload {
  const p = commentPayload({
    body: o.body ?? '/frognano',
    issueNumber: o.prNumber ?? 7,
    issueTitle: 'frognano: add() subtracts instead of adding',
    pullRequest: true,
    sender: o.sender,
    commenter: o.sender,
  });
  (p.comment as Record<string, unknown>).created_at = o.at ?? new Date().toISOString();
  return p;
}
