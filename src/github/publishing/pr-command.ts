// What `/frognano use K` and `/frognano ci` share, in the App and in the Action alike: the
// answer to a permitted command on the bot's pull request (failures answered too: a retried
// delivery must not push twice), and the scratch clone each pushes ONE commit from, with a fresh
// installation token, committed as the bot and removed when done.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { dataPaths } from '../../data-dir.js';
import { redactSecrets, registerSecret } from '../../redact.js';
import type { GitHubClient } from '../octokit.js';
import { gitEnvironment, runGit, type BotIdentity, type GitRunner } from './publish.js';

export interface PrCommandDeps {
  dataDir: string;
  gitBaseUrl: string;
  /** A fresh installation token for git (the App mints one; a workflow has its own). */
  mintToken: (installationId: number) => Promise<string>;
  /** Who commits, and whose pull requests these are, asked through the installation's client. */
  bot: (installation: GitHubClient) => Promise<BotIdentity>;
  log: Logger;
  git?: GitRunner;
}

/** A command on the bot's pull request, as intake hands it over after its checks. */
export interface PrCommandDecision {
  owner: string;
  repo: string;
  issueNumber: number;
  installationId: number;
  sender: { login: string; id: number };
}

/** What every command's work is given: the pull request, who asked, where and how to push. */
export interface PrCommandTarget {
  octokit: GitHubClient;
  owner: string;
  repo: string;
  pullNumber: number;
  by: { login: string; id: number };
  gitUrl: string;
  mintToken: () => Promise<string>;
  workRoot: string;
  bot: BotIdentity;
  log: Logger;
  git?: GitRunner;
}

/**
 * Intake's handler for one command: `act` does the work on the target and says the reply;
 * a failure is logged as `<name> failed` and answered with `failed(error)`.
 */
export function prCommand<D extends PrCommandDecision>(
  deps: PrCommandDeps,
  name: string,
  act: (target: PrCommandTarget, decision: D) => Promise<string>,
  failed: (error: unknown) => string,
) {
  return async (decision: D, octokit: GitHubClient): Promise<string> => {
    const log = deps.log.child({
      pr: `${decision.owner}/${decision.repo}#${decision.issueNumber}`,
    });
    try {
      const target: PrCommandTarget = {
        octokit,
        owner: decision.owner,
        repo: decision.repo,
        pullNumber: decision.issueNumber,
        by: decision.sender,
        gitUrl: `${deps.gitBaseUrl}/${decision.owner}/${decision.repo}.git`,
        mintToken: () => deps.mintToken(decision.installationId),
        workRoot: dataPaths.publishDir(deps.dataDir),
        bot: await deps.bot(octokit),
        log,
        ...(deps.git ? { git: deps.git } : {}),
      };
      return await act(target, decision);
    } catch (error) {
      log.error({ err: error }, `${name} failed`);
      return failed(error);
    }
  };
}

/** The first line of an error, secrets redacted: what a reply may say of a failure. */
export function failureLine(error: unknown): string {
  return redactSecrets(error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}

/** A git command in the scratch clone; throws `<what> failed: <git's words>` when it fails. */
export type ScratchGit = (args: string[], what: string) => Promise<string>;

/**
 * An empty repository under `workRoot` (named `<prefix>…`), with git set up to fetch and push
 * `gitUrl` with a fresh token and to commit as the bot; removed when `work` is done.
 */
export async function inScratchClone<T>(
  p: Pick<PrCommandTarget, 'workRoot' | 'gitUrl' | 'mintToken' | 'bot' | 'git'>,
  prefix: string,
  work: (git: ScratchGit, dir: string) => Promise<T>,
): Promise<T> {
  const git = p.git ?? runGit;
  await mkdir(p.workRoot, { recursive: true });
  const dir = await mkdtemp(join(p.workRoot, prefix));
  const tree = join(dir, 'tree');
  const home = join(dir, 'home');
  await mkdir(tree);
  await mkdir(home);
  try {
    const token = await p.mintToken();
    registerSecret(token);
    const env = {
      ...gitEnvironment(home, p.gitUrl, token),
      GIT_AUTHOR_NAME: p.bot.name,
      GIT_AUTHOR_EMAIL: p.bot.email,
      GIT_COMMITTER_NAME: p.bot.name,
      GIT_COMMITTER_EMAIL: p.bot.email,
    };
    const run: ScratchGit = async (args, what) => {
      const r = await git(args, { cwd: tree, env });
      if (r.code !== 0)
        throw new Error(
          `${what} failed: ${redactSecrets(r.stderr.trim() || r.stdout.trim()).slice(-2000)}`,
        );
      return r.stdout;
    };
    await run(['init', '-q'], 'git init');
    return await work(run, dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
