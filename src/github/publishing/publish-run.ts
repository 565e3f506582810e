// Publishing a run's change as a draft pull request, through a record kept on disk first: a
// publish that a restart or a push failure interrupts is finished later without the model.
import type { Logger } from 'pino';
import { dataPaths } from '../../data-dir.js';
import type { RunResult } from '../../runner/run-types.js';
import { redactSecrets } from '../../redact.js';
import { runPageUrl } from '../../web/index.js';
import { workflowRunLink } from '../workflow-run.js';
import { issueKey, type IssueJob } from '../job.js';
import type { GitHubClient } from '../octokit.js';
import {
  findPendingPublishForIssue,
  loadPendingPublish,
  type PendingPublish,
  removePendingPublish,
  removePendingPublishes,
  savePendingPublish,
} from './pending-publish.js';
import { renderPrBody } from './pr-body.js';
import {
  type BotIdentity,
  type GitRunner,
  mayPublishLater,
  noreplyDomainFor,
  publishPatch,
} from './publish.js';
import { evidenceOf, writePublishedAttempt } from './revision-record.js';
import type { Notes, RunReader } from '../../queue/types.js';
import { type StatusState, verificationLine } from '../status/index.js';

/** Where publishing works and what it records. */
export interface PublishDeps {
  queue: RunReader<IssueJob> & Notes;
  /** Publish clones and kept changes live under here. */
  dataDir: string;
  gitBaseUrl: string;
  publicUrl?: string;
  /** Actions mode: the workflow run's page, linked with the run's artifact. */
  workflowRunUrl?: string;
  git?: GitRunner;
  log: Logger;
}

/** What publishing a run needs from its session. */
export interface PublishContext {
  octokit: GitHubClient;
  botIdentity: () => Promise<BotIdentity>;
  mintToken: () => Promise<string>;
  gitUrl: string;
  log: Logger;
}

/** Keeps the change on disk, then opens the draft pull request. */
export async function publishRun(
  deps: PublishDeps,
  run: { job: IssueJob; runId: string; result: RunResult },
  ctx: PublishContext,
): Promise<StatusState> {
  const { job, runId, result } = run;
  if (!result.baseCommit) {
    return {
      kind: 'failed',
      reason: 'the run did not report the commit it started from, so the change cannot be applied.',
    };
  }
  const trajectoryUrl =
    deps.publicUrl && result.trajectoryPath ? runPageUrl(deps.publicUrl, runId) : undefined;
  const pending: PendingPublish = {
    version: 1,
    runId,
    installationId: job.installationId,
    owner: job.owner,
    repo: job.repo,
    issueNumber: job.issueNumber,
    issueTitle: job.issueTitle,
    baseBranch: job.defaultBranch ?? 'main',
    baseCommit: result.baseCommit,
    patch: result.patch,
    body: renderPrBody({
      result,
      issueNumber: job.issueNumber,
      triggeredBy: job.sender.login,
      trajectoryUrl,
      ...(deps.workflowRunUrl ? { workflowRun: workflowRunLink(deps.workflowRunUrl, runId) } : {}),
    }),
    coAuthor: job.sender,
    partial: result.partial,
    verified: verificationLine(result),
    issueText: job.issueText,
    evidence: evidenceOf(result),
    savedAt: new Date().toISOString(),
  };
  try {
    await savePendingPublish(deps.dataDir, pending);
  } catch (error) {
    // Publishing can go ahead; it just could not be resumed if it failed.
    ctx.log.warn({ err: error }, 'could not keep the change for a resumed publish');
  }
  return finishPublish(deps, pending, ctx);
}

/** This run's unfinished publish (after a restart), or for a plain retry the issue's newest. */
export async function resumablePublish(
  dataDir: string,
  run: { id: string; job: IssueJob },
): Promise<PendingPublish | undefined> {
  const own = await loadPendingPublish(dataDir, run.id);
  if (own) return own;
  // A retry with guidance asks for a different change: the model runs again.
  if (run.job.source !== 'retry' || run.job.guidance) return undefined;
  return findPendingPublishForIssue(dataDir, run.job);
}

/** Pushes the kept change and opens (or finds) its draft pull request. */
export async function finishPublish(
  deps: PublishDeps,
  pending: PendingPublish,
  ctx: PublishContext,
): Promise<StatusState> {
  const { log } = ctx;
  try {
    const published = await publishPatch({
      octokit: ctx.octokit,
      owner: pending.owner,
      repo: pending.repo,
      issueNumber: pending.issueNumber,
      issueTitle: pending.issueTitle,
      baseBranch: pending.baseBranch,
      baseCommit: pending.baseCommit,
      patch: pending.patch,
      gitUrl: ctx.gitUrl,
      mintToken: ctx.mintToken,
      workRoot: dataPaths.publishDir(deps.dataDir),
      bot: await ctx.botIdentity(),
      coAuthor: pending.coAuthor,
      noreplyDomain: noreplyDomainFor(deps.gitBaseUrl),
      body: pending.body,
      log,
      git: deps.git,
      pushedCommit: pending.pushedCommit,
      onPushed: (commit) =>
        savePendingPublish(deps.dataDir, {
          ...pending,
          pushedCommit: commit,
          savedAt: new Date().toISOString(),
        }).catch((error: unknown) =>
          log.warn({ err: error }, 'could not record the pushed commit'),
        ),
    });
    await recordPublished(deps, pending, published, log);
    return {
      kind: 'done',
      prNumber: published.prNumber,
      prUrl: published.prUrl,
      partial: pending.partial,
      verified: pending.verified,
    };
  } catch (error) {
    log.warn({ err: error }, 'publishing failed');
    if (!mayPublishLater(error)) {
      // Kept, it would make every plain retry fail the same way instead of running the model.
      await removePendingPublish(deps.dataDir, pending.runId).catch(() => undefined);
      return publishFailure(error);
    }
    return publishFailure(error, await loadPendingPublish(deps.dataDir, pending.runId));
  }
}

/** What a follow-up on this pull request is briefed with (revision-record.ts); the record goes. */
async function recordPublished(
  deps: PublishDeps,
  pending: PendingPublish,
  published: { prNumber: number; branch: string; commit: string },
  log: Logger,
): Promise<void> {
  const issueText = pending.issueText ?? (await deps.queue.get(pending.runId))?.job.issueText;
  if (issueText !== undefined) {
    await writePublishedAttempt(deps.queue, issueKey(pending), {
      prNumber: published.prNumber,
      branch: published.branch,
      baseBranch: pending.baseBranch,
      baseCommit: pending.baseCommit,
      head: published.commit,
      issueTitle: pending.issueTitle,
      issueText,
      revision: 1,
      evidence: pending.evidence,
    });
  }
  await removePendingPublishes(deps.dataDir, pending).catch((error: unknown) =>
    log.warn({ err: error }, 'could not forget the finished publish'),
  );
}

/**
 * The status for a failed publish. The error carries git's output, which names files from the
 * patch (written by the model): shown in a code block, so it cannot ping or link anyone.
 */
export function publishFailure(error: unknown, kept?: PendingPublish): StatusState {
  const resume = kept
    ? ' The change is kept: comment `/frognano retry` with nothing after it to publish it without running the model again.'
    : '';
  return {
    kind: 'failed',
    reason: `the change was made, but pushing the branch or opening the draft pull request failed.${resume} The error:`,
    detail: redactSecrets(error instanceof Error ? error.message : String(error)),
  };
}
