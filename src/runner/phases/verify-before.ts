// Phase 3, verify-before: the test command on the original tree, set up. A command that
// cannot even start stops the run here: it would waste the whole agent run on the GPU. A
// follow-up's previous revisions come in here (previous-revisions.ts): their source before
// the test, their tests and harness after it.
import type { Sandbox } from '../../leaf/sandbox.js';
import { shortCommand } from '../command-output.js';
import type { Failure, RunContext } from '../run-context.js';
import type { TestResult } from '../run-types.js';
import { excludeUntracked } from './exclude-untracked.js';
import type { Prepared } from './prepare.js';
import { enterPrevious } from './previous-revisions.js';
import { runTest } from './run-test.js';

export async function verifyBefore(
  run: RunContext,
  prepared: Prepared,
  sandbox: Sandbox,
): Promise<Failure | undefined> {
  const { test, previous } = prepared;
  const source = await enterPrevious(run, previous, sandbox, 'source');
  if (source) return source;
  if (test) {
    const before = await run.phase('verify-before', () =>
      runTest(sandbox, test, 'verify-before', {
        timeoutMs: run.deps.testTimeoutMs,
        signal: run.signal,
      }),
    );
    run.result.verifyBefore = before;
    const unrunnable = missingToolLine(before);
    if (unrunnable !== undefined) {
      run.result.setupTail = before.outputTail;
      return {
        outcome: 'setup_failed',
        error: `the test command ${shortCommand(test.command)} could not run (exit ${before.exitCode}: ${unrunnable}): install the tool in \`setup\` or pick an \`image\` that has it`,
      };
    }
  }
  if (run.signal.aborted) return { outcome: 'cancelled', error: 'the run was cancelled' };
  const rest = await enterPrevious(run, previous, sandbox, 'rest');
  if (rest) return rest;
  await excludeUntracked(sandbox, run.signal, run.log);
  return undefined;
}

/** The shell's "command not found" line when the test command could not start, else undefined. */
function missingToolLine(test: TestResult): string | undefined {
  const lines = test.outputTail.split('\n').map((line) => line.trim());
  const notFound = lines.find((line) => /(command )?not found$/.test(line));
  if (test.exitCode === 127) return notFound ?? lines.filter(Boolean).at(-1) ?? 'no output';
  return test.exitCode !== 0 && notFound !== undefined && lines.filter(Boolean).at(-1) === notFound
    ? notFound
    : undefined;
}
