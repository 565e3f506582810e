// What Intake needs from the rest of the App, and the one delivery it is deciding.
import type { Logger } from 'pino';
import type { DeliveryLog, KeyLock, Notes, RunRecord, RunStore } from '../../queue/types.js';
import type { IssueJob } from '../job.js';
import type { KeyedLock } from '../keyed-lock.js';
import type { GitHubClient } from '../octokit.js';
import type { AcceptedTrigger } from './trigger-types.js';

export interface IntakeDeps {
  /** Records deliveries, makes and stops runs, keeps the status comment's id under its lock. */
  queue: DeliveryLog<IssueJob> & RunStore<IssueJob> & Notes & KeyLock;
  auth: (installationId: number) => Promise<GitHubClient>;
  log: Logger;
  /** A run became claimable (or a held one went away): wake the workers. */
  onEnqueued?: () => void;
  /** Shared with the workers: status comment writes per issue. */
  lock: KeyedLock;
  /** A running run should stop (the in-process fast path; workers also poll the flag). */
  onCancelRequested?: (runId: string) => void;
  /** Wait before retrying deliveries whose decision failed (default 30 s). */
  retryMs?: number;
  /** Runs one repository may have waiting (held ones included); past it, refused. Unset: no cap. */
  maxQueuedPerRepo?: number;
  /** `/frognano use K` from a permitted sender: does it, returns the reply (src/github/use-attempt.ts). */
  onUse?: (
    decision: Extract<AcceptedTrigger, { kind: 'use' }>,
    octokit: GitHubClient,
  ) => Promise<string>;
  /** `/frognano ci` from a permitted sender on our pull request: pushes, returns the reply (ci-commit.ts). */
  onCi?: (
    decision: Extract<AcceptedTrigger, { kind: 'ci' }>,
    octokit: GitHubClient,
  ) => Promise<string>;
}

/** One delivery being decided: its trigger, the client counting its calls, its held run. */
export interface Deciding<D extends AcceptedTrigger = AcceptedTrigger> {
  deliveryId: string;
  decision: D;
  octokit: GitHubClient;
  held: RunRecord<IssueJob> | undefined;
}
