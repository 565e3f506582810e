// A follow-up run on the bot's own draft pull request: whether the pull request is one this App
// opened (asked at intake, after the sender's permission), and the run's brief (asked by the
// worker when the run starts): the head to start from, the original issue, the previous diff's
// base and evidence, and the feedback threads.
import type { Logger } from 'pino';
import type { Notes } from '../../queue/types.js';
import { followUpTask } from '../../runner/follow-up-task.js';
import type { RunRequest, RunResult } from '../../runner/run-types.js';
import { issueKey, type IssueJob } from '../job.js';
import { inlineCode } from '../markdown.js';
import type { GitHubClient } from '../octokit.js';
import { renderRevision } from './pr-revisions.js';
import { sanitizeCode } from '../sanitize-issue-text.js';
import type { BotIdentity, GitRunner } from './publish.js';
import { publishRevision } from './publish-revision.js';
import { type StatusState, verificationLine } from '../status/index.js';
import {
  fetchPullRequest,
  fetchReviewThreads,
  type FeedbackThread,
  type PullRequestState,
} from './review-feedback.js';
import {
  evidenceOf,
  issueNumberOfBranch,
  readPublishedAttempt,
  writePublishedAttempt,
  type PublishedAttempt,
} from './revision-record.js';

interface Target {
  owner: string;
  repo: string;
  /** The pull request's number. */
  issueNumber: number;
}

export type OwnPullRequest =
  | { ours: true; pr: PullRequestState; issueNumber: number; attempt: PublishedAttempt }
  | { ours: false; pr: PullRequestState };

/**
 * Ours: its head is `frognano/issue-<N>` in this repository and our record for issue N names
 * this pull request (the record is written when the App publishes it).
 */
export async function ownPullRequest(
  octokit: GitHubClient,
  queue: Pick<Notes, 'getNote'>,
  t: Target,
): Promise<OwnPullRequest> {
  const pr = await fetchPullRequest(octokit, {
    owner: t.owner,
    repo: t.repo,
    number: t.issueNumber,
  });
  const issueNumber = issueNumberOfBranch(pr.headRef);
  const sameRepo = pr.headRepo?.toLowerCase() === `${t.owner}/${t.repo}`.toLowerCase();
  if (issueNumber === undefined || !sameRepo) return { ours: false, pr };
  const attempt = await readPublishedAttempt(
    queue,
    issueKey({ owner: t.owner, repo: t.repo, issueNumber }),
  );
  if (!attempt || attempt.prNumber !== pr.number) return { ours: false, pr };
  return { ours: true, pr, issueNumber, attempt };
}

export function notOursLine(login: string): string {
  return `Sorry @${login}, frognano only revises the draft pull requests it opened for an issue, and this pull request is not one of them.`;
}

export interface FollowUpBrief {
  pr: PullRequestState;
  issueNumber: number;
  attempt: PublishedAttempt;
  threads: FeedbackThread[];
  /** What the pipeline gets: start at the head, the task built around the previous diff. */
  request: Pick<RunRequest, 'revision' | 'issueText' | 'followUp'>;
}

/** The brief of a follow-up run, or a plain-words reason why there is none. */
export async function prepareFollowUp(
  octokit: GitHubClient,
  queue: Pick<Notes, 'getNote'>,
  job: IssueJob,
): Promise<FollowUpBrief | { refused: string }> {
  const review = job.review;
  if (!review) return { refused: 'the run has no follow-up request.' };
  const own = await ownPullRequest(octokit, queue, job);
  if (!own.ours) return { refused: 'this pull request was not opened by frognano for an issue.' };
  if (own.pr.state !== 'open') return { refused: 'the pull request is not open any more.' };
  const threads = await fetchReviewThreads(octokit, {
    owner: job.owner,
    repo: job.repo,
    number: own.pr.number,
    before: review.at,
  });
  if (review.feedback.trim() === '' && threads.length === 0) {
    return {
      refused:
        'there is no feedback to act on: write it after `/frognano`, or leave review comments on the lines to change.',
    };
  }
  const { attempt } = own;
  const task = (previousDiff: string) =>
    followUpTask({
      issueText: attempt.issueText,
      branch: own.pr.headRef,
      previousDiff: sanitizeCode(previousDiff),
      evidence: attempt.evidence,
      request: review.feedback,
      threads,
    });
  return {
    pr: own.pr,
    issueNumber: own.issueNumber,
    attempt,
    threads,
    request: {
      revision: own.pr.headSha,
      issueText: attempt.issueText,
      followUp: { diffBase: attempt.baseCommit, task },
    },
  };
}

export interface PublishFollowUpParams {
  brief: FollowUpBrief;
  job: IssueJob;
  result: RunResult;
  octokit: GitHubClient;
  queue: Notes;
  mintToken: () => Promise<string>;
  gitUrl: string;
  workRoot: string;
  bot: BotIdentity;
  noreplyDomain: string;
  trajectoryUrl?: string;
  canSpend: () => boolean;
  log: Logger;
  git?: GitRunner;
}

/** Pushes the follow-up's commit and reports it; the published-attempt record moves on. */
export async function publishFollowUp(p: PublishFollowUpParams): Promise<StatusState> {
  const { brief, job, result } = p;
  const review = job.review as NonNullable<IssueJob['review']>;
  if (result.baseCommit !== brief.pr.headSha) {
    return {
      kind: 'failed',
      followUp: true,
      reason: `the run did not start from the pull request's head (${brief.pr.headSha.slice(0, 12)}), so its change cannot be published.`,
    };
  }
  const revision = brief.attempt.revision + 1;
  const published = await publishRevision({
    octokit: p.octokit,
    owner: job.owner,
    repo: job.repo,
    prNumber: brief.pr.number,
    branch: brief.pr.headRef,
    issueNumber: brief.issueNumber,
    issueTitle: brief.attempt.issueTitle,
    revision,
    head: brief.pr.headSha,
    patch: result.patch,
    gitUrl: p.gitUrl,
    mintToken: p.mintToken,
    workRoot: p.workRoot,
    bot: p.bot,
    coAuthor: job.sender,
    noreplyDomain: p.noreplyDomain,
    section: (commit) =>
      renderRevision({
        revision,
        result,
        commit,
        parent: brief.pr.headSha,
        requestedBy: job.sender.login,
        trigger: review.trigger,
        feedback: review.feedback,
        threads: brief.threads,
        trajectoryUrl: p.trajectoryUrl,
      }),
    replyTo: brief.threads.map((t) => t.replyTo),
    canSpend: p.canSpend,
    log: p.log,
    git: p.git,
  });
  if (published.kind === 'moved') {
    return {
      kind: 'failed',
      followUp: true,
      reason: `someone pushed to ${inlineCode(brief.pr.headRef)} after this run started (it is now at ${published.now ? inlineCode(published.now.slice(0, 12)) : 'nothing'}, the run started at ${inlineCode(brief.pr.headSha.slice(0, 12))}). frognano does not overwrite other people's commits, so nothing was pushed.`,
    };
  }
  await writePublishedAttempt(
    p.queue,
    issueKey({ owner: job.owner, repo: job.repo, issueNumber: brief.issueNumber }),
    {
      ...brief.attempt,
      head: published.commit,
      revision,
      evidence: evidenceOf(result) ?? brief.attempt.evidence,
    },
  );
  return {
    kind: 'revised',
    commit: published.commit,
    revision,
    partial: result.partial,
    verified: verificationLine(result),
    replies: published.replies,
    threads: brief.threads.length,
    bodyUpdated: published.bodyUpdated,
  };
}
