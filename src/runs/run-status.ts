// A run's status as the place that asked for it shows it (GitHub's status comment renders it):
// queued with its position, running with its phase and steps, then one final state.
import type { RunPhase } from '../runner/run-types.js';

/** Lines shown under a final state's first line (e.g. instruction files that were refused). */
interface Notes {
  notes?: string[];
}

export type RunStatus =
  | { kind: 'queued'; position: number; requeued?: boolean }
  | {
      kind: 'running';
      phase: RunPhase;
      step?: number;
      maxSteps?: number;
      /** Several attempts: the last step each has taken, by attempt number. */
      attempts?: Record<number, number>;
      /** Several attempts: whose patch is being verified, or has been (verified as each ends). */
      verification?: Record<number, 'verifying' | 'done'>;
      /** Attempts (1 with one) waiting for a model slot: every endpoint is at its cap. */
      waiting?: number[];
      retried?: boolean;
    }
  | ({ kind: 'done'; prUrl: string; prNumber: number; partial: boolean; verified?: string } & Notes)
  | ({
      kind: 'revised';
      commit: string;
      revision: number;
      partial: boolean;
      verified?: string;
      /** Review threads answered, of those the run was given. */
      replies: number;
      threads: number;
      bodyUpdated: boolean;
    } & Notes)
  | ({ kind: 'no-change'; finalMessage: string; reason: string; followUp?: boolean } & Notes)
  | ({ kind: 'failed'; reason: string; detail?: string; followUp?: boolean } & Notes)
  | { kind: 'cancelled'; by?: string }
  | { kind: 'interrupted' }
  | { kind: 'busy'; state: 'queued' | 'running' }
  /** Not queued: the repository has `limit` runs waiting (FROGNANO_MAX_QUEUED_PER_REPO). */
  | { kind: 'full'; repo: string; limit: number; followUp?: boolean };
