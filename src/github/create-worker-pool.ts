// The workers of the App (and of `frognano worker`): the runs room's pool with GitHub as its host.
import { WorkerPool, type WorkerPoolDeps } from '../runs/index.js';
import type { IssueJob } from './job.js';
import { GitHubRunHost } from './run-host.js';
import type { GitHubRunHostDeps } from './run-host-deps.js';

/** The queue is both sides': the host's notes and records, the pool's claims. */
export type WorkerDeps = GitHubRunHostDeps & Omit<WorkerPoolDeps<IssueJob>, 'host'>;

export function createWorkerPool(deps: WorkerDeps): WorkerPool<IssueJob> {
  return new WorkerPool({ ...deps, host: new GitHubRunHost(deps) });
}
