// The verify-after phase: each patch in a FRESH sandbox: the agent's one is untrusted once the
// loop has run (a login profile that fakes the test command, a .pth file in setup's virtualenv,
// a process left behind writing into the test's output), and evidence from it would be the
// agent's to choose. The verdict gets only the source changes, on the repository's own tests
// and harness; the agent's tests and harness changes then run on top, reported as its own
// evidence, also on the original source and on its text with the change's added lines as
// comments (a test that passes there reads the file instead of running it).
import type { Sandbox } from '../../leaf/sandbox.js';
import { errorText } from '../command-output.js';
import type { Failure, RunContext } from '../run-context.js';
import type { TestResult } from '../run-types.js';
import { textOnlyPatch } from '../text-only-patch.js';
import type { Attempt } from './agent.js';
import type { Prepared, TestCommand } from './config.js';
import type { PatchReadings } from './read-patch.js';
import { runTest } from './run-test.js';
import { sandboxGitApply as gitApply } from './sandbox-git-apply.js';
import { freshSandbox } from './setup.js';

/** What verify-after made of one attempt's patch, as far as it got. */
export interface VerifyAfter {
  /** The verdict: the source changes on the repository's own tests and harness. */
  verifyAfter?: TestResult;
  /** The whole patch, the agent's own tests included. */
  agentTests?: TestResult;
  /** The agent's own tests on the ORIGINAL source (several attempts only). */
  ownTestsBefore?: TestResult;
  /** The same with the source change's text but not its behaviour (see textOnlyPatch). */
  ownTestsText?: TestResult;
  /** Why the patch could not be verified: a sentence for the attempt's error. */
  notRun?: string;
}

/**
 * Verification of every attempt that has a patch. With several attempts each one starts as
 * soon as its loop ends (`early`), so a quick attempt is verified while slower ones work.
 */
export interface Verifier {
  /** Several attempts with a test command: verify this attempt now, its loop has ended. */
  early?: (attempt: Attempt) => void;
  /**
   * The `verify-after` phase: every candidate verified (those started early awaited); per
   * attempt, in order, what its verification made (undefined for one not verified).
   */
  all(attempts: readonly Attempt[]): Promise<(VerifyAfter | undefined)[]>;
}

export function verifyEach(
  run: RunContext,
  prepared: Prepared,
  readings: PatchReadings,
  fresh?: () => Promise<Sandbox>,
): Verifier {
  const { test } = prepared;
  const several = prepared.attempts > 1;
  const verifying = new Map<Attempt, Promise<VerifyAfter>>();
  const span = { first: Infinity, last: 0 };
  const verify = (test: TestCommand, attempt: Attempt): Promise<VerifyAfter> => {
    let done = verifying.get(attempt);
    if (!done) {
      span.first = Math.min(span.first, performance.now());
      const how = { readings, several, fresh };
      done = verifyOne(run, prepared, test, attempt, how).finally(() => {
        span.last = performance.now();
      });
      verifying.set(attempt, done);
      // Cleanup waits for it, whatever ends the run.
      run.starting.push(done);
    }
    return done;
  };
  return {
    ...(several && test
      ? {
          early: (attempt: Attempt) => {
            if (isCandidate(attempt)) verify(test, attempt).catch(() => undefined);
          },
        }
      : {}),
    async all(attempts) {
      const candidates = attempts.filter(isCandidate);
      if (!test || candidates.length === 0) return attempts.map(() => undefined);
      await run.phase('verify-after', () =>
        Promise.all(candidates.map((attempt) => verify(test, attempt))),
      );
      // Verified as each loop ended: the phase took from the first start to the last end.
      if (several) run.timings['verify-after'] = Math.round(span.last - span.first);
      return Promise.all(attempts.map((attempt) => verifying.get(attempt)));
    },
  };
}

function isCandidate(attempt: Attempt): boolean {
  return !attempt.failure && attempt.leaf !== undefined && attempt.leaf.patch !== '';
}

interface How {
  readings: PatchReadings;
  /** Several attempts: a failed verification is the attempt's, and its own tests run too. */
  several: boolean;
  /** A fresh sandbox from the frozen prepared image (Docker, several attempts). */
  fresh: (() => Promise<Sandbox>) | undefined;
}

