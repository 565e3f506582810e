// How a run's end maps to its status, final state and outcome: one case per way a run can end.
import { describe, expect, it } from 'vitest';
import { settleRun, type RunStatus } from '../../src/runs/index.js';
import { describeResult } from '../../src/github/status/status-comment.js';
import { registerSecret } from '../../src/redact.js';
import { runResult } from '../github/helpers/run-result.js';

const ran = (
  overrides: Parameters<typeof runResult>[0],
  extra: { aborted?: boolean; overdueMs?: number } = {},
) => {
  const result = runResult(overrides);
  return settleRun({
    kind: 'ran',
    result,
    refusal: describeResult(result),
    aborted: extra.aborted ?? false,
    overdueMs: extra.overdueMs,
  });
};

describe('settleRun', () => {
  it('publishes a completed run with a change', () => {
    expect(ran({})).toBe('publish');
  });

  it('ends a run that changed nothing as done with no_change', () => {
    const settled = ran({ patch: '', filesChanged: [] });
    expect(settled).toMatchObject({
      state: 'done',
      outcome: 'no_change',
      status: { kind: 'no-change' },
    });
  });

  it('fails a run whose endpoint stopped answering, with the error as detail', () => {
    const settled = ran({
      patch: '',
      filesChanged: [],
      exitReason: 'llm_query_error',
      error: 'ECONNREFUSED',
    });
    expect(settled).toEqual({
      state: 'failed',
      outcome: 'llm_query_error',
      status: {
        kind: 'failed',
        reason: 'the model endpoint stopped answering during the run and no file was changed.',
        detail: 'ECONNREFUSED',
      },
    });
  });

  it('keeps the pipeline outcome of a failed phase', () => {
    const settled = ran({ outcome: 'setup_failed', patch: '', error: 'exit 1', setupTail: 'boom' });
    expect(settled).toMatchObject({
      state: 'failed',
      outcome: 'setup_failed',
      status: { kind: 'failed' },
    });
  });

  it('refuses a change that touched blocked paths, keeping the completed outcome', () => {
    const settled = ran({
      violations: [{ rule: 'blocked_path', detail: '.github/workflows/x.yml' }],
    });
    expect(settled).toMatchObject({
      state: 'failed',
      outcome: 'completed',
      status: { kind: 'failed' },
    });
  });

  it('cancels an aborted run that did not complete, whatever the phase said', () => {
    expect(ran({ outcome: 'setup_failed', patch: '' }, { aborted: true })).toEqual({
      state: 'cancelled',
      outcome: 'setup_failed',
      status: { kind: 'cancelled' },
    });
  });

  it('cancels an aborted run that completed with a change instead of publishing it', () => {
    expect(ran({}, { aborted: true })).toEqual({
      state: 'cancelled',
      outcome: 'cancelled',
      status: { kind: 'cancelled' },
    });
  });

  it('reports an overdue run as timed out, whatever its result', () => {
    const settled = ran({}, { aborted: true, overdueMs: 90_000 });
    expect(settled).toMatchObject({ state: 'failed', outcome: 'timed_out' });
    expect((settled as { status: { reason: string } }).status.reason).toContain(
      '1.5 minutes in all',
    );
  });

  it.each<[RunStatus, string, string]>([
    [
      { kind: 'done', prNumber: 2, prUrl: 'https://x/pull/2', partial: false },
      'done',
      'pull_request',
    ],
    [
      {
        kind: 'revised',
        commit: 'abc',
        revision: 2,
        partial: false,
        replies: 0,
        threads: 0,
        bodyUpdated: true,
      },
      'done',
      'revision',
    ],
    [{ kind: 'failed', reason: 'push failed' }, 'failed', 'publish_failed'],
  ])('maps a publish that ended %o to %s / %s', (status, state, outcome) => {
    expect(settleRun({ kind: 'published', status })).toEqual({ status, state, outcome });
  });

  it('ends a lost run as interrupted', () => {
    expect(settleRun({ kind: 'lost' })).toEqual({
      status: { kind: 'interrupted' },
      state: 'failed',
      outcome: 'interrupted',
    });
  });

  it('refuses a follow-up with the reason', () => {
    expect(
      settleRun({ kind: 'refused', reason: 'the pull request is not open any more.' }),
    ).toEqual({
      status: {
        kind: 'failed',
        reason: 'no follow-up run: the pull request is not open any more.',
      },
      state: 'failed',
      outcome: 'follow_up_refused',
    });
  });

  it('reports a crash as an internal error with secrets redacted', () => {
    registerSecret('ghs_settleRunSecret0123456789');
    const settled = settleRun({ kind: 'crashed', message: 'boom ghs_settleRunSecret0123456789' });
    expect(JSON.stringify(settled)).not.toContain('ghs_settleRunSecret0123456789');
    expect(settled).toMatchObject({
      status: { kind: 'failed' },
      state: 'failed',
      outcome: 'internal_error',
    });
  });

  it('reports a crash after the deadline as timed out', () => {
    expect(settleRun({ kind: 'crashed', message: 'x', overdueMs: 60_000 })).toMatchObject({
      state: 'failed',
      outcome: 'timed_out',
    });
  });
});
