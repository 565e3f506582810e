// The status comment while a loop waits for a model slot (every endpoint at its cap): it says so,
// per attempt with several, and stops saying so once the loop has its slot.
import { describe, expect, it } from 'vitest';
import { RunningStatus } from '../../../src/runs/running-status.js';
import { renderStatus } from '../../../src/github/status/status-comment.js';

const WAIT_NOTE =
  'Every model endpoint is serving as many runs as it may at once; the wait does not count against the time limit.';

describe('status comment: waiting for a model slot', () => {
  it('says the one attempt waits, then goes back to the step', () => {
    const status = new RunningStatus();
    status.next({ kind: 'phase', phase: 'agent', timeoutMs: 60_000 }, false);
    const waiting = renderStatus(
      status.next({ kind: 'model-wait', waiting: true, waitedMs: 0 }, false),
    );
    expect(waiting).toContain('🐸 **frognano**: running: waiting for a model slot.');
    expect(waiting).toContain(WAIT_NOTE);
    const got = renderStatus(
      status.next({ kind: 'model-wait', waiting: false, waitedMs: 4000 }, false),
    );
    expect(got).toContain('running: the model is working');
    expect(got).not.toContain(WAIT_NOTE);
  });

  it('marks each waiting attempt with several', () => {
    const status = new RunningStatus();
    status.next({ kind: 'phase', phase: 'agent' }, false);
    status.next(
      {
        kind: 'step',
        attempt: 1,
        step: 3,
        maxSteps: 150,
        tools: ['Bash'],
        elapsedMs: 1,
        contextTokens: 1,
      },
      false,
    );
    const text = renderStatus(
      status.next({ kind: 'model-wait', attempt: 2, waiting: true, waitedMs: 0 }, false),
    );
    expect(text).toContain(
      'Parallel attempts: attempt 1: step 3/150 · attempt 2: step 0/150, waiting for a model slot.',
    );
    expect(text).toContain(WAIT_NOTE);
  });
});
