// The feedback a follow-up gets, read from GitHub when its run starts: the pull request as it is
// now (its head is where the run starts), and every review thread that is unresolved and still
// attached to the current head, with only the comments made before the maintainer's request.
// One REST call and one GraphQL query. Everything anyone wrote is sanitized as issue text is.
import type { FollowUpThread } from '../../runner/follow-up-task.js';
import { MAX_THREADS } from '../../runner/follow-up-task.js';
import type { GitHubClient } from '../octokit.js';
import { sanitizeCode } from '../sanitize-issue-text.js';
import { readIssueTextsOffThread } from '../sanitize-off-thread.js';

export interface PullRequestState {
  number: number;
  title: string;
  state: string;
  draft: boolean;
  body: string;
  headRef: string;
  headSha: string;
  /** `owner/repo` of the head; another repository means a fork, never ours. */
  headRepo: string | undefined;
  baseRef: string;
  /** The author's login (our App's is `<slug>[bot]`). */
  author: string | undefined;
  authorType: string | undefined;
}

export async function fetchPullRequest(
  octokit: GitHubClient,
  p: { owner: string; repo: string; number: number },
): Promise<PullRequestState> {
  const { data } = await octokit.rest.pulls.get({
    owner: p.owner,
    repo: p.repo,
    pull_number: p.number,
  });
  return {
    number: data.number,
    title: data.title,
    state: data.state,
    draft: data.draft ?? false,
    body: data.body ?? '',
    headRef: data.head.ref,
    headSha: data.head.sha,
    headRepo: data.head.repo?.full_name,
    baseRef: data.base.ref,
    author: data.user?.login,
    authorType: data.user?.type,
  };
}

/** A thread given to the model, and where the bot answers it. */
export interface FeedbackThread extends FollowUpThread {
  /** The first comment's id: replies go to `…/pulls/comments/<id>/replies`. */
  replyTo: number;
}

const THREADS_QUERY = `query($owner: String!, $repo: String!, $number: Int!) {
  repository(owner: $owner, name: $repo) {
    pullRequest(number: $number) {
      reviewThreads(first: 100) {
        nodes {
          isResolved
          isOutdated
          path
          line
          comments(first: 50) {
            nodes { databaseId body createdAt diffHunk author { login } }
          }
        }
      }
    }
  }
}`;

interface ThreadComment {
  databaseId: number | null;
  body: string;
  createdAt: string;
  diffHunk: string;
  author: { login: string } | null;
}

interface ThreadNode {
  isResolved: boolean;
  isOutdated: boolean;
  path: string;
  line: number | null;
  comments?: { nodes?: (ThreadComment | null)[] };
}

interface ThreadsResponse {
  repository?: {
    pullRequest?: { reviewThreads?: { nodes?: (ThreadNode | null)[] } } | null;
  } | null;
}

/**
 * Unresolved threads still attached to the current head (not outdated, with a line), with the
 * comments created at or before `before`; threads with no such comment are left out.
 */
export async function fetchReviewThreads(
  octokit: GitHubClient,
  p: { owner: string; repo: string; number: number; before: string },
): Promise<FeedbackThread[]> {
  const data = await octokit.graphql<ThreadsResponse>(THREADS_QUERY, {
    owner: p.owner,
    repo: p.repo,
    number: p.number,
  });
  const cutoff = Date.parse(p.before);
  const kept: { node: ThreadNode; comments: ThreadComment[] }[] = [];
  for (const node of data.repository?.pullRequest?.reviewThreads?.nodes ?? []) {
    if (!node || node.isResolved || node.isOutdated || node.line === null) continue;
    const comments = (node.comments?.nodes ?? []).filter(
      (c): c is ThreadComment =>
        c !== null && c.databaseId !== null && !(Date.parse(c.createdAt) > cutoff),
    );
    if (comments[0]?.databaseId == null) continue;
    kept.push({ node, comments });
    if (kept.length >= MAX_THREADS) break;
  }
  // Anyone can comment on a public pull request: their Markdown is read off the main thread,
  // bounded like an issue's (sanitize-off-thread.ts), never on the thread that answers webhooks.
  const reads = await readIssueTextsOffThread(kept.flatMap((t) => t.comments.map((c) => c.body)));
  let next = 0;
  return kept.map(({ node, comments }) => ({
    path: sanitizeCode(node.path),
    line: node.line as number,
    diffHunk: sanitizeCode(comments[0]!.diffHunk),
    comments: comments.map((c) => {
      const read = reads[next++];
      return { author: `@${c.author?.login ?? 'ghost'}`, body: read?.ok ? read.text : '' };
    }),
    replyTo: comments[0]!.databaseId as number,
  }));
}
