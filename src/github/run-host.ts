// GitHub's side of a run (the runs room's RunHost): the issue's status comment, the REST budget
// every call of the run is counted against, the request's brief, and the draft pull request or
// follow-up commit its change becomes.
import type { Logger } from 'pino';
import type { RunRecord } from '../queue/types.js';
import { registerSecret } from '../redact.js';
import type { RunResult } from '../runner/run-types.js';
import type { HostRequest, RunHost, RunSession, RunStatus } from '../runs/index.js';
import { runPageUrl } from '../web/index.js';
import { prepareFollowUp, publishFollowUp, type FollowUpBrief } from './publishing/index.js';
import { instructionFileNotes, withNotes } from './status/index.js';
import type { IssueJob } from './job.js';
import { ownerConfigBase } from './owner-config.js';
import { noreplyDomainFor } from './publishing/index.js';
import {
  finishPublish,
  publishFailure,
  publishRun,
  resumablePublish,
  type PublishContext,
} from './publishing/index.js';
import { RestBudget } from './rest-budget.js';
import type { GitHubRunHostDeps } from './run-host-deps.js';
import { runStatusReporter } from './status/index.js';
import { readIssueTextsOffThread } from './sanitize-off-thread.js';
import { describeResult, type StatusReporter } from './status/index.js';
import { dataPaths } from '../data-dir.js';

/** REST calls kept back for the push (token), PR lookup/create, review request and final status. */
const PUBLISH_RESERVE = 6;
/** Asking GitHub for the App's commit identity (GET /app, GET /users/<slug>[bot]), once per process. */
const IDENTITY_CALLS = 2;

export class GitHubRunHost implements RunHost<IssueJob> {
  constructor(private readonly deps: GitHubRunHostDeps) {}

  label(job: IssueJob): string {
    return `${job.owner}/${job.repo}#${job.issueNumber}`;
  }

  async open(
    record: RunRecord<IssueJob>,
    log: Logger,
    options: { quiet?: boolean } = {},
  ): Promise<RunSession> {
    const { deps } = this;
    if (options.quiet) {
      const budget = new RestBudget(undefined, record.restCalls);
      const octokit = budget.attach(await deps.auth(record.job.installationId));
      const status = await runStatusReporter(
        deps,
        record,
        { octokit, budget },
        {
          throttleMs: 0,
          reserve: 0,
          log,
        },
      );
      return new GitHubRunSession(deps, record, { octokit, budget, status, log });
    }
    // Calls intake made for this run (maybe still recording them): refreshed before each write.
    let before = record.restCalls;
    const budget = new RestBudget(undefined, () => before);
    const octokit = budget.attach(await deps.auth(record.job.installationId));
    const status = await runStatusReporter(
      deps,
      record,
      { octokit, budget },
      {
        throttleMs: deps.statusThrottleMs,
        reserve: () => PUBLISH_RESERVE + (deps.botIdentityKnown?.() === false ? IDENTITY_CALLS : 0),
        log,
      },
      async () => {
        before = (await deps.queue.get(record.id))?.restCalls ?? before;
      },
    );
    return new GitHubRunSession(deps, record, { octokit, budget, status, log });
  }
}

interface SessionParts {
  octokit: PublishContext['octokit'];
  budget: RestBudget;
  status: StatusReporter;
  log: Logger;
}

class GitHubRunSession implements RunSession {
  readonly #publish: PublishContext;
  #followUp: FollowUpBrief | undefined;

  constructor(
    private readonly deps: GitHubRunHostDeps,
    private readonly record: RunRecord<IssueJob>,
    private readonly parts: SessionParts,
  ) {
    const { job } = record;
    const { budget, octokit } = parts;
    this.#publish = {
      octokit,
      log: parts.log,
      gitUrl: `${deps.gitBaseUrl}/${job.owner}/${job.repo}.git`,
      botIdentity: () => deps.botIdentity(octokit, () => budget.spend()),
      mintToken: async () => {
        // Made with the App's own client, outside this run's request hook: counted by hand.
        budget.spend();
        const token = await deps.mintInstallationToken(job.installationId);
        registerSecret(token);
        return token;
      },
    };
  }

  get spent(): number {
    return this.parts.budget.spent;
  }

  get used(): number {
    return this.parts.budget.used;
  }

  update(status: RunStatus): void {
    this.parts.status.update(status);
  }

  async finish(status: RunStatus, result?: RunResult): Promise<void> {
    let final = status;
    if (this.record.job.review && (final.kind === 'failed' || final.kind === 'no-change')) {
      final = { ...final, followUp: true };
    }
    const notes = result ? instructionFileNotes(result.instructionFiles) : [];
    await this.parts.status.finish(withNotes(final, notes));
  }

  async resumablePublish(): Promise<(() => Promise<RunStatus>) | undefined> {
    // A follow-up always runs the model: its brief is the pull request as it is now.
    if (this.record.job.review) return undefined;
    const pending = await resumablePublish(this.deps.dataDir, this.record);
    if (!pending) return undefined;
    this.parts.log.info(
      { from: pending.runId, pushed: pending.pushedCommit !== undefined },
      'resuming an unfinished publish',
    );
    return () => finishPublish(this.deps, pending, this.#publish);
  }

  async request(): Promise<HostRequest | { refused: string }> {
    const { job } = this.record;
    const { octokit } = this.parts;
    const { gitUrl, mintToken } = this.#publish;
    // A follow-up on the bot's pull request starts from its head, briefed with the feedback.
    const followUp = job.review ? await prepareFollowUp(octokit, this.deps.queue, job) : undefined;
    if (followUp && 'refused' in followUp) return { refused: followUp.refused };
    this.#followUp = followUp;
    return {
      instanceId: `${job.owner}/${job.repo}#${job.issueNumber}`,
      repo: gitUrl,
      getCredential: /^https?:/i.test(gitUrl)
        ? async () => ({ username: 'x-access-token', password: await mintToken() })
        : undefined,
      issueText: job.issueText,
      extraGuidance: job.guidance,
      configBase: ownerConfigBase(octokit, { owner: job.owner, repo: job.repo }, job.visibility),
      readUntrustedTexts: readIssueTextsOffThread,
      ...followUp?.request,
      ...(job.attempts !== undefined ? { overrides: { attempts: job.attempts } } : {}),
    };
  }

  describe(result: RunResult): RunStatus | undefined {
    return describeResult(result);
  }

  async publish(result: RunResult): Promise<RunStatus> {
    const { deps, record } = this;
    const brief = this.#followUp;
    if (!brief)
      return publishRun(deps, { job: record.job, runId: record.id, result }, this.#publish);
    const { log } = this.parts;
    const bot = await this.#publish.botIdentity();
    return publishFollowUp({
      brief,
      job: record.job,
      result,
      octokit: this.parts.octokit,
      queue: deps.queue,
      mintToken: this.#publish.mintToken,
      gitUrl: this.#publish.gitUrl,
      workRoot: dataPaths.publishDir(deps.dataDir),
      bot,
      noreplyDomain: noreplyDomainFor(deps.gitBaseUrl),
      trajectoryUrl:
        deps.publicUrl && result.trajectoryPath ? runPageUrl(deps.publicUrl, record.id) : undefined,
      canSpend: () => this.parts.budget.remaining() > 1,
      log,
      git: deps.git,
    }).catch((error: unknown) => {
      log.warn({ err: error }, 'publishing the revision failed');
      return publishFailure(error);
    });
  }
}
