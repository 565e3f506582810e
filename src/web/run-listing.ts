// The runs as the web pages and `frognano runs` see them, behind one small async interface, so a
// shared queue backend only has to implement `RunListing`.
import type { RunReader, RunRecord, RunState } from '../queue/types.js';
import { readRunRecord, readTrajectory, type RunFiles } from './run-record.js';

/**
 * What the pages show of a run's job: github/job.ts's `IssueJob` has it all. Named here, not
 * imported, because the GitHub room sits above this one (it links the run pages).
 */
export interface ListedJob {
  owner: string;
  repo: string;
  issueNumber: number;
  issueTitle: string;
  source: 'label' | 'retry' | 'review';
  sender: { login: string };
}

export interface RunSummary {
  id: string;
  state: RunState;
  /** `owner/repo` */
  repo: string;
  issueNumber: number;
  issueTitle: string;
  issueUrl: string;
  /** e.g. `label by @octocat` */
  trigger: string;
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  outcome?: string;
  /** Steps taken so far (running) or in total (finished); undefined before the loop. */
  step?: number;
  maxSteps?: number;
  /** Where the draft pull request is, when the run opened one. */
  prUrl?: string;
}

export interface RunFilter {
  /** `owner/repo`, case-insensitive. */
  repo?: string;
  state?: RunState;
  /** Newest first, at most this many (default 200). */
  limit?: number;
}

export interface RunListing {
  listRuns(filter?: RunFilter): Promise<RunSummary[]>;
  getRun(id: string): Promise<RunSummary | undefined>;
  /** A run's trajectory.json, run.json and attempts' trajectories, wherever its host put them. */
  files(id: string): RunFiles;
}

export function triggerOf(job: Pick<ListedJob, 'source' | 'sender'>): string {
  const how =
    job.source === 'retry'
      ? '/frognano retry'
      : job.source === 'review'
        ? '/frognano on the pull request'
        : 'label';
  return `${how} by @${job.sender.login}`;
}

/** The listing over the queue (SQLite or Redis, through the async queue door). */
export function queueRunListing(
  queue: Pick<RunReader<ListedJob>, 'list' | 'get'>,
  options: {
    gitBaseUrl: string;
    /** A run's files: its worker's output directory, or the shared queue for another host's. */
    files: (id: string) => RunFiles;
  },
): RunListing {
  const { files } = options;
  const summarize = async (run: RunRecord<ListedJob>) => {
    const { job } = run;
    const repo = `${job.owner}/${job.repo}`;
    const summary: RunSummary = {
      id: run.id,
      state: run.state,
      repo,
      issueNumber: job.issueNumber,
      issueTitle: job.issueTitle,
      issueUrl: `${options.gitBaseUrl}/${repo}/issues/${job.issueNumber}`,
      trigger: triggerOf(job),
      createdAt: run.createdAt,
      startedAt: run.startedAt,
      finishedAt: run.finishedAt,
      outcome: run.outcome,
    };
    if (run.outcome === 'pull_request') {
      // The branch is fixed per issue; GitHub's search finds its (one) pull request.
      const q = encodeURIComponent(`is:pr head:frognano/issue-${job.issueNumber}`);
      summary.prUrl = `${options.gitBaseUrl}/${repo}/pulls?q=${q}`;
    }
    if (run.state === 'running') {
      const t = await readTrajectory(files(run.id));
      if (t) {
        summary.step = t.steps.length;
        summary.maxSteps = t.budget.max_steps;
      }
    } else if (run.state !== 'queued') {
      const record = await readRunRecord(files(run.id));
      if (record) {
        summary.step = record.result.budgets.steps;
        summary.maxSteps = record.result.budgets.maxSteps;
      }
    }
    return summary;
  };
  return {
    files,
    async listRuns(filter = {}) {
      const repo = filter.repo?.toLowerCase();
      const runs = (await queue.list(filter.state))
        .filter((r) => !repo || `${r.job.owner}/${r.job.repo}`.toLowerCase() === repo)
        .reverse()
        .slice(0, filter.limit ?? 200);
      return Promise.all(runs.map(summarize));
    },
    async getRun(id) {
      const run = await queue.get(id);
      return run ? summarize(run) : undefined;
    },
  };
}
