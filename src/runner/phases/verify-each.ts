// Phase 5, verify each patch, in a FRESH sandbox: the agent's one is untrusted once the loop
// has run (a login profile that fakes the test command, a .pth file in setup's virtualenv, a
// process left behind writing into the test's output), and evidence from it would be the
// agent's to choose. The verdict gets only the source changes, on the repository's own tests
// and harness; the agent's tests and harness changes then run on top, reported as its own
// evidence, also on the original source and on its text with the change's added lines as
// comments (a test that passes there reads the file instead of running it). Then the policy checks, on the patch text and on what git makes of it.
import type { Sandbox } from '../../leaf/sandbox.js';
import { errorText } from '../command-output.js';
import { hostTreeTurn } from '../host-tree-turn.js';
import { patchFacts } from '../patch-facts.js';
import { DEFAULT_MAX_PATCH_BYTES, checkAppliedChanges, checkPatch } from '../patch-policy.js';
import type { Failure, RunContext } from '../run-context.js';
import type { PolicyViolation } from '../run-types.js';
import { textOnlyPatch } from '../text-only-patch.js';
import type { AppliedPatch } from '../workspace.js';
import type { Attempt } from './attempts.js';
import { bringUp } from './bring-up.js';
import type { Prepared, TestCommand } from './prepare.js';
import { verdictSetsAside } from './previous-revisions.js';
import { runTest } from './run-test.js';
import { sandboxGitApply as gitApply } from './sandbox-git-apply.js';

/**
 * Verification of every attempt that has a patch. With several attempts each one starts as
 * soon as its loop ends (`early`), so a quick attempt is verified while slower ones work.
 */
export interface Verifier {
  /** Several attempts with a test command: verify this attempt now, its loop has ended. */
  early?: (attempt: Attempt) => void;
  /** The `verify-after` phase: every candidate verified (those started early awaited). */
  all(attempts: Attempt[]): Promise<void>;
}

