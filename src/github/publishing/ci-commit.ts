// `/frognano ci` on the bot's pull request: the bot's commits say `[skip ci]` so a repository's
// workflows never run the model's code unasked; once a maintainer has read the patch, this pushes
// ONE empty commit (the head's tree, the head as its parent) without `[skip ci]`, so the
// workflows run on the patch. Fast-forward only: a plain push of a child of the head we read,
// never forced (a push that raced us is not overwritten). Whose pull request it is and whether
// the sender may write were checked by intake before this runs.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { redactSecrets, registerSecret } from '../../redact.js';
import type { GitHubClient } from '../octokit.js';
import { dataPaths } from '../../data-dir.js';
import {
  gitEnvironment,
  noreplyDomainFor,
  resolveBotIdentity,
  runGit,
  type BotIdentity,
  type GitRunner,
} from './publish.js';

export interface CiCommitParams {
  octokit: GitHubClient;
  owner: string;
  repo: string;
  pullNumber: number;
  /** The person who commented (already permission-checked). */
  by: { login: string; id: number };
  gitUrl: string;
  mintToken: () => Promise<string>;
  workRoot: string;
  bot: BotIdentity;
  log: Logger;
  git?: GitRunner;
}

export type CiCommitOutcome =
  | { kind: 'pushed'; commit: string }
  /** One sentence for the person who asked: why nothing was pushed. */
  | { kind: 'refused'; reason: string };

export async function pushCiCommit(p: CiCommitParams): Promise<CiCommitOutcome> {
  const { data: pr } = await p.octokit.rest.pulls.get({
    owner: p.owner,
    repo: p.repo,
    pull_number: p.pullNumber,
  });
  if (pr.state !== 'open') return { kind: 'refused', reason: 'this pull request is closed.' };
  if (!/^frognano\/issue-\d+$/.test(pr.head.ref))
    return {
      kind: 'refused',
      reason: '`/frognano ci` works only on pull requests frognano opened.',
    };
  const commit = await commitEmpty(p, { branch: pr.head.ref, head: pr.head.sha });
  p.log.info({ pr: p.pullNumber, commit, by: p.by.login }, 'pushed the commit that runs CI');
  return { kind: 'pushed', commit };
}

/** The message names who asked; it must not say `[skip ci]` (that is the point). */
export function ciMessage(by: { login: string }): string {
  return [
    `frognano: run CI (requested by @${by.login})`,
    '',
    `An empty commit: @${by.login} asked with \`/frognano ci\` for the repository's workflows to run on this change.`,
    '',
  ].join('\n');
}

async function commitEmpty(
  p: CiCommitParams,
  c: { branch: string; head: string },
): Promise<string> {
  const git = p.git ?? runGit;
  await mkdir(p.workRoot, { recursive: true });
  const dir = await mkdtemp(join(p.workRoot, 'ci-'));
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
    const run = async (args: string[], what: string): Promise<string> => {
      const r = await git(args, { cwd: tree, env });
      if (r.code !== 0)
        throw new Error(
          `${what} failed: ${redactSecrets(r.stderr.trim() || r.stdout.trim()).slice(-2000)}`,
        );
      return r.stdout;
    };
    await run(['init', '-q'], 'git init');
    await run(
      ['fetch', '-q', '--no-tags', '--depth=1', p.gitUrl, `refs/heads/${c.branch}`],
      'fetching the branch',
    );
    const fetched = (await run(['rev-parse', 'FETCH_HEAD'], 'reading the branch')).trim();
    if (fetched !== c.head)
      throw new Error(
        `the branch ${c.branch} moved while asking (now ${fetched.slice(0, 12)}); comment again`,
      );
    const messageFile = join(dir, 'message.txt');
    await writeFile(messageFile, ciMessage(p.by));
    const commit = (
      await run(['commit-tree', `${c.head}^{tree}`, '-p', c.head, '-F', messageFile], 'committing')
    ).trim();
    // No force: the push is a fast-forward or it fails.
    await run(['push', '-q', p.gitUrl, `${commit}:refs/heads/${c.branch}`], `pushing ${c.branch}`);
    return commit;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The reply to the person who asked, after `@login, `. */
export function ciReply(outcome: CiCommitOutcome): string {
  return outcome.kind === 'pushed'
    ? `pushed commit ${outcome.commit.slice(0, 12)} (empty, without \`[skip ci]\`): the repository's workflows now run on this pull request.`
    : `nothing pushed: ${outcome.reason}`;
}

/** A failure, answered: a retried delivery must not push twice. */
export function ciFailedReply(error: unknown): string {
  return `pushing the CI commit failed: ${redactSecrets(error instanceof Error ? error.message : String(error)).split('\n')[0]}`;
}

export interface CiCommandDeps {
  gitBaseUrl: string;
  dataDir: string;
  /** The App's own client (JWT): mints installation tokens, names the bot. */
  appAuth: () => Promise<GitHubClient>;
  botIdentity?: BotIdentity;
  log: Logger;
  git?: GitRunner;
}

type CiDecision = { owner: string; repo: string; issueNumber: number; installationId: number } & {
  sender: { login: string; id: number };
};

/** Intake's `onCi` for the App: pushes with an installation token, answers in one sentence. */
export function ciCommandHandler(deps: CiCommandDeps) {
  let identity: Promise<BotIdentity> | undefined;
  const bot = (installation: GitHubClient): Promise<BotIdentity> => {
    if (deps.botIdentity) return Promise.resolve(deps.botIdentity);
    identity ??= deps
      .appAuth()
      .then((app) => resolveBotIdentity({ app, installation }, noreplyDomainFor(deps.gitBaseUrl)));
    identity.catch(() => (identity = undefined));
    return identity;
  };
  return async (decision: CiDecision, octokit: GitHubClient): Promise<string> => {
    const log = deps.log.child({
      pr: `${decision.owner}/${decision.repo}#${decision.issueNumber}`,
    });
    try {
      const outcome = await pushCiCommit({
        octokit,
        owner: decision.owner,
        repo: decision.repo,
        pullNumber: decision.issueNumber,
        by: decision.sender,
        gitUrl: `${deps.gitBaseUrl}/${decision.owner}/${decision.repo}.git`,
        mintToken: async () => {
          const app = await deps.appAuth();
          const { data } = await app.rest.apps.createInstallationAccessToken({
            installation_id: decision.installationId,
          });
          return data.token;
        },
        workRoot: dataPaths.publishDir(deps.dataDir),
        bot: await bot(octokit),
        log,
        ...(deps.git ? { git: deps.git } : {}),
      });
      return ciReply(outcome);
    } catch (error) {
      log.error({ err: error }, '/frognano ci failed');
      return ciFailedReply(error);
    }
  };
}
