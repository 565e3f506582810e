// Publishing a run's patch: applied to a clean host clone at the commit the run started from
// (the sandbox's .git is never trusted), committed as the App's bot with a Co-authored-by
// trailer for the person who asked, pushed to `frognano/issue-<N>`, and opened (or updated) as a
// DRAFT pull request that fixes the issue, with a review request for that person.
// The installation token reaches git only through the environment, as an HTTP header
// (GIT_CONFIG_COUNT/KEY/VALUE): never in argv, never on disk, never in a log line.
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { redactSecrets, registerSecret } from '../../redact.js';
import { commitMessage, defuseReferences } from './commit-message.js';
import { commitPatch } from './commit-patch.js';
import {
  GIT_RETRY_DELAYS_MS,
  type GitCommands,
  type GitRunner,
  gitCommands,
  gitEnvironment,
  makePublishDir,
  PublishError,
  remoteBranchHead,
  runGit,
} from './publish-git.js';
import type { GitHubClient } from '../octokit.js';

// The git side lives in publish-git.ts; its names stay importable from here.
export {
  GIT_RETRY_DELAYS_MS,
  type GitResult,
  type GitRunner,
  gitEnvironment,
  PublishError,
  runGit,
  TRANSIENT_GIT_FAILURE,
} from './publish-git.js';

export interface BotIdentity {
  name: string;
  email: string;
}

export interface PublishParams {
  octokit: GitHubClient;
  owner: string;
  repo: string;
  issueNumber: number;
  issueTitle: string;
  /** Branch the pull request targets (the repository's default branch). */
  baseBranch: string;
  /** The commit the run started from; the patch is applied on top of it. */
  baseCommit: string;
  patch: string;
  /** Clone/push URL of the repository, without credentials. */
  gitUrl: string;
  /** Mints a fresh installation token (tokens last an hour; a run can take most of it). */
  mintToken: () => Promise<string>;
  /** Directory for the temporary clone (removed afterwards). */
  workRoot: string;
  bot: BotIdentity;
  coAuthor: { login: string; id: number };
  /** e.g. users.noreply.github.com, for the co-author's address. */
  noreplyDomain: string;
  /** Renders the pull request body (after the push, so it may mention the commit). */
  body: string;
  log: Logger;
  git?: GitRunner;
  /**
   * The commit an earlier attempt pushed (resumed publishing): when the branch still points at
   * it, nothing is cloned, committed or pushed again; only the pull request is finished.
   */
  pushedCommit?: string;
  /** Called once the branch holds the commit, before any pull request call (to persist it). */
  onPushed?: (commit: string) => Promise<void> | void;
  /** Waits before each new attempt of a git command that failed transiently (HTTP 5xx, a reset). */
  retryDelaysMs?: number[];
}

export interface PublishResult {
  branch: string;
  commit: string;
  prNumber: number;
  prUrl: string;
  created: boolean;
  reviewRequested: boolean;
}

/**
 * Whether publishing may succeed later with the same change: GitHub's API answered an error
 * (a rate limit, 5xx, an outage) or git's remote kept failing transiently. A patch that does
 * not apply or a push the lease refused will not get better by waiting.
 */
export function mayPublishLater(error: unknown): boolean {
  if (error instanceof PublishError) return error.transient;
  return typeof (error as { status?: unknown }).status === 'number';
}

export function branchFor(issueNumber: number): string {
  return `frognano/issue-${issueNumber}`;
}

