// The test command, run in a sandbox, as a TestResult.
import type { Sandbox } from '../../leaf/sandbox.js';
import {
  COMMAND_OUTPUT_BYTES,
  OUTPUT_TAIL_CHARS,
  combined,
  combinedOutput,
  tail,
} from '../command-output.js';
import { shellQuote } from '../../shell-quote.js';
import type { TestResult } from '../run-types.js';
import { pytestReportCommand, pytestWords, readReport, reportPath } from '../test-report.js';

export const DEFAULT_TEST_TIMEOUT_MS = 10 * 60_000;

export type TestPhase =
  'verify-before' | 'verify-after' | 'agent-tests' | 'own-tests-before' | 'own-tests-text';

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
  // Python's bytecode cache trusts (mtime in whole seconds, size): an edit of the same
  // size within the second of an earlier run would be tested as the OLD code. A fresh
  // cache per verification neither reads stale bytecode nor leaves any in the tree.
  const prefix = `${sandbox.homeDir}/.cache/frognano-pycache/${phase}`;
  await seedBytecode(sandbox, prefix, options.signal);
  const run = await sandbox.exec(combinedOutput(reported ?? test.command), {
    timeoutMs: options.timeoutMs ?? DEFAULT_TEST_TIMEOUT_MS,
    signal: options.signal,
    maxOutputBytes: COMMAND_OUTPUT_BYTES,
    env: { PYTHONPYCACHEPREFIX: prefix },
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

// The cache of a sandbox's previous test run, by sandbox.
const previousCache = new WeakMap<Sandbox, string>();

/**
 * Compiles pytest into a sandbox that will run the tests later (a verification sandbox
 * waiting while the model works), so that run starts warm: `pytest --version` loads pytest
 * and its plugins without collecting. Only for commands recognised as pytest; best effort.
 */
export async function warmBytecode(
  sandbox: Sandbox,
  test: { command: string },
  signal: AbortSignal,
): Promise<void> {
  const words = pytestWords(test.command);
  if (!words || previousCache.has(sandbox)) return;
  const prefix = `${sandbox.homeDir}/.cache/frognano-pycache/warm`;
  previousCache.set(sandbox, prefix);
  await sandbox
    .exec(`${words.join(' ')} --version >/dev/null 2>&1`, {
      timeoutMs: 60_000,
      signal,
      env: { PYTHONPYCACHEPREFIX: prefix },
    })
    .catch(() => undefined);
}

/**
 * Links into a test run's fresh cache what the sandbox's previous run compiled OUTSIDE the
 * tree (pytest, the standard library, a virtualenv in the home directory), so only the first
 * run in a sandbox compiles them. Nothing under the tree's top-level directory is carried
 * over. Best effort: without it the run compiles everything, as a first run does.
 */
async function seedBytecode(sandbox: Sandbox, prefix: string, signal: AbortSignal): Promise<void> {
  const previous = previousCache.get(sandbox);
  previousCache.set(sandbox, prefix);
  if (!previous) return;
  const seed = [
    `tree=$(pwd -P | cut -d/ -f2)`,
    `mkdir -p ${shellQuote(prefix)}`,
    `cd ${shellQuote(previous)}`,
    `for d in *; do if [ -d "$d" ] && [ "$d" != "$tree" ]; then cp -al -- "$d" ${shellQuote(prefix)}/; fi; done`,
  ].join(' && ');
  await sandbox.exec(seed, { timeoutMs: 60_000, signal }).catch(() => undefined);
}
