// `/frognano use K` on the bot's pull request: replace the branch's change with attempt K's
// patch (kept with the run) as ONE new commit on top of the branch (a fast-forward), and
// re-render the description with K as the published attempt. The patch is applied to a clean
// clone at the commit the run started from, as publishing does; the sandbox is not involved.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { redactSecrets, registerSecret } from '../../redact.js';
import type { AttemptSummary, RunResult } from '../../runner/run-types.js';
import type { GitHubClient } from '../octokit.js';
import { renderPrBody } from './pr-body.js';
import type { RunArtifacts, RunReader } from '../../queue/types.js';
import type { IssueJob } from '../job.js';
import {
  gitEnvironment,
  noreplyDomainFor,
  resolveBotIdentity,
  runGit,
  type BotIdentity,
  type GitRunner,
} from './publish.js';
import { publishedRun, type PublishedRun } from './published-run.js';
import { dataPaths } from '../../data-dir.js';

export type { PublishedRun } from './published-run.js';

export interface UseAttemptParams {
  octokit: GitHubClient;
  owner: string;
  repo: string;
  pullNumber: number;
  /** Undefined: what followed `use` is not a whole number. */
  attempt: number | undefined;
  /** The person who commented (already permission-checked). */
  by: { login: string; id: number };
  /** The latest finished run of issue N (the branch is `frognano/issue-N`). */
  findRun: (issueNumber: number) => Promise<PublishedRun | undefined>;
  gitUrl: string;
  mintToken: () => Promise<string>;
  workRoot: string;
  bot: BotIdentity;
  noreplyDomain: string;
  log: Logger;
  git?: GitRunner;
}

export type UseAttemptOutcome =
  | { kind: 'switched'; commit: string; attempt: number }
  /** One sentence for the person who asked: why nothing changed. */
  | { kind: 'refused'; reason: string };

export async function useAttempt(p: UseAttemptParams): Promise<UseAttemptOutcome> {
  const refuse = (reason: string): UseAttemptOutcome => ({ kind: 'refused', reason });
  const { data: pr } = await p.octokit.rest.pulls.get({
    owner: p.owner,
    repo: p.repo,
    pull_number: p.pullNumber,
  });
  const branch = /^frognano\/issue-(\d+)$/.exec(pr.head.ref);
  const sameRepo = pr.head.repo?.full_name?.toLowerCase() === `${p.owner}/${p.repo}`.toLowerCase();
  if (!branch || !sameRepo || pr.user?.login !== p.bot.name)
    return refuse('`/frognano use` works only on pull requests frognano opened.');
  if (pr.state !== 'open') return refuse('this pull request is closed.');
  const issueNumber = Number(branch[1]);
  const run = await p.findRun(issueNumber);
  if (!run)
    return refuse(
      'no record of the run behind this pull request is kept any more (see FROGNANO_RETENTION_DAYS): there is nothing to switch to.',
    );
  const attempts = run.result.attempts;
  if (!attempts || attempts.length < 2)
    return refuse(
      'the run behind this pull request had one attempt: there is nothing to switch to.',
    );
  const range = `the run had ${attempts.length} attempts; pick one from 1 to ${attempts.length}.`;
  const k = p.attempt;
  if (k === undefined)
    return refuse(
      `\`/frognano use\` takes one attempt number: ${range} (For feedback that starts with a number, put a word before it.)`,
    );
  const chosen = attempts.find((a) => a.attempt === k);
  if (!chosen) return refuse(range);
  if (run.result.selectedAttempt === k)
    return refuse(`attempt ${k} is already the change of this pull request.`);
  if (chosen.patch.trim() === '') return refuse(`attempt ${k} changed nothing.`);
  if (chosen.violations.length > 0)
    return refuse(
      `attempt ${k}'s change breaks the repository policy (${chosen.violations.map((v) => v.rule).join(', ')}).`,
    );
  if (!run.result.baseCommit) return refuse('the run did not record the commit it started from.');

  const commit = await commitAttempt(p, {
    branch: pr.head.ref,
    head: pr.head.sha,
    baseCommit: run.result.baseCommit,
    patch: chosen.patch,
    message: useMessage(p, k, issueNumber, run.runId),
  });
  const switched = withSelected(run.result, k, p.by.login);
  await p.octokit.rest.pulls.update({
    owner: p.owner,
    repo: p.repo,
    pull_number: p.pullNumber,
    body: renderPrBody({
      result: switched,
      issueNumber,
      triggeredBy: run.requestedBy,
      ...(run.trajectoryUrl ? { trajectoryUrl: run.trajectoryUrl } : {}),
      ...(run.model ? { model: run.model } : {}),
    }),
  });
  await run
    .save(switched)
    .catch((error: unknown) =>
      p.log.warn({ err: error, runId: run.runId }, 'could not record the new selection'),
    );
  p.log.info({ pr: p.pullNumber, attempt: k, commit }, 'switched to another attempt');
  return { kind: 'switched', commit, attempt: k };
}

/**
 * base + attempt K's patch, committed with the branch head as its parent: the branch moves
 * forward to exactly attempt K's tree. Pushed only over the head we read (a push that raced us
 * is not overwritten).
 */
