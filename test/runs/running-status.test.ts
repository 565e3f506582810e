// The status comment while a run works, from the pipeline's own progress events.
import { describe, expect, it } from 'vitest';
import { RunningStatus } from '../../src/runs/running-status.js';
import { renderStatus } from '../../src/github/status/status-comment.js';
import type { RunProgress } from '../../src/runner/run-types.js';

const step = (attempt: number | undefined, n: number): RunProgress => ({
  kind: 'step',
  ...(attempt === undefined ? {} : { attempt }),
  step: n,
  maxSteps: 30,
  tools: ['Bash'],
  elapsedMs: 0,
  contextTokens: 0,
});

describe('RunningStatus', () => {
  it('shows one attempt as phase and step, as before', () => {
    const running = new RunningStatus();
    running.next({ kind: 'phase', phase: 'agent' }, false);
    const state = running.next(step(undefined, 4), false);
    expect(state).toEqual({
      kind: 'running',
      phase: 'agent',
      step: 4,
      maxSteps: 30,
      retried: false,
    });
    expect(renderStatus(state)).toContain('running: the model is working (step 4/30).');
    expect(running.next({ kind: 'phase', phase: 'verify-after' }, false)).toMatchObject({
      phase: 'verify-after',
      step: undefined,
    });
  });

  it('shows each attempt verified as its loop ends, and keeps saying so in later phases', () => {
    const running = new RunningStatus();
    running.next({ kind: 'phase', phase: 'agent' }, true);
    running.next(step(1, 3), true);
    running.next(step(2, 5), true);
    const verifying = running.next({ kind: 'attempt', attempt: 1, state: 'verifying' }, true);
    expect(renderStatus(verifying)).toContain(
      'Parallel attempts: attempt 1: step 3/30, testing its change · attempt 2: step 5/30.',
    );
    running.next({ kind: 'attempt', attempt: 1, state: 'done' }, true);
    running.next(step(2, 6), true);
    const after = running.next({ kind: 'phase', phase: 'verify-after' }, true);
    const text = renderStatus(after);
    expect(text).toContain('running: running the tests after the change.');
    expect(text).toContain('attempt 1: step 3/30, tested · attempt 2: step 6/30.');
    expect(text).toContain('this is the last try');
  });
});
