// `/frognano use K` on the bot's pull request: replace the branch's change with attempt K's
// patch (kept with the run) as ONE new commit on top of the branch (a fast-forward), and
// re-render the description with K as the published attempt. The patch is applied to a clean
// clone at the commit the run started from, as publishing does; the sandbox is not involved.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { AttemptSummary, RunResult } from '../../runner/run-types.js';
import type { GitHubClient } from '../octokit.js';
import { renderPrBody } from './pr-body.js';
import type { RunArtifacts, RunReader } from '../../queue/types.js';
import type { IssueJob } from '../job.js';
import {
  failureLine,
  inScratchClone,
  prCommand,
  type PrCommandDecision,
  type PrCommandDeps,
} from './pr-command.js';
import { noreplyDomainFor, type BotIdentity, type GitRunner } from './publish.js';
import { publishedRun, type PublishedRun } from './published-run.js';

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
  return inScratchClone(p, 'use-', async (run, dir) => {
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
  });
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

export interface UseCommandDeps extends PrCommandDeps {
  queue: RunReader<IssueJob> & RunArtifacts;
  /** How long a run record saved to a shared queue is kept (FROGNANO_RETENTION_DAYS). */
  artifactTtlSeconds?: number;
  publicUrl?: string;
  /**
   * The reply when no record of the run is kept here at all (the Action: a workflow run keeps
   * its attempts in RUNNER_TEMP); default: the refusal's own reason.
   */
  notKeptReply?: string;
}

/**
 * Intake's `onUse`: finds the run that published the pull request (the latest one that opened
 * or updated it), switches, and answers in one sentence. Failures are answered too: a retried
 * delivery must not push twice.
 */
export function useCommandHandler(deps: UseCommandDeps) {
  return prCommand<PrCommandDecision & { attempt: number | undefined }>(
    deps,
    '/frognano use',
    async (target, decision) => {
      let kept = true;
      const outcome = await useAttempt({
        ...target,
        attempt: decision.attempt,
        findRun: async (issueNumber) => {
          const run = await publishedRun(deps, decision, issueNumber);
          kept = run !== undefined;
          return run;
        },
        noreplyDomain: noreplyDomainFor(deps.gitBaseUrl),
      });
      if (outcome.kind === 'switched') {
        return `switched this pull request to attempt ${outcome.attempt} (commit ${outcome.commit.slice(0, 12)}).`;
      }
      return !kept && deps.notKeptReply ? deps.notKeptReply : `nothing changed: ${outcome.reason}`;
    },
    (error) => `switching failed: ${failureLine(error)}`,
  );
}
