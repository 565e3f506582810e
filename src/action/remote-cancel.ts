// `/frognano cancel` across workflow runs. The run to stop lives in another workflow run on
// another runner, so the two meet on GitHub, on what only the bot can write: the cancelling run
// (after the sender's permission check) gives the bot's status comment a 👎 reaction of the bot's
// own, and the running one looks for it every few seconds and stops its run. A reaction, not
// an edit of the comment: the running process edits that comment itself and would write over
// a marker in its text, while nobody but the bot can add or remove the bot's reaction.
import type { Logger } from 'pino';
import type { GitHubClient, IssueRef } from '../github/octokit.js';
import { STATUS_MARKER } from '../github/status/index.js';
import { readStatusComment } from './status-comment-state.js';

export const CANCEL_REACTION = '-1';

interface Found {
  id: number;
  body: string;
}

/** The status comment the bot (`login`) wrote on the issue or pull request. */
export async function findOwnStatusComment(
  octokit: GitHubClient,
  issue: IssueRef,
  login: string,
): Promise<Found | undefined> {
  const params = {
    owner: issue.owner,
    repo: issue.repo,
    issue_number: issue.issueNumber,
    per_page: 100,
  };
  const mine = (rows: { id: number; body?: string | null; user?: { login: string } | null }[]) => {
    const row = rows.find(
      (c) =>
        c.user?.login.toLowerCase() === login.toLowerCase() &&
        (c.body ?? '').startsWith(STATUS_MARKER),
    );
    return row ? { id: row.id, body: row.body ?? '' } : undefined;
  };
  const first = await octokit.rest.issues.listComments(params);
  const hit = mine(first.data);
  if (hit) return hit;
  const last = /<[^>]*[?&]page=(\d+)[^>]*>;\s*rel="last"/.exec(first.headers.link ?? '');
  if (!last) return undefined;
  return mine((await octokit.rest.issues.listComments({ ...params, page: Number(last[1]) })).data);
}

/**
 * Asks the run shown as queued or running in the bot's status comment to stop: its id, or
 * undefined when the comment shows none (nothing to cancel).
 */
export async function requestRemoteCancel(
  octokit: GitHubClient,
  issue: IssueRef,
  login: string,
): Promise<string | undefined> {
  const found = await findOwnStatusComment(octokit, issue, login);
  const state = found ? readStatusComment(found.body) : undefined;
  if (!found || !state?.active || !state.runId) return undefined;
  // A reaction made again is GitHub's old one (its old time): an earlier cancel's goes first.
  await removeCancelReactions(octokit, issue, found.id, login);
  await octokit.rest.reactions.createForIssueComment({
    owner: issue.owner,
    repo: issue.repo,
    comment_id: found.id,
    content: CANCEL_REACTION,
  });
  return state.runId;
}

type CancelReaction = { id: number; created_at: string };

/**
 * The bot's cancel reactions on the comment. With `cache`, asked conditionally (the last ETag):
 * an unchanged answer is a 304, which GitHub does not count against the token's rate limit
 * (the workflow token's is 1,000 requests an hour for the repository, every run's polls included).
 */
async function cancelReactions(
  octokit: GitHubClient,
  issue: IssueRef,
  commentId: number,
  login: string,
  cache?: { etag?: string; reactions?: CancelReaction[] },
): Promise<CancelReaction[]> {
  let answer;
  try {
    answer = await octokit.rest.reactions.listForIssueComment({
      owner: issue.owner,
      repo: issue.repo,
      comment_id: commentId,
      content: CANCEL_REACTION,
      per_page: 100,
      ...(cache?.etag ? { headers: { 'if-none-match': cache.etag } } : {}),
    });
  } catch (error) {
    if ((error as { status?: number }).status === 304 && cache?.reactions) return cache.reactions;
    throw error;
  }
  const mine = answer.data.filter((r) => r.user?.login.toLowerCase() === login.toLowerCase());
  if (cache) {
    cache.etag = answer.headers.etag;
    cache.reactions = mine;
  }
  return mine;
}

export async function removeCancelReactions(
  octokit: GitHubClient,
  issue: IssueRef,
  commentId: number,
  login: string,
): Promise<void> {
  for (const reaction of await cancelReactions(octokit, issue, commentId, login)) {
    await octokit.rest.reactions.deleteForIssueComment({
      owner: issue.owner,
      repo: issue.repo,
      comment_id: commentId,
      reaction_id: reaction.id,
    });
  }
}

export interface CancelWatch {
  /** Stops looking, and takes back the cancel reaction that stopped the run. */
  stop(): Promise<void>;
}

export interface WatchCancelOptions {
  client: () => Promise<GitHubClient>;
  issue: IssueRef;
  login: () => Promise<string>;
  /** The status comment's id, once there is one. */
  commentId: () => Promise<number | undefined>;
  /** GitHub's time when this run started: older reactions were for an earlier run. */
  since: () => number | undefined;
  everyMs: number;
  onCancel: () => void;
  log: Logger;
}

/** Looks for the bot's cancel reaction on the status comment every `everyMs`. */
export function watchCancel(o: WatchCancelOptions): CancelWatch {
  let seenOn: number | undefined;
  let checking: Promise<void> | undefined;
  const cache: { commentId?: number; etag?: string; reactions?: CancelReaction[] } = {};
  const check = async () => {
    const id = await o.commentId();
    if (id === undefined || seenOn !== undefined) return;
    if (cache.commentId !== id) Object.assign(cache, { commentId: id, etag: undefined });
    const since = o.since() ?? 0;
    const login = await o.login();
    const reactions = await cancelReactions(await o.client(), o.issue, id, login, cache);
    if (!reactions.some((r) => Date.parse(r.created_at) >= since)) return;
    seenOn = id;
    o.log.info({ commentId: id }, 'cancel requested by another workflow run: stopping the run');
    o.onCancel();
  };
  const timer = setInterval(() => {
    checking ??= check()
      .catch((error: unknown) => o.log.warn({ err: error }, 'looking for a cancel failed'))
      .finally(() => (checking = undefined));
  }, o.everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await checking;
      if (seenOn === undefined) return;
      await removeCancelReactions(await o.client(), o.issue, seenOn, await o.login()).catch(
        (error: unknown) => o.log.warn({ err: error }, 'removing the cancel reaction failed'),
      );
    },
  };
}
