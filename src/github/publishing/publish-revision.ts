// Publishing a follow-up: the patch applied to a clean host clone at the pull request's head
// (the commit the run started from), committed as the App's bot, and pushed on the same branch
// as a fast-forward only. If the branch moved after the run started (someone pushed), nothing
// is overwritten: the caller says so and stops. Then the pull request's body gains a "Revision
// N" section (the PR stays a draft: it is never marked ready here), and each review thread the
// run was given gets a one-line reply naming the commit.
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { redactSecrets, registerSecret } from '../../redact.js';
import { commitMessage } from './commit-message.js';
import { commitPatch } from './commit-patch.js';
import type { GitHubClient } from '../octokit.js';
import {
  type BotIdentity,
  GIT_RETRY_DELAYS_MS,
  type GitResult,
  type GitRunner,
  gitEnvironment,
  PublishError,
  runGit,
  TRANSIENT_GIT_FAILURE,
} from './publish.js';
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
  const git = p.git ?? runGit;
  await mkdir(p.workRoot, { recursive: true });
  // `publish-<pid>-`: start-up cleanup (removeStalePublishDirs) finds it after a crash.
  const dir = await mkdtemp(join(p.workRoot, `publish-${process.pid}-revision-`));
  const tree = join(dir, 'tree');
  const home = join(dir, 'home');
  await mkdir(tree);
  await mkdir(home);
  try {
    const token = await p.mintToken();
    registerSecret(token);
    const env = gitEnvironment(home, p.gitUrl, token);
    const exec = (args: string[]) => git(args, { cwd: tree, env });
    const failure = (what: string, r: GitResult, transient = false) =>
      new PublishError(
        `${what} failed: ${redactSecrets(r.stderr.trim() || r.stdout.trim()).slice(-2000)}`,
        { transient },
      );
    const run = async (args: string[], what: string): Promise<string> => {
      const r = await exec(args);
      if (r.code !== 0) throw failure(what, r);
      return r.stdout;
    };
    // Reads from the remote are retried after a backoff when the server or network failed.
    const delays = p.retryDelaysMs ?? GIT_RETRY_DELAYS_MS;
    const runRemote = async (args: string[], what: string): Promise<string> => {
      for (let attempt = 0; ; attempt++) {
        const r = await exec(args);
        if (r.code === 0) return r.stdout;
        const transient = TRANSIENT_GIT_FAILURE.test(`${r.stderr}\n${r.stdout}`);
        if (!transient || attempt >= delays.length) throw failure(what, r, transient);
        p.log.warn({ what, attempt: attempt + 1 }, 'git failed transiently; retrying');
        await new Promise((resolve) => setTimeout(resolve, delays[attempt]));
      }
    };
    const remoteHead = async (): Promise<string> =>
      (
        await runRemote(['ls-remote', p.gitUrl, `refs/heads/${p.branch}`], 'reading the branch')
      ).split(/\s+/)[0] ?? '';

    const commit = await commitPatch({
      run,
      remote: runRemote,
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

    const before = await remoteHead();
    if (before !== p.head) return { kind: 'moved', now: before };
    // No force of any kind: git itself refuses anything but a fast-forward, so a push that
    // lands between the check above and this one is not overwritten either.
    for (let attempt = 0; ; attempt++) {
      const pushed = await exec(['push', '-q', p.gitUrl, `HEAD:refs/heads/${p.branch}`]);
      if (pushed.code === 0) break;
      // What the branch holds now decides: ours (applied, answer lost), someone else's, or
      // still the head (the push failed; a transient failure is tried again).
      const now = await remoteHead();
      if (now === commit) break;
      if (now !== p.head) return { kind: 'moved', now };
      const transient = TRANSIENT_GIT_FAILURE.test(`${pushed.stderr}\n${pushed.stdout}`);
      if (!transient || attempt >= delays.length) {
        throw failure(`pushing ${p.branch}`, pushed, transient);
      }
      p.log.warn({ attempt: attempt + 1 }, 'push failed transiently; retrying');
      await new Promise((resolve) => setTimeout(resolve, delays[attempt]));
    }
    p.log.info({ branch: p.branch, commit, parent: p.head }, 'pushed revision');

    let bodyUpdated = false;
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
      bodyUpdated = true;
    } catch (error) {
      // The commit stands; the status comment says the description could not be updated.
      p.log.warn({ err: error, pr: p.prNumber }, 'pull request body update failed');
    }
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
    return { kind: 'pushed', commit, bodyUpdated, replies };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
