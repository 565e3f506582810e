import { describe, expect, it } from 'vitest';
import { selectAttempt } from '../../src/runner/select-attempt.js';
import type { TestResult } from '../../src/runner/run-types.js';

const run = (exitCode: number, report?: TestResult['report']): TestResult => ({
  command: 'python3 -m pytest',
  source: 'detected',
  exitCode,
  timedOut: false,
  outputTail: '',
  durationMs: 1,
  ...(report ? { report } : {}),
});
const patch = (n: number) =>
  `diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x\n+y${n}\n`;

describe('selectAttempt and the pytest report', () => {
  it('does not rank an exit 0 without its report as a pass', () => {
    const missing = {
      present: false,
      tests: 0,
      failures: 0,
      errors: 0,
      skipped: 0,
      problem: 'no test report: the test process exited before pytest wrote its report',
    };
    const clean = { present: true, tests: 2, failures: 0, errors: 0, skipped: 0 };
    const rankings = selectAttempt(
      [
        { attempt: 1, patch: patch(1), steps: 2, verifyAfter: run(0, missing) },
        { attempt: 2, patch: patch(2), steps: 5, verifyAfter: run(0, clean) },
      ],
      run(1, { present: true, tests: 2, failures: 1, errors: 0, skipped: 0, problem: 'x' }),
    );
    expect(rankings.map((r) => [r.attempt, r.tests, r.selected])).toEqual([
      [1, 'fail', false],
      [2, 'pass', true],
    ]);
  });
});
