// The one reading of a run's test evidence that every report shares (the pull request's verdict
// line, summary.md, solve's last line), so they cannot disagree.
import type { RunResult } from './run-types.js';
import { testPassed } from './test-report.js';

/**
 * The tests after the change: `pass` or `fail`; `inconclusive` when they did not pass and the
 * environment could not run them (import errors at collection, a failed setup), so a failure
 * says nothing about the change; `not_run` when there was a test command but no run after (the
 * run stopped first); `untested` when there is no test command at all.
 */
export type TestVerdict = 'pass' | 'fail' | 'inconclusive' | 'not_run' | 'untested';

export function testVerdict(
  result: Pick<RunResult, 'testCommand' | 'verifyAfter' | 'environment'>,
): TestVerdict {
  if (!result.testCommand) return 'untested';
  if (!result.verifyAfter) return 'not_run';
  if (testPassed(result.verifyAfter)) return 'pass';
  return result.environment?.runnable === false ? 'inconclusive' : 'fail';
}
