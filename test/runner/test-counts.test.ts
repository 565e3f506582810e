import { describe, expect, it } from 'vitest';
import { parseTestCounts } from '../../src/runner/test-counts.js';

describe('parseTestCounts', () => {
  it.each([
    ['pytest', '...F\n=== 1 failed, 3 passed, 2 errors in 0.12s ===', { passed: 3, failed: 3 }],
    ['pytest -q', 'F.\n1 failed, 1 passed in 0.05s', { passed: 1, failed: 1 }],
    ['pytest all pass', '======== 5 passed in 1.01s ========', { passed: 5, failed: 0 }],
    ['jest', 'Tests:       1 failed, 4 passed, 5 total', { passed: 4, failed: 1 }],
    ['vitest', ' Tests  2 failed | 7 passed (9)', { passed: 7, failed: 2 }],
    ['cargo', 'test result: FAILED. 3 passed; 1 failed; 0 ignored', { passed: 3, failed: 1 }],
    [
      'unittest',
      'Ran 5 tests in 0.010s\n\nFAILED (failures=1, errors=1)',
      { passed: 3, failed: 2 },
    ],
    ['unittest ok', 'Ran 2 tests in 0.001s\n\nOK', { passed: 2, failed: 0 }],
    ['mocha', '  3 passing (20ms)\n  1 failing', { passed: 3, failed: 1 }],
    ['go -v', '--- PASS: TestA (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL', { passed: 1, failed: 1 }],
  ])('reads %s', (_, output, expected) => {
    expect(parseTestCounts(output)).toEqual(expected);
  });

  it('takes the last pytest summary and knows no counts in plain output', () => {
    expect(parseTestCounts('1 failed in 0.1s\nlater\n2 passed in 0.2s')).toEqual({
      passed: 2,
      failed: 0,
    });
    expect(parseTestCounts('make: *** [test] Error 1')).toBeUndefined();
  });
});
