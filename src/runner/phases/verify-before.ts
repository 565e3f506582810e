// The verify-before phase: the test command on the original tree, set up. A command that
// cannot even start stops the run here: it would waste the whole agent run on the GPU. A
// follow-up's previous revisions come in here (previous-revisions.ts): their source before
// the test, their tests and harness after it.
import type { Sandbox } from '../../leaf/sandbox.js';
import { shortCommand } from '../command-output.js';
import { unexpectedFailure, type Failure, type RunContext } from '../run-context.js';
import type { TestResult } from '../run-types.js';
import type { Prepared } from './config.js';
import { excludeUntracked } from './exclude-untracked.js';
import { enterPrevious } from './previous-revisions.js';
import { runTest } from './run-test.js';

/** What verify-before made that the run's result reports. */
export interface VerifyBefore {
  verifyBefore?: TestResult;
  /** The test's output, when the command could not run (it reads as setup's failure). */
  setupTail?: string;
}

export interface VerifyBeforeOutcome {
  facts: VerifyBefore;
  failure?: Failure;
}

export async function verifyBefore(
  run: RunContext,
  prepared: Prepared,
  sandbox: Sandbox,
): Promise<VerifyBeforeOutcome> {
  const facts: VerifyBefore = {};
  try {
    const failure = await verify(run, prepared, sandbox, facts);
    return failure ? { facts, failure } : { facts };
  } catch (error) {
    return { facts, failure: unexpectedFailure(run, error) };
  }
}

async function verify(
  run: RunContext,
  prepared: Prepared,
  sandbox: Sandbox,
  facts: VerifyBefore,
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
    facts.verifyBefore = before;
    const unrunnable = missingToolLine(before);
    if (unrunnable !== undefined) {
      facts.setupTail = before.outputTail;
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