async function verifyOne(
  run: RunContext,
  prepared: Prepared,
  test: TestCommand,
  attempt: Attempt,
  how: How,
): Promise<VerifyAfter> {
  const { several } = how;
  if (several) run.report({ kind: 'attempt', attempt: attempt.number, state: 'verifying' });
  const made: VerifyAfter = {};
  const failed = await verifyPatch(run, prepared, test, attempt, how, made).catch(
    (error: unknown) => {
      // One attempt: the run ends as it always has (a sandbox failure or limit).
      if (!several) throw error;
      return `verification failed: ${errorText(error)}`;
    },
  );
  if (failed && !run.signal.aborted) {
    run.log.warn({ attempt: attempt.number, reason: failed }, 'verify-after not run');
    made.notRun = `verify-after was not run: ${failed}`;
  }
  if (several) run.report({ kind: 'attempt', attempt: attempt.number, state: 'done' });
  return made;
}

/** Why the patch could not be verified, or undefined once it was; the evidence goes to `made`. */
async function verifyPatch(
  run: RunContext,
  prepared: Prepared,
  test: TestCommand,
  attempt: Attempt,
  how: How,
  made: VerifyAfter,
): Promise<string | undefined> {
  const { applied, error } = await how.readings.read(attempt);
  if (!applied?.split) return error ?? 'the patch could not be read';
  // With a ready sandbox to verify in, the agent's goes meanwhile (cleanup waits for it).
  const going = run.dispose(attempt.sandbox);
  if (how.fresh) run.starting.push(going);
  else await going;
  const fresh = how.fresh
    ? await how.fresh().catch((error: unknown): Failure => ({
        outcome: 'sandbox_failed',
        error: errorText(error),
      }))
    : await freshSandbox(run, prepared);
  if ('outcome' in fresh)
    return `a fresh sandbox for the tests could not be prepared: ${fresh.error}`;
  try {
    const { kept, setAside } = applied.split;
    const keptFailed = await gitApply(run, fresh, kept);
    if (keptFailed) return `the patch did not apply in a fresh sandbox: ${keptFailed}`;
    const testOpts = { timeoutMs: run.deps.testTimeoutMs, signal: run.signal };
    made.verifyAfter = await runTest(fresh, test, 'verify-after', testOpts);
    if (setAside === '' || run.signal.aborted) return undefined;
    const restFailed = await gitApply(run, fresh, setAside);
    if (restFailed) {
      run.log.warn({ reason: restFailed }, "the agent's tests could not be applied");
      return undefined;
    }
    made.agentTests = await runTest(fresh, test, 'agent-tests', testOpts);
    if (!how.several || run.signal.aborted) return undefined;
    await ownTests(run, fresh, test, kept, made);
    return undefined;
  } finally {
    await run.dispose(fresh);
  }
}

/**
 * The agent's own tests, which a reproduction makes fail on the original source: with the
 * source change taken back out; then, when they do fail there, on the original with the
 * change's text but not its behaviour (added lines as comments), where a test that runs the
 * code fails the same way.
 */
async function ownTests(
  run: RunContext,
  fresh: Sandbox,
  test: TestCommand,
  kept: string,
  made: VerifyAfter,
): Promise<void> {
  const testOpts = { timeoutMs: run.deps.testTimeoutMs, signal: run.signal };
  const revertFailed = await gitApply(run, fresh, kept, true);
  if (revertFailed) {
    run.log.warn({ reason: revertFailed }, "the agent's tests could not be run on the original");
    return;
  }
  made.ownTestsBefore = await runTest(fresh, test, 'own-tests-before', testOpts);
  if (made.ownTestsBefore.exitCode === 0 || run.signal.aborted) return;
  const textOnly = textOnlyPatch(kept);
  // Every file stays as it was: the text-only tree is the original, where they just ran.
  if ('patch' in textOnly && textOnly.patch === undefined) {
    made.ownTestsText = made.ownTestsBefore;
    return;
  }
  const textFailed =
    'unbuilt' in textOnly
      ? `no text-only tree: ${textOnly.unbuilt}`
      : await gitApply(run, fresh, textOnly.patch!);
  if (textFailed) {
    // Without it they earn no credit (select-attempt.ts).
    run.log.info({ reason: textFailed }, "the agent's tests were not run on the text alone");
    return;
  }
  made.ownTestsText = await runTest(fresh, test, 'own-tests-text', testOpts);
}
