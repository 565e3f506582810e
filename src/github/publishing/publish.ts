// Publishing a run's patch: applied to a clean host clone at the commit the run started from
// (the sandbox's .git is never trusted), committed as the App's bot with a Co-authored-by
// trailer for the person who asked, pushed to `frognano/issue-<N>`, and opened (or updated) as a
// DRAFT pull request that fixes the issue, with a review request for that person.
// The installation token reaches git only through the environment, as an HTTP header
// (GIT_CONFIG_COUNT/KEY/VALUE): never in argv, never on disk, never in a log line.
import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { redactSecrets, registerSecret } from '../../redact.js';
import { commitMessage, defuseReferences } from './commit-message.js';
import { commitPatch } from './commit-patch.js';
import { hostGitEnv } from '../../runner/host-git-env.js';
import type { GitHubClient } from '../octokit.js';

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

export type GitRunner = (
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
) => Promise<GitResult>;

export const runGit: GitRunner = (args, options) =>
  new Promise((resolvePromise, reject) => {
    const child = spawn('git', args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code) =>
      resolvePromise({
        code: code ?? 1,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
  });

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

/** Backoff between attempts of a network git command that failed transiently. */
export const GIT_RETRY_DELAYS_MS = [1000, 3000, 9000];

/** git's words for a failure worth another attempt: the server or the network, not us. */
export const TRANSIENT_GIT_FAILURE =
  /(RPC failed|returned error: 5\d\d|HTTP 5\d\d|Could not resolve host|Connection (reset|refused|timed out)|Operation timed out|early EOF|unexpected disconnect|hung up unexpectedly)/i;

export interface PublishResult {
  branch: string;
  commit: string;
  prNumber: number;
  prUrl: string;
  created: boolean;
  reviewRequested: boolean;
}

export class PublishError extends Error {
  /** The server or the network failed (and kept failing): trying later may work. */
  readonly transient: boolean;
  constructor(message: string, options: { transient?: boolean } = {}) {
    super(message);
    this.name = 'PublishError';
    this.transient = options.transient ?? false;
  }
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

/**
 * The environment every git command runs with (runner/host-git-env.ts, shared by every host git
 * call): no system or global config, an empty HOME, hooks disabled, no prompts, and - for
 * http(s) remotes - the token as an Authorization header scoped to the remote's origin.
 */
export function gitEnvironment(home: string, gitUrl: string, token?: string): NodeJS.ProcessEnv {
  return hostGitEnv({
    home,
    url: gitUrl,
    credential: token ? { username: 'x-access-token', password: token } : undefined,
  });
}

export async function publishPatch(params: PublishParams): Promise<PublishResult> {
  if (params.patch.trim() === '') throw new PublishError('the patch is empty; nothing to publish');
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/i.test(params.baseCommit)) {
    throw new PublishError(`the base commit is not a full commit id: ${params.baseCommit}`);
  }
  const git = params.git ?? runGit;
  const delays = params.retryDelaysMs ?? GIT_RETRY_DELAYS_MS;
  const branch = branchFor(params.issueNumber);
  await mkdir(params.workRoot, { recursive: true });
  // The owner's pid in the name: start-up cleanup removes only what no live process owns.
  const dir = await mkdtemp(join(params.workRoot, `publish-${process.pid}-`));
  const tree = join(dir, 'tree');
  const home = join(dir, 'home');
  await mkdir(tree);
  await mkdir(home);
  try {
    const token = await params.mintToken();
    registerSecret(token);
    const env = gitEnvironment(home, params.gitUrl, token);
    const failure = (what: string, r: GitResult, transient = false) =>
      new PublishError(
        `${what} failed: ${redactSecrets(r.stderr.trim() || r.stdout.trim()).slice(-2000)}`,
        { transient },
      );
    const run = async (args: string[], what: string): Promise<string> => {
      const r = await git(args, { cwd: tree, env });
      if (r.code !== 0) throw failure(what, r);
      return r.stdout;
    };
    /**
     * A command that talks to the remote: a transient failure (the server's 5xx, a dropped
     * connection) is tried again after a backoff. `settled` may say the last attempt took
     * effect after all (a push applied before its answer was lost).
     */
    const runRemote = async (
      args: string[],
      what: string,
      settled?: () => Promise<boolean>,
    ): Promise<string> => {
      for (let attempt = 0; ; attempt++) {
        const r = await git(args, { cwd: tree, env });
        if (r.code === 0) return r.stdout;
        const transient = TRANSIENT_GIT_FAILURE.test(`${r.stderr}\n${r.stdout}`);
        if (!transient || attempt >= delays.length) throw failure(what, r, transient);
        params.log.warn(
          { what, attempt: attempt + 1, error: redactSecrets(r.stderr.trim()).slice(-300) },
          'git failed transiently; retrying',
        );
        await new Promise((resolve) => setTimeout(resolve, delays[attempt]));
        if (settled && (await settled())) return '';
      }
    };
    const remoteHead = async (): Promise<string> => {
      const out = await runRemote(
        ['ls-remote', params.gitUrl, `refs/heads/${branch}`],
        'reading the remote branch',
      );
      return out.split(/\s+/)[0] ?? '';
    };

    const commitAndPush = async (): Promise<string> => {
      const head = await commitPatch({
        run,
        remote: runRemote,
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
      await runRemote(
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
    };

    let commit: string;
    if (params.pushedCommit && (await remoteHead()) === params.pushedCommit) {
      commit = params.pushedCommit;
      params.log.info({ branch, commit }, 'branch already pushed; finishing the pull request');
    } else {
      commit = await commitAndPush();
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
    let reviewRequested = false;
    try {
      await params.octokit.rest.pulls.requestReviewers({
        owner: params.owner,
        repo: params.repo,
        pull_number: pr.number,
        reviewers: [params.coAuthor.login],
      });
      reviewRequested = true;
    } catch (error) {
      // 422 when the person cannot review (e.g. not a collaborator any more): the PR still stands.
      params.log.warn({ err: error, pr: pr.number }, 'review request failed');
    }
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
