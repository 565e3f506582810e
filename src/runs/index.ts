// The runs room's one door: workers that take queued runs, drive the pipeline, and settle each
// run's end. It knows the queue and the runner; the host (GitHub) is reached through RunHost.
export { WorkerPool } from './worker-pool.js';
export type { RunPipelineFn, WorkerPoolDeps } from './pool-deps.js';
export type { HostRequest, RunHost, RunSession } from './run-host.js';
export type { RunStatus } from './run-status.js';
export {
  settleRun,
  type FinalState,
  type RunEnd,
  type RunEndOutcome,
  type Settled,
} from './settle-run.js';
export { DEFAULT_JOB_DEADLINE_GRACE_MS } from './job-deadline.js';
export { RunningStatus } from './running-status.js';
export { ModelWaits } from './model-waits.js';
