// Publishing a follow-up: the patch applied to a clean host clone at the pull request's head
// (the commit the run started from), committed as the App's bot, and pushed on the same branch
// as a fast-forward only. If the branch moved after the run started (someone pushed), nothing
// is overwritten: the caller says so and stops. Then the pull request's body gains a "Revision
// N" section (the PR stays a draft: it is never marked ready here), and each review thread the
// run was given gets a one-line reply naming the commit.
import { rm } from 'node:fs/promises';
import type { Logger } from 'pino';
import { registerSecret } from '../../redact.js';
import { commitMessage } from './commit-message.js';
import { commitPatch } from './commit-patch.js';
import type { GitHubClient } from '../octokit.js';
import type { BotIdentity } from './publish.js';
import {
  GIT_RETRY_DELAYS_MS,
  type GitCommands,
  gitCommands,
  gitEnvironment,
  gitFailure,
  type GitRunner,
  makePublishDir,
  PublishError,
  remoteBranchHead,
  runGit,
  TRANSIENT_GIT_FAILURE,
} from './publish-git.js';
import { withRevision } from './pr-revisions.js';

export interface PublishRevisionParams {
  octokit: GitHubClient;
  owner: string;
  repo: string;
  prNumber: number;
  branch: string;
  issueNumber: number;
  issueTitle: string;
  revision: number;
  /** The pull request's head when the run started: the new commit's parent. */
  head: string;
  patch: string;
  gitUrl: string;
  mintToken: () => Promise<string>;
  workRoot: string;
  bot: BotIdentity;
  coAuthor: { login: string; id: number };
  noreplyDomain: string;
  /** The revision's section of the body, given the commit (pr-revisions.ts renderRevision). */
  section: (commit: string) => string;
  /** First comment ids of the threads the run was given: each gets a reply. */
  replyTo: number[];
  /** Whether one more REST call fits the run's budget (the final status is kept back). */
  canSpend: () => boolean;
  log: Logger;
  git?: GitRunner;
  /** Backoff for git commands that failed transiently (default GIT_RETRY_DELAYS_MS). */
  retryDelaysMs?: number[];
}

export type PublishRevisionResult =
  | { kind: 'pushed'; commit: string; bodyUpdated: boolean; replies: number }
  /** The branch is no longer at `head`: someone pushed after the run started. */
  | { kind: 'moved'; now: string };

export async function publishRevision(p: PublishRevisionParams): Promise<PublishRevisionResult> {
  if (p.patch.trim() === '') throw new PublishError('the patch is empty; nothing to publish');
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/i.test(p.head)) {
    throw new PublishError(`the head commit is not a full commit id: ${p.head}`);
  }
  // `publish-<pid>-`: start-up cleanup (removeStalePublishDirs) finds it after a crash.
  const { dir, tree, home } = await makePublishDir(p.workRoot, `publish-${process.pid}-revision-`);
  try {
    const token = await p.mintToken();
    registerSecret(token);
    // Reads from the remote are retried after a backoff when the server or network failed.
    const delays = p.retryDelaysMs ?? GIT_RETRY_DELAYS_MS;
    const cmds = gitCommands({
      git: p.git ?? runGit,
      cwd: tree,
      env: gitEnvironment(home, p.gitUrl, token),
      delays,
      onRetry: (what, attempt) => p.log.warn({ what, attempt }, 'git failed transiently; retrying'),
    });
    const commit = await commitPatch({
      run: cmds.run,
      remote: cmds.remote,
      dir,
      gitUrl: p.gitUrl,
      from: { commit: p.head, what: 'the pull request head' },
      patch: p.patch,
      message: commitMessage({
        issueTitle: `revision ${p.revision}: ${p.issueTitle}`,
        issueNumber: p.issueNumber,
        coAuthor: p.coAuthor,
        noreplyDomain: p.noreplyDomain,
      }),
      bot: p.bot,
    });
    const moved = await pushFastForward(p, cmds, commit, delays);
    if (moved) return moved;
    p.log.info({ branch: p.branch, commit, parent: p.head }, 'pushed revision');
    const bodyUpdated = await addRevisionSection(p, commit);
    const replies = await replyToThreads(p, commit);
    return { kind: 'pushed', commit, bodyUpdated, replies };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Pushes `commit` on the branch when it is still at the run's head; the branch's new head
 * when someone else moved it (undefined: pushed).
 */
async function pushFastForward(
  p: PublishRevisionParams,
  cmds: GitCommands,
  commit: string,
  delays: number[],
): Promise<{ kind: 'moved'; now: string } | undefined> {
  const remoteHead = () => remoteBranchHead(cmds, p.gitUrl, p.branch, 'reading the branch');
  const before = await remoteHead();
  if (before !== p.head) return { kind: 'moved', now: before };
  // No force of any kind: git itself refuses anything but a fast-forward, so a push that
  // lands between the check above and this one is not overwritten either.
  for (let attempt = 0; ; attempt++) {
    const pushed = await cmds.exec(['push', '-q', p.gitUrl, `HEAD:refs/heads/${p.branch}`]);
    if (pushed.code === 0) return undefined;
    // What the branch holds now decides: ours (applied, answer lost), someone else's, or
    // still the head (the push failed; a transient failure is tried again).
    const now = await remoteHead();
    if (now === commit) return undefined;
    if (now !== p.head) return { kind: 'moved', now };
    const transient = TRANSIENT_GIT_FAILURE.test(`${pushed.stderr}\n${pushed.stdout}`);
    if (!transient || attempt >= delays.length) {
      throw gitFailure(`pushing ${p.branch}`, pushed, transient);
    }
    p.log.warn({ attempt: attempt + 1 }, 'push failed transiently; retrying');
    await new Promise((resolve) => setTimeout(resolve, delays[attempt]));
  }
}

/** The body gains the revision's section; false when GitHub refused (the commit stands). */
async function addRevisionSection(p: PublishRevisionParams, commit: string): Promise<boolean> {
  try {
    const { data } = await p.octokit.rest.pulls.get({
      owner: p.owner,
      repo: p.repo,
      pull_number: p.prNumber,
    });
    await p.octokit.rest.pulls.update({
      owner: p.owner,
      repo: p.repo,
      pull_number: p.prNumber,
      body: withRevision(data.body ?? '', { n: p.revision, text: p.section(commit) }),
    });
    return true;
  } catch (error) {
    // The commit stands; the status comment says the description could not be updated.
    p.log.warn({ err: error, pr: p.prNumber }, 'pull request body update failed');
    return false;
  }
}

/** A one-line reply naming the commit on each thread the run was given, as the budget allows. */
async function replyToThreads(p: PublishRevisionParams, commit: string): Promise<number> {
  let replies = 0;
  for (const id of p.replyTo) {
    if (!p.canSpend()) break;
    try {
      await p.octokit.rest.pulls.createReplyForReviewComment({
        owner: p.owner,
        repo: p.repo,
        pull_number: p.prNumber,
        comment_id: id,
        body: `🐸 Addressed in ${commit} (revision ${p.revision}); please review.`,
      });
      replies++;
    } catch (error) {
      p.log.warn({ err: error, commentId: id }, 'review thread reply failed');
    }
  }
  return replies;
}
