import type { Logger } from 'pino';
import type { Metrics } from '../metrics/index.js';
import type { RunArtifacts, RunClaims, RunReader } from '../queue/types.js';
import type { RunRequest, RunResult, SandboxKind } from '../runner/run-types.js';
import type { RunHost } from './run-host.js';

export type RunPipelineFn = (request: RunRequest) => Promise<RunResult>;

export interface WorkerPoolDeps<J> {
  /** Claims and ends runs, reads their places, shares their files with other hosts. */
  queue: RunClaims<J> & RunReader<J> & RunArtifacts;
  /** Where the runs were asked for: tells people and publishes (GitHub). */
  host: RunHost<J>;
  runPipeline: RunPipelineFn;
  log: Logger;
  /** Trajectories live under here (`data-dir.ts`). */
  dataDir: string;
  sandbox: SandboxKind;
  /** How often workers look for queued runs and cancel flags (other processes may write them). */
  pollMs?: number;
  /** How long a run's trajectory is kept in a shared queue for serve to show (default 14 days). */
  artifactTtlSeconds?: number;
  /**
   * How long a run may take past its agent time limit (`timeout_minutes`: patch capture,
   * the tests after the change, the policy) before the worker stops it. Default 15 minutes.
   */
  jobDeadlineGraceMs?: number;
  /** After stopping an overdue run, how long to wait for it to wind down. Default 60 s. */
  jobAbandonMs?: number;
  metrics?: Metrics;
}