export function verifyEach(
  run: RunContext,
  prepared: Prepared,
  fresh?: () => Promise<Sandbox>,
): Verifier {
  const { test } = prepared;
  const several = prepared.attempts > 1;
  const verifying = new Map<Attempt, Promise<void>>();
  const span = { first: Infinity, last: 0 };
  const verify = (test: TestCommand, attempt: Attempt): Promise<void> => {
    let done = verifying.get(attempt);
    if (!done) {
      span.first = Math.min(span.first, performance.now());
      done = verifyOne(run, prepared, test, attempt, several, fresh).finally(() => {
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
      if (!test || candidates.length === 0) return;
      await run.phase('verify-after', () =>
        Promise.all(candidates.map((attempt) => verify(test, attempt))),
      );
      // Verified as each loop ended: the phase took from the first start to the last end.
      if (several) run.result.timings['verify-after'] = Math.round(span.last - span.first);
    },
  };
}

function isCandidate(attempt: Attempt): boolean {
  return !attempt.failure && attempt.leaf !== undefined && attempt.leaf.patch !== '';
}

async function verifyOne(
  run: RunContext,
  prepared: Prepared,
  test: TestCommand,
  attempt: Attempt,
  several: boolean,
  fresh: (() => Promise<Sandbox>) | undefined,
): Promise<void> {
  if (several) run.report({ kind: 'attempt', attempt: attempt.number, state: 'verifying' });
  const failed = await verifyPatch(run, prepared, test, attempt, several, fresh).catch(
    (error: unknown) => {
      // One attempt: the run ends as it always has (a sandbox failure or limit).
      if (!several) throw error;
      return `verification failed: ${errorText(error)}`;
    },
  );
  if (failed && !run.signal.aborted) {
    run.log.warn({ attempt: attempt.number, reason: failed }, 'verify-after not run');
    attempt.error ??= `verify-after was not run: ${failed}`;
  }
  if (several) run.report({ kind: 'attempt', attempt: attempt.number, state: 'done' });
}

/** Why the patch could not be verified, or undefined once it was. */
async function verifyPatch(
  run: RunContext,
  prepared: Prepared,
  test: TestCommand,
  attempt: Attempt,
  ownTests: boolean,
  freshFromImage: (() => Promise<Sandbox>) | undefined,
): Promise<string | undefined> {
  const { applied, error } = await analyzePatch(run, prepared, attempt);
  if (!applied?.split) return error ?? 'the patch could not be read';
  const { kept, setAside } = applied.split;
  const used = attempt.sandbox;
  attempt.sandbox = undefined;
  // With a ready sandbox to verify in, the agent's goes meanwhile (cleanup waits for it).
  const going = run.dispose(used);
  if (freshFromImage) run.starting.push(going);
  else await going;
  const fresh = freshFromImage
    ? await freshFromImage().catch((error: unknown): Failure => ({
        outcome: 'sandbox_failed',
        error: errorText(error),
      }))
    : await bringUp(run, prepared, false);
  if ('outcome' in fresh)
    return `a fresh sandbox for the tests could not be prepared: ${fresh.error}`;
  try {
    const testOpts = { timeoutMs: run.deps.testTimeoutMs, signal: run.signal };
    const keptFailed = await gitApply(run, fresh, kept);
    if (keptFailed) return `the patch did not apply in a fresh sandbox: ${keptFailed}`;
    attempt.verifyAfter = await runTest(fresh, test, 'verify-after', testOpts);
    if (setAside === '' || run.signal.aborted) return undefined;
    const restFailed = await gitApply(run, fresh, setAside);
    if (restFailed) {
      run.log.warn({ reason: restFailed }, "the agent's tests could not be applied");
      return undefined;
    }
    attempt.agentTests = await runTest(fresh, test, 'agent-tests', testOpts);
    if (!ownTests || run.signal.aborted) return undefined;
    // A reproduction fails on the original source: take the source change back out, keep
    // the agent's tests, run again.
    const revertFailed = await gitApply(run, fresh, kept, true);
    if (revertFailed) {
      run.log.warn({ reason: revertFailed }, "the agent's tests could not be run on the original");
      return undefined;
    }
    attempt.ownTestsBefore = await runTest(fresh, test, 'own-tests-before', testOpts);
    if (attempt.ownTestsBefore.exitCode === 0 || run.signal.aborted) return undefined;
    // They fail on the original. On the original with the change's text but not its
    // behaviour (added lines as comments), a test that runs the code fails the same way.
    const textOnly = textOnlyPatch(kept);
    const textFailed =
      textOnly === undefined ? 'no text-only form' : await gitApply(run, fresh, textOnly);
    if (textFailed) {
      run.log.info({ reason: textFailed }, "the agent's tests were not run on the text alone");
      return undefined;
    }
    attempt.ownTestsText = await runTest(fresh, test, 'own-tests-text', testOpts);
    return undefined;
  } finally {
    await run.dispose(fresh);
  }
}

/**
 * git's reading of the patch on the host's clean clone, once per attempt: the policy checks
 * it, the evidence splits on it (the repository's own tests and harness for the verdict; for
 * a follow-up, as at the base revision: the previous revisions' harness is set aside too).
 */
export function analyzePatch(
  run: RunContext,
  prepared: Prepared,
  attempt: Attempt,
): Promise<{ applied?: AppliedPatch; error?: string }> {
  attempt.analysis ??= (async () => {
    const patch = attempt.leaf?.patch ?? '';
    const maxPatchBytes = run.deps.maxPatchBytes ?? DEFAULT_MAX_PATCH_BYTES;
    if (patch.trim() === '') return { error: 'the patch is empty' };
    if (Buffer.byteLength(patch, 'utf8') > maxPatchBytes)
      return { error: `the patch is larger than ${maxPatchBytes} bytes` };
    const { workspace, test } = prepared;
    try {
      const applied = await hostTreeTurn(workspace, () =>
        workspace.changesFromPatch(patch, {
          setAside: (_, c) => verdictSetsAside(c, test?.command),
        }),
      );
      attempt.patchFacts = patchFacts(applied.changes, test?.command);
      if (prepared.previous) {
        const whole = applied.sinceOrigin ?? applied.changes;
        attempt.harnessSinceOrigin = patchFacts(whole, test?.command).harnessFiles;
      }
      attempt.filesChanged = applied.changes.map((c) => c.path);
      return { applied };
    } catch (error) {
      // Publishing applies it the same way and will say so; the text checks stand.
      run.log.warn({ err: errorText(error) }, 'the patch does not apply to a clean clone');
      return { error: `the patch does not apply to a clean clone: ${errorText(error)}` };
    }
  })();
  return attempt.analysis;
}

/** The policy checks of every attempt's patch, as the `policy` phase. */
export async function checkPolicies(
  run: RunContext,
  prepared: Prepared,
  attempts: Attempt[],
): Promise<void> {
  await run.phase('policy', () =>
    Promise.all(
      attempts.map(async (attempt) => {
        if (!attempt.leaf) return;
        attempt.violations = await checkPolicy(run, prepared, attempt);
      }),
    ),
  );
}

async function checkPolicy(
  run: RunContext,
  prepared: Prepared,
  attempt: Attempt,
): Promise<PolicyViolation[]> {
  const patch = attempt.leaf?.patch ?? '';
  const policy = {
    blockedPaths: prepared.config.blocked_paths,
    maxPatchBytes: run.deps.maxPatchBytes ?? DEFAULT_MAX_PATCH_BYTES,
  };
  const violations = checkPatch(patch, policy);
  if (patch.trim() === '' || violations.some((v) => v.rule === 'patch_size')) return violations;
  const { applied } = await analyzePatch(run, prepared, attempt);
  for (const v of applied ? checkAppliedChanges(applied.changes, policy) : []) {
    if (!violations.some((w) => w.rule === v.rule && w.detail === v.detail)) violations.push(v);
  }
  return violations;
}
