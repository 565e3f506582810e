// When an attempt's own tests count: they fail on the original and pass on the patch, the
// repository's tests fare no worse, and they do not also pass on the original code holding the
// patch's lines as comments. Test results as pytest prints them (-q summary lines).
import { describe, expect, it } from 'vitest';
import { selectAttempt, type AttemptEvidence } from '../../src/runner/select-attempt.js';
import type { TestResult } from '../../src/runner/run-types.js';

const pytest = (failed: number, passed: number): TestResult => ({
  command: 'python3 -m pytest',
  source: 'config',
  exitCode: failed > 0 ? 1 : 0,
  timedOut: false,
  outputTail:
    failed > 0 ? `${failed} failed, ${passed} passed in 0.05s\n` : `${passed} passed in 0.05s\n`,
  durationMs: 1,
});
const patch = (lines: number) =>
  `diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1,${lines} @@\n-x\n${Array.from({ length: lines }, (_, i) => `+y${i}`).join('\n')}\n`;

describe('selectAttempt: own tests', () => {
  it('counts own tests that pass on the original holding the new lines as comments as reading the source', () => {
    const before = pytest(0, 2);
    const base = { steps: 3, verifyAfter: pytest(0, 2), agentTests: pytest(0, 3) };
    const rankings = selectAttempt(
      [
        // Fewer lines: it would win on size if its own tests counted.
        {
          ...base,
          attempt: 1,
          patch: patch(1),
          ownTestsBefore: pytest(1, 2),
          ownTestsText: pytest(0, 3),
        },
        {
          ...base,
          attempt: 2,
          patch: patch(3),
          ownTestsBefore: pytest(1, 2),
          ownTestsText: pytest(1, 2),
        },
      ],
      before,
    );
    expect(rankings.map((r) => [r.attempt, r.ownTests, r.selected])).toEqual([
      [1, 'reads source', false],
      [2, 'fail→pass', true],
    ]);
    expect(rankings[0]!.reason).toMatch(/^lost: its own tests read the source, not run it/);
  });

  it('one own test of two reading the source is enough to lose the credit', () => {
    const rankings = selectAttempt(
      [
        {
          attempt: 1,
          patch: patch(1),
          steps: 1,
          verifyAfter: pytest(0, 2),
          agentTests: pytest(0, 4),
          ownTestsBefore: pytest(2, 2),
          ownTestsText: pytest(1, 3),
        },
      ],
      pytest(0, 2),
    );
    expect(rankings[0]!.ownTests).toBe('reads source');
  });

  it('gives no credit for own tests when the repository tests fare worse than before', () => {
    // Both attempts break a test the repository had passing (the same tests-after verdict);
    // only attempt 1 brings a reproduction, which must not lift it.
    const rankings = selectAttempt(
      [
        {
          attempt: 1,
          patch: patch(3),
          steps: 1,
          verifyAfter: pytest(1, 1),
          agentTests: pytest(1, 2),
          ownTestsBefore: pytest(2, 1),
        },
        { attempt: 2, patch: patch(1), steps: 1, verifyAfter: pytest(1, 1) },
      ],
      pytest(0, 2),
    );
    expect(rankings.map((r) => [r.attempt, r.ownTests, r.selected])).toEqual([
      [1, 'no', false],
      [2, 'none', true],
    ]);
  });

  it('ranks fewer failing before own tests: no worse than the other attempt', () => {
    const before = pytest(3, 0);
    const rankings = selectAttempt(
      [
        {
          attempt: 1,
          patch: patch(1),
          steps: 1,
          verifyAfter: pytest(2, 1),
          agentTests: pytest(2, 2),
          ownTestsBefore: pytest(4, 0),
          ownTestsText: pytest(4, 0),
        },
        { attempt: 2, patch: patch(3), steps: 4, verifyAfter: pytest(1, 2) },
      ],
      before,
    );
    expect(rankings.map((r) => [r.attempt, r.tests, r.ownTests, r.selected])).toEqual([
      [1, 'fewer failing', 'fail→pass', false],
      [2, 'fewer failing', 'none', true],
    ]);
    expect(rankings[0]!.reason).toBe(
      'lost: tests after: 2 failing (3 before) (attempt 2: 1 failing (3 before))',
    );
  });

  it('without a text-only run (the tree could not be built) own tests earn no credit', () => {
    const honest: AttemptEvidence = {
      attempt: 2,
      patch: patch(3),
      steps: 1,
      verifyAfter: pytest(0, 2),
      agentTests: pytest(0, 3),
      ownTestsBefore: pytest(1, 2),
      ownTestsText: pytest(1, 2),
    };
    const { ownTestsText: _, ...unchecked } = { ...honest, attempt: 1, patch: patch(1) };
    const rankings = selectAttempt([unchecked, honest], pytest(0, 2));
    expect(rankings.map((r) => [r.attempt, r.ownTests, r.selected])).toEqual([
      [1, 'no', false],
      [2, 'fail→pass', true],
    ]);
    expect(rankings[0]!.reason).toBe(
      "lost: its own tests could not be run on the original code with the new lines as comments, so they earn no credit (attempt 2's fail before and pass after)",
    );
  });
});
