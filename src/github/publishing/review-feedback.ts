// The feedback a follow-up gets, read from GitHub when its run starts: the pull request as it is
// now (its head is where the run starts), and every review thread that is unresolved and still
// attached to the current head, with only the comments made before the maintainer's request.
// One REST call and one GraphQL query. Everything anyone wrote is sanitized as issue text is.
import type { FollowUpThread } from '../../runner/follow-up-task.js';
import { MAX_THREADS } from '../../runner/follow-up-task.js';
import type { GitHubClient } from '../octokit.js';
import { sanitizeCode, sanitizeIssueText } from '../sanitize-issue-text.js';

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

interface ThreadsResponse {
  repository?: {
    pullRequest?: {
      reviewThreads?: {
        nodes?: ({
          isResolved: boolean;
          isOutdated: boolean;
          path: string;
          line: number | null;
          comments?: {
            nodes?: ({
              databaseId: number | null;
              body: string;
              createdAt: string;
              diffHunk: string;
              author: { login: string } | null;
            } | null)[];
          };
        } | null)[];
      };
    } | null;
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
  const threads: FeedbackThread[] = [];
  for (const node of data.repository?.pullRequest?.reviewThreads?.nodes ?? []) {
    if (!node || node.isResolved || node.isOutdated || node.line === null) continue;
    const comments = (node.comments?.nodes ?? []).filter(
      (c): c is NonNullable<typeof c> =>
        c !== null && c.databaseId !== null && !(Date.parse(c.createdAt) > cutoff),
    );
    const first = comments[0];
    if (!first || first.databaseId === null) continue;
    threads.push({
      path: sanitizeCode(node.path),
      line: node.line,
      diffHunk: sanitizeCode(first.diffHunk),
      comments: comments.map((c) => ({
        author: `@${c.author?.login ?? 'ghost'}`,
        body: sanitizeIssueText(c.body),
      })),
      replyTo: first.databaseId,
    });
    if (threads.length >= MAX_THREADS) break;
  }
  return threads;
}
