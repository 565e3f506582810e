// The test command, run in a sandbox, as a TestResult.
import type { Sandbox } from '../../leaf/sandbox.js';
import {
  COMMAND_OUTPUT_BYTES,
  OUTPUT_TAIL_CHARS,
  combined,
  combinedOutput,
  tail,
} from '../command-output.js';
import type { TestResult } from '../run-types.js';
import { pytestReportCommand, readReport, reportPath } from '../test-report.js';

export const DEFAULT_TEST_TIMEOUT_MS = 10 * 60_000;

export type TestPhase = 'verify-before' | 'verify-after' | 'agent-tests' | 'own-tests-before';

export async function runTest(
  sandbox: Sandbox,
  test: { command: string; source: 'config' | 'detected' },
  phase: TestPhase,
  options: { timeoutMs?: number; signal: AbortSignal },
): Promise<TestResult> {
  // pytest is asked for its JUnit report, so an exit 0 from a process that quit before
  // pytest ran anything does not read as a pass.
  const report = reportPath();
  const reported = pytestReportCommand(test.command, report);
  const run = await sandbox.exec(combinedOutput(reported ?? test.command), {
    timeoutMs: options.timeoutMs ?? DEFAULT_TEST_TIMEOUT_MS,
    signal: options.signal,
    maxOutputBytes: COMMAND_OUTPUT_BYTES,
    // Python's bytecode cache trusts (mtime in whole seconds, size): an edit of the same
    // size within the second of an earlier run would be tested as the OLD code. A fresh
    // cache per verification neither reads stale bytecode nor leaves any in the tree.
    env: { PYTHONPYCACHEPREFIX: `${sandbox.homeDir}/.cache/frognano-pycache/${phase}` },
  });
  return {
    command: test.command,
    source: test.source,
    exitCode: run.exitCode,
    timedOut: run.timedOut,
    outputTail: tail(combined(run), OUTPUT_TAIL_CHARS),
    durationMs: Math.round(run.durationMs),
    ...(reported === undefined
      ? {}
      : { report: await readReport(sandbox, report, options.signal) }),
  };
}
