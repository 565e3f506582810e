// One run, start to finish, as named phases (DESIGN.md "The flow of one run"). Used by
// `frognano solve` and by the GitHub App alike; it knows nothing of GitHub. Each phase
// lives in src/runner/phases/; this file is the flow, top to bottom.
import { isFailure, startRun, unexpectedFailure, type PipelineDeps } from './run-context.js';
import type { RunRequest, RunResult } from './run-types.js';
import { prepare } from './phases/prepare.js';
import { bringUp } from './phases/bring-up.js';
import { verifyBefore } from './phases/verify-before.js';
import { attemptSandboxes } from './phases/attempt-sandboxes.js';
import { connectModel, runAttempts } from './phases/attempts.js';
import { checkPolicies, verifyEach } from './phases/verify-each.js';
import { fillFromAttempt, publishInput, select } from './phases/publish-input.js';

export type { PipelineDeps };
export { DEFAULT_TIMEOUT_MINUTES } from './repo-config.js';
export { DEFAULT_SETUP_TIMEOUT_MS, setupInstallsTree } from './phases/bring-up.js';
export { DEFAULT_TEST_TIMEOUT_MS } from './phases/run-test.js';
export { OUTPUT_TAIL_CHARS } from './command-output.js';
export { UNTRACKED_NOISE } from './phases/exclude-untracked.js';
export { taskText } from './phases/attempts.js';

export async function runPipeline(
  request: RunRequest,
  deps: PipelineDeps = {},
): Promise<RunResult> {
  const run = startRun(request, deps);
  try {
    // 1. prepare: clone on the host (cached mirror), read .github/frognano.yml.
    const prepared = await prepare(run);
    if (isFailure(prepared)) return run.stop(prepared);

    // 2. setup: a hardened sandbox with the tree, set up (or from a snapshot), network cut.
    const sandbox = await bringUp(run, prepared, true);
    if (isFailure(sandbox)) return run.stop(sandbox);

    // Several attempts: the set-up sandbox is frozen now; the others start from it meanwhile.
    const copies = await attemptSandboxes(run, prepared, sandbox, prepared.attempts);

    // 3. verify-before: the test command on the original tree.
    const before = await verifyBefore(run, prepared, sandbox);
    if (before) return run.stop(before);

    // 4. attempts: N Leaf loops at once, each in its own sandbox from the same prepared state;
    // with several, each attempt's verification (5) starts as soon as its loop ends.
    const modelFor = await connectModel(run, prepared.attempts);
    if (isFailure(modelFor)) return run.stop(modelFor);
    const verifier = verifyEach(run, prepared, copies.fresh);
    const attempts = await runAttempts(run, prepared, copies.sandboxes, modelFor, verifier.early);
    fillFromAttempt(run.result, attempts[0]!);
    const failed = attempts.every((a) => a.failure) ? attempts[0]!.failure : undefined;
    if (failed) return run.stop(failed);

    // 5. verify each patch in a fresh sandbox with the repository's own harness; policy.
    await verifier.all(attempts);
    if (run.signal.aborted) return run.stop({ outcome: 'cancelled', error: '' });
    await checkPolicies(run, prepared, attempts);

    // 6. select the winner by executed evidence; the result is what publishing consumes.
    const { winner, rankings } = select(run, attempts);
    return await publishInput(run, attempts, winner, rankings);
  } catch (error) {
    return run.stop(unexpectedFailure(run, error));
  } finally {
    // 7. always: sandboxes, images and the work directory go, whatever happened above.
    await run.finish();
  }
}