export async function publishPatch(params: PublishParams): Promise<PublishResult> {
  if (params.patch.trim() === '') throw new PublishError('the patch is empty; nothing to publish');
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/i.test(params.baseCommit)) {
    throw new PublishError(`the base commit is not a full commit id: ${params.baseCommit}`);
  }
  const branch = branchFor(params.issueNumber);
  // The owner's pid in the name: start-up cleanup removes only what no live process owns.
  const { dir, tree, home } = await makePublishDir(params.workRoot, `publish-${process.pid}-`);
  try {
    const token = await params.mintToken();
    registerSecret(token);
    const cmds = gitCommands({
      git: params.git ?? runGit,
      cwd: tree,
      env: gitEnvironment(home, params.gitUrl, token),
      delays: params.retryDelaysMs ?? GIT_RETRY_DELAYS_MS,
      onRetry: (what, attempt, r) =>
        params.log.warn(
          { what, attempt, error: redactSecrets(r.stderr.trim()).slice(-300) },
          'git failed transiently; retrying',
        ),
    });
    const remoteHead = () =>
      remoteBranchHead(cmds, params.gitUrl, branch, 'reading the remote branch');

    let commit: string;
    if (params.pushedCommit && (await remoteHead()) === params.pushedCommit) {
      commit = params.pushedCommit;
      params.log.info({ branch, commit }, 'branch already pushed; finishing the pull request');
    } else {
      commit = await commitAndPush(params, cmds, dir, branch, remoteHead);
      await params.onPushed?.(commit);
    }
    const pr = await ensureDraftPullRequest(params.octokit, {
      owner: params.owner,
      repo: params.repo,
      head: branch,
      base: params.baseBranch,
      // A squash merge proposes the PR title as the commit subject: defused like the commit's.
      title: `frognano: ${defuseReferences(params.issueTitle.replace(/\s+/g, ' ').trim())}`.slice(
        0,
        240,
      ),
      body: params.body,
    });
    const reviewRequested = await requestReview(params, pr.number);
    return {
      branch,
      commit,
      prNumber: pr.number,
      prUrl: pr.url,
      created: pr.created,
      reviewRequested,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The patch committed on the base commit and pushed to `branch`; its commit id. */
async function commitAndPush(
  params: PublishParams,
  cmds: GitCommands,
  dir: string,
  branch: string,
  remoteHead: () => Promise<string>,
): Promise<string> {
  const head = await commitPatch({
    run: cmds.run,
    remote: cmds.remote,
    dir,
    gitUrl: params.gitUrl,
    from: { commit: params.baseCommit, what: 'the base commit' },
    patch: params.patch,
    message: commitMessage(params),
    bot: params.bot,
  });

  // Force only over what we saw: a retry replaces our own branch, but a push that raced us
  // (ours or a human's) is not silently overwritten - also when a push is tried again.
  const expected = await remoteHead();
  await cmds.remote(
    [
      'push',
      '-q',
      `--force-with-lease=refs/heads/${branch}:${expected}`,
      params.gitUrl,
      `HEAD:refs/heads/${branch}`,
    ],
    `pushing ${branch}`,
    async () => (await remoteHead()) === head,
  );
  params.log.info({ branch, commit: head, retry: expected !== '' }, 'pushed branch');
  return head;
}

/** Asks the person who asked for the run to review it; false when GitHub refused. */
async function requestReview(params: PublishParams, prNumber: number): Promise<boolean> {
  try {
    await params.octokit.rest.pulls.requestReviewers({
      owner: params.owner,
      repo: params.repo,
      pull_number: prNumber,
      reviewers: [params.coAuthor.login],
    });
    return true;
  } catch (error) {
    // 422 when the person cannot review (e.g. not a collaborator any more): the PR still stands.
    params.log.warn({ err: error, pr: prNumber }, 'review request failed');
    return false;
  }
}

/** Opens a draft PR for `head`, or updates the open one; safe to repeat. */
export async function ensureDraftPullRequest(
  octokit: GitHubClient,
  p: { owner: string; repo: string; head: string; base: string; title: string; body: string },
): Promise<{ number: number; url: string; created: boolean }> {
  const { data: open } = await octokit.rest.pulls.list({
    owner: p.owner,
    repo: p.repo,
    head: `${p.owner}:${p.head}`,
    state: 'open',
    per_page: 1,
  });
  const existing = open[0];
  if (existing) {
    await octokit.rest.pulls.update({
      owner: p.owner,
      repo: p.repo,
      pull_number: existing.number,
      title: p.title,
      body: p.body,
    });
    return { number: existing.number, url: existing.html_url, created: false };
  }
  const { data } = await octokit.rest.pulls.create({
    owner: p.owner,
    repo: p.repo,
    head: p.head,
    base: p.base,
    title: p.title,
    body: p.body,
    draft: true,
    maintainer_can_modify: true,
  });
  return { number: data.number, url: data.html_url, created: true };
}

/**
 * The App's commit identity `<slug>[bot] <id+slug[bot]@noreply>`, so GitHub shows the commit
 * as made by the App. Two REST calls, made once per process: `GET /app` with the App's JWT
 * client, and `GET /users/<slug>[bot]` with an installation's client, because @octokit/auth-app
 * signs only `/app…` routes with the JWT and refuses any other route without an installation.
 */
export async function resolveBotIdentity(
  clients: { app: GitHubClient; installation: GitHubClient },
  noreplyDomain: string,
): Promise<BotIdentity> {
  const { data: app } = await clients.app.rest.apps.getAuthenticated();
  const slug = app?.slug;
  if (!slug) throw new Error('GET /app returned no slug');
  const login = `${slug}[bot]`;
  const { data: user } = await clients.installation.rest.users.getByUsername({ username: login });
  return { name: login, email: `${user.id}+${login}@${noreplyDomain}` };
}

export function noreplyDomainFor(gitBaseUrl: string): string {
  if (!/^https?:/i.test(gitBaseUrl)) return 'users.noreply.github.com';
  const host = new URL(gitBaseUrl).hostname;
  return host === 'github.com' ? 'users.noreply.github.com' : `users.noreply.${host}`;
}

/** A publish directory older than this is nobody's, whatever its pid says (pids get reused). */
export const PUBLISH_DIR_MAX_AGE_MS = 6 * 3600_000;

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Start-up: removes `publish-*` clones (the patch, the commit message, a checkout) that a
 * process killed mid-publish left behind. Only those no live process owns: their owner pid is
 * this process's (a previous life under the same pid, as in a container) or dead, or they are
 * older than any publish takes. Returns the names removed.
 */
export async function removeStalePublishDirs(
  workRoot: string,
  options: { isAlive?: (pid: number) => boolean; now?: number; maxAgeMs?: number } = {},
): Promise<string[]> {
  const isAlive = options.isAlive ?? processAlive;
  const now = options.now ?? Date.now();
  const maxAge = options.maxAgeMs ?? PUBLISH_DIR_MAX_AGE_MS;
  let names: string[];
  try {
    names = await readdir(workRoot);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith('publish-')) continue;
    const path = join(workRoot, name);
    const info = await stat(path).catch(() => undefined);
    if (!info) continue;
    const pid = /^publish-(\d+)-/.exec(name)?.[1];
    const owner = pid === undefined ? undefined : Number(pid);
    const orphan =
      now - info.mtimeMs > maxAge ||
      (owner !== undefined && (owner === process.pid || !isAlive(owner)));
    if (!orphan) continue;
    await rm(path, { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}
