// A later workflow run reads the bot's status comment back (remote cancel): every state the
// comment can show must read as active or not, with its run id, exactly as renderStatus wrote it.
import { describe, expect, it } from 'vitest';
import { renderStatus, type StatusState } from '../../src/github/status/status-comment.js';
import { readStatusComment } from '../../src/action/status-comment-state.js';

const runId = '0b7c6a52-8d0e-4a57-9a51-4b1d3f0e2c11';
const meta = { runId, trigger: 'requested by @Codertocat' };

const states: [StatusState, boolean][] = [
  [{ kind: 'queued', position: 2 }, true],
  [{ kind: 'queued', position: 1, requeued: true }, true],
  [{ kind: 'running', phase: 'clone' }, true],
  [{ kind: 'running', phase: 'agent', step: 3, maxSteps: 30 }, true],
  [{ kind: 'running', phase: 'agent', attempts: { 1: 2, 2: 4 }, maxSteps: 30 }, true],
  [{ kind: 'done', prNumber: 7, prUrl: 'https://github.com/o/r/pull/7', partial: false }, false],
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
    false,
  ],
  [{ kind: 'no-change', finalMessage: 'running: nothing', reason: 'no change' }, false],
  [{ kind: 'failed', reason: 'queued (it said)' }, false],
  [{ kind: 'cancelled', by: 'Codertocat' }, false],
  [{ kind: 'interrupted' }, false],
  [{ kind: 'busy', state: 'running' }, false],
  [{ kind: 'full', repo: 'o/r', limit: 3 }, false],
];

describe('readStatusComment', () => {
  it.each(states)('reads %o as active=%s with its run id', (state, active) => {
    expect(readStatusComment(renderStatus(state, meta))).toEqual({ active, runId });
  });

  it('is not a status comment without the marker at its start', () => {
    expect(
      readStatusComment(`quoted:\n${renderStatus({ kind: 'queued', position: 1 }, meta)}`),
    ).toBe(undefined);
  });

  it('has no run id when the comment names none', () => {
    expect(readStatusComment(renderStatus({ kind: 'running', phase: 'setup' }))).toEqual({
      active: true,
    });
  });
});
