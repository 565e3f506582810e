// How a run ends: what it reached (a result, a publish, a refusal, a crash) mapped to the status
// shown, the record's final state and its outcome. One pure function, so every case is a test.
import { redactSecrets } from '../redact.js';
import type { RunOutcome, RunResult } from '../runner/run-types.js';
import type { RunStatus } from './run-status.js';

export type FinalState = 'done' | 'failed' | 'cancelled';

/** The outcome a finished run's record keeps (`frognano runs`, metrics). */
export type RunEndOutcome =
  | RunOutcome
  | 'pull_request'
  | 'revision'
  | 'no_change'
  | 'publish_failed'
  | 'follow_up_refused'
  | 'timed_out'
  | 'internal_error'
  | 'llm_query_error'
  | 'interrupted';

export interface Settled {
  status: RunStatus;
  state: FinalState;
  outcome: RunEndOutcome;
}

export type RunEnd =
  /** The pipeline returned; `refusal` is the host's reading of a result it will not publish. */
  | {
      kind: 'ran';
      result: RunResult;
      refusal: RunStatus | undefined;
      aborted: boolean;
      overdueMs?: number;
    }
  /** Publishing (a new pull request, a revision, a resumed publish) ended with this status. */
  | { kind: 'published'; status: RunStatus }
  /** Another worker took the run up: it publishes, this one ends without a word. */
  | { kind: 'lost' }
  /** The host found no run to make (a follow-up on a pull request it cannot revise). */
  | { kind: 'refused'; reason: string }
  /** Something threw; `overdueMs` when the job's deadline had passed. */
  | { kind: 'crashed'; message: string; overdueMs?: number };

/** The settled end of a run, or `publish` when its result is to be published. */
export function settleRun(end: RunEnd): Settled | 'publish' {
  switch (end.kind) {
    case 'ran':
      return settleResult(end);
    case 'published':
      return {
        status: end.status,
        state: end.status.kind === 'done' || end.status.kind === 'revised' ? 'done' : 'failed',
        outcome:
          end.status.kind === 'done'
            ? 'pull_request'
            : end.status.kind === 'revised'
              ? 'revision'
              : 'publish_failed',
      };
    case 'lost':
      return { status: { kind: 'interrupted' }, state: 'failed', outcome: 'interrupted' };
    case 'refused':
      return {
        status: { kind: 'failed', reason: `no follow-up run: ${end.reason}` },
        state: 'failed',
        outcome: 'follow_up_refused',
      };
    case 'crashed':
      if (end.overdueMs !== undefined) return overdue(end.overdueMs);
      return {
        status: {
          kind: 'failed',
          reason: `an internal error stopped the run: ${redactSecrets(end.message)}`,
        },
        state: 'failed',
        outcome: 'internal_error',
      };
  }
}

function settleResult(end: Extract<RunEnd, { kind: 'ran' }>): Settled | 'publish' {
  const { result } = end;
  if (end.overdueMs !== undefined) return overdue(end.overdueMs);
  const refusal =
    end.aborted && result.outcome !== 'completed' ? { kind: 'cancelled' as const } : end.refusal;
  if (!refusal) {
    if (end.aborted)
      return { status: { kind: 'cancelled' }, state: 'cancelled', outcome: 'cancelled' };
    return 'publish';
  }
  if (refusal.kind === 'no-change' && result.exitReason === 'llm_query_error') {
    // The endpoint failed mid-run: a failure to retry, not the model choosing no change.
    const status: RunStatus = { kind: 'failed', reason: refusal.reason };
    if (result.error) status.detail = result.error;
    return { status, state: 'failed', outcome: 'llm_query_error' };
  }
  if (refusal.kind === 'no-change') return { status: refusal, state: 'done', outcome: 'no_change' };
  return {
    status: refusal,
    state: refusal.kind === 'cancelled' ? 'cancelled' : 'failed',
    outcome: result.outcome,
  };
}

function overdue(limitMs: number): Settled {
  const minutes = Math.round((limitMs / 60_000) * 10) / 10;
  return {
    status: {
      kind: 'failed',
      reason: `the run took longer than its time limit (timeout_minutes plus a grace for the tests, ${minutes} minutes in all) and was stopped. Nothing was published.`,
    },
    state: 'failed',
    outcome: 'timed_out',
  };
}