async function commitAttempt(
  p: UseAttemptParams,
  c: { branch: string; head: string; baseCommit: string; patch: string; message: string },
): Promise<string> {
  const git = p.git ?? runGit;
  await mkdir(p.workRoot, { recursive: true });
  const dir = await mkdtemp(join(p.workRoot, 'use-'));
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
      ['fetch', '-q', '--no-tags', '--depth=1', p.gitUrl, c.baseCommit, `refs/heads/${c.branch}`],
      'fetching the base commit and the branch',
    );
    await run(['checkout', '-q', '--detach', c.baseCommit], 'checking out the base commit');
    const patchFile = join(dir, 'attempt.patch');
    await writeFile(patchFile, c.patch.endsWith('\n') ? c.patch : `${c.patch}\n`);
    await run(['apply', '--index', '--whitespace=nowarn', patchFile], 'applying the patch');
    const treeId = (await run(['write-tree'], 'writing the tree')).trim();
    const messageFile = join(dir, 'message.txt');
    await writeFile(messageFile, c.message);
    const commit = (
      await run(['commit-tree', treeId, '-p', c.head, '-F', messageFile], 'committing')
    ).trim();
    await run(
      [
        'push',
        '-q',
        `--force-with-lease=refs/heads/${c.branch}:${c.head}`,
        p.gitUrl,
        `${commit}:refs/heads/${c.branch}`,
      ],
      `pushing ${c.branch}`,
    );
    return commit;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function useMessage(p: UseAttemptParams, k: number, issueNumber: number, runId: string): string {
  const email = `${p.by.id}+${p.by.login}@${p.noreplyDomain}`;
  return [
    `frognano: use attempt ${k} for #${issueNumber}`,
    '',
    `Replaces the change with attempt ${k} of run ${runId}, as @${p.by.login} asked with \`/frognano use ${k}\`.`,
    '',
    `Co-authored-by: ${p.by.login} <${email}>`,
    '',
  ].join('\n');
}

/** The run's result as if attempt K had been selected: its fields on top, the flags moved. */
export function withSelected(result: RunResult, attempt: number, by: string): RunResult {
  const chosen = result.attempts!.find((a) => a.attempt === attempt)!;
  const attempts: AttemptSummary[] = result.attempts!.map((a) => ({
    ...a,
    selected: a.attempt === attempt,
    ...(a.attempt === attempt
      ? { reason: `chosen by @${by} with /frognano use ${attempt} (${a.reason})` }
      : {}),
  }));
  const { verifyAfter, agentTests, patchFacts, trajectoryPath, stepList } = chosen;
  const switched: RunResult = {
    ...result,
    exitReason: chosen.exitReason,
    patch: chosen.patch,
    partial: chosen.partial,
    filesChanged: chosen.filesChanged,
    finalMessage: chosen.finalMessage,
    violations: chosen.violations,
    steps: stepList ?? [],
    budgets: {
      ...result.budgets,
      steps: chosen.steps,
      contextTokens: chosen.contextTokens,
      promptTokens: chosen.promptTokens,
      completionTokens: chosen.completionTokens,
    },
    attempts,
    selectedAttempt: attempt,
  };
  delete switched.error;
  if (chosen.error) switched.error = chosen.error;
  delete switched.verifyAfter;
  delete switched.agentTests;
  delete switched.patchFacts;
  delete switched.trajectoryPath;
  if (verifyAfter) switched.verifyAfter = verifyAfter;
  if (agentTests) switched.agentTests = agentTests;
  if (patchFacts) switched.patchFacts = patchFacts;
  if (trajectoryPath) switched.trajectoryPath = trajectoryPath;
  return switched;
}

export interface UseCommandDeps {
  queue: RunReader<IssueJob> & RunArtifacts;
  dataDir: string;
  /** How long a run record saved to a shared queue is kept (FROGNANO_RETENTION_DAYS). */
  artifactTtlSeconds?: number;
  gitBaseUrl: string;
  publicUrl?: string;
  /** The App's own client (JWT): mints installation tokens, names the bot. */
  appAuth: () => Promise<GitHubClient>;
  botIdentity?: BotIdentity;
  log: Logger;
  git?: GitRunner;
}

/**
 * Intake's `onUse`: finds the run that published the pull request (the latest one that opened
 * or updated it), switches, and answers in one sentence. Failures are answered too: a retried
 * delivery must not push twice.
 */
export function useCommandHandler(deps: UseCommandDeps) {
  let identity: Promise<BotIdentity> | undefined;
  const bot = (installation: GitHubClient): Promise<BotIdentity> => {
    if (deps.botIdentity) return Promise.resolve(deps.botIdentity);
    identity ??= deps
      .appAuth()
      .then((app) => resolveBotIdentity({ app, installation }, noreplyDomainFor(deps.gitBaseUrl)));
    identity.catch(() => (identity = undefined));
    return identity;
  };
  return async (
    decision: { owner: string; repo: string; issueNumber: number; installationId: number } & {
      attempt: number | undefined;
      sender: { login: string; id: number };
    },
    octokit: GitHubClient,
  ): Promise<string> => {
    const log = deps.log.child({
      pr: `${decision.owner}/${decision.repo}#${decision.issueNumber}`,
    });
    try {
      const outcome = await useAttempt({
        octokit,
        owner: decision.owner,
        repo: decision.repo,
        pullNumber: decision.issueNumber,
        attempt: decision.attempt,
        by: decision.sender,
        findRun: (issueNumber) => publishedRun(deps, decision, issueNumber),
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
        noreplyDomain: noreplyDomainFor(deps.gitBaseUrl),
        log,
        ...(deps.git ? { git: deps.git } : {}),
      });
      return outcome.kind === 'switched'
        ? `switched this pull request to attempt ${outcome.attempt} (commit ${outcome.commit.slice(0, 12)}).`
        : `nothing changed: ${outcome.reason}`;
    } catch (error) {
      log.error({ err: error }, '/frognano use failed');
      return `switching failed: ${redactSecrets(error instanceof Error ? error.message : String(error)).split('\n')[0]}`;
    }
  };
}
