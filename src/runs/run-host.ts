// The door between the runs room and the place a run was asked for. The runs room knows the
// queue and the runner; what a run tells people, and where its change is published, is the
// host's (GitHub's: the status comment, the draft pull request, the follow-up commit).
import type { Logger } from 'pino';
import type { RunRecord } from '../queue/types.js';
import type { RunRequest, RunResult } from '../runner/run-types.js';
import type { RunStatus } from './run-status.js';

/** What the host puts in a run's request: the repository, the brief, how to read its text. */
export type HostRequest = Omit<
  RunRequest,
  'runId' | 'sandbox' | 'outDir' | 'signal' | 'onProgress'
>;

export interface RunHost<J> {
  /** The run's name in log lines (`owner/repo#n`). */
  label(job: J): string;
  /**
   * The host's side of one run: its status and its request budget. `quiet` for a word about a
   * run this process does not run (recovered after a crash): no pacing, nothing kept back.
   */
  open(record: RunRecord<J>, log: Logger, options?: { quiet?: boolean }): Promise<RunSession>;
}

export interface RunSession {
  /** Shows the run's progress (writes may be coalesced). */
  update(status: RunStatus): void;
  /** Shows the run's final status; with its result, what the result adds (notes on files). */
  finish(status: RunStatus, result?: RunResult): Promise<void>;
  /** A change made before (a restart, a plain retry) that only needs publishing, if any. */
  resumablePublish(): Promise<(() => Promise<RunStatus>) | undefined>;
  /** The request's host part, or why there is no run to make. */
  request(): Promise<HostRequest | { refused: string }>;
  /** Why a result will not be published, in the host's words; undefined when it will be. */
  describe(result: RunResult): RunStatus | undefined;
  /** Publishes the change; the status says how that went (a failure is a status, not a throw). */
  publish(result: RunResult): Promise<RunStatus>;
  /** Requests this session made, to add to the run's record. */
  readonly spent: number;
  /** Requests made for the run in all (intake's included), for its log line. */
  readonly used: number;
}
