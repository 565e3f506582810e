// One run, start to finish, as named phases (docs/architecture.md, step 5). Used by
// `frognano solve` and by the GitHub App alike; it knows nothing of GitHub. Each phase lives
// in src/runner/phases/ under its RunPhase name and returns what it made; this file is the
// flow, top to bottom, and keeps those pieces; the result is assembled from them once, at the
// end (assemble-result.ts).
import { assembleResult, type RunPieces } from './assemble-result.js';
import {
  isFailure,
  startRun,
  unexpectedFailure,
  type Failure,
  type PipelineDeps,
  type RunContext,
} from './run-context.js';
import type { RunRequest, RunResult } from './run-types.js';
import { clone } from './phases/clone.js';
import { configure } from './phases/config.js';
import { judgeReusedEnvironment, setUp } from './phases/setup.js';
import { verifyBefore } from './phases/verify-before.js';
import { attemptSandboxes } from './phases/attempt-sandboxes.js';
import { connectModel } from './phases/connect-model.js';
import { attemptTrajectories, runAttempts } from './phases/agent.js';
import { patchReadings } from './phases/read-patch.js';
import { verifyEach } from './phases/verify-after.js';
import { checkPolicies } from './phases/policy.js';
import { judge, select } from './phases/select.js';
import { trajectoryEnvironment } from './trajectory-environment.js';

export type { PipelineDeps };
export { DEFAULT_TIMEOUT_MINUTES } from './repo-config.js';
export { DEFAULT_SETUP_TIMEOUT_MS } from './phases/setup.js';
export { setupInstallsTree } from './phases/sandbox.js';
export { DEFAULT_TEST_TIMEOUT_MS } from './phases/run-test.js';
export { OUTPUT_TAIL_CHARS } from './command-output.js';
export { UNTRACKED_NOISE } from './phases/exclude-untracked.js';
export { taskText } from './phases/agent.js';
export { prepareEnvironment } from './prepare-environment.js';

export async function runPipeline(
  request: RunRequest,
  deps: PipelineDeps = {},
): Promise<RunResult> {
  const run = startRun(request, deps);
  const made: RunPieces = {};
  let failure: Failure | undefined;
  let wallMs = 0;
  try {
    const stopped = await phases(run, made);
    failure = stopped && run.ending(stopped);
  } catch (error) {
    failure = run.ending(unexpectedFailure(run, error));
  } finally {
    // cleanup, always: sandboxes, images and the work directory go, whatever happened above.
    wallMs = await run.finish();
  }
  return assembleResult(request, made, { failure, timings: run.timings, wallMs });
}

/** The phases in order, each one's piece kept in `made`; the failure that stopped the run. */
async function phases(run: RunContext, made: RunPieces): Promise<Failure | undefined> {
  // clone: on the host (cached mirror). config: .github/frognano.yml, budgets, the test command.
  const workspace = await clone(run);
  if (isFailure(workspace)) return workspace;
  made.baseCommit = workspace.baseCommit;
  const configured = await configure(run, workspace);
  made.config = configured.facts;
  if (configured.failure) return configured.failure;
  const { prepared } = configured;

  // sandbox, setup: a hardened sandbox with the tree, set up (or from a snapshot), network cut.
  const setup = await setUp(run, prepared);
  made.setup = setup.facts;
  if (setup.failure) return setup.failure;
  // Several attempts: the set-up sandbox is frozen now; the others start from it meanwhile.
  const copies = await attemptSandboxes(
    run,
    prepared,
    setup.sandbox,
    prepared.attempts,
    setup.facts.snapshotImage,
  );

  // verify-before: the test command on the original tree.
  const before = await verifyBefore(run, prepared, setup.sandbox);
  made.verifyBefore = before.facts;
  if (setup.facts.snapshotHit && setup.facts.environment)
    await judgeReusedEnvironment(
      run,
      prepared,
      setup.sandbox,
      setup.facts.environment,
      before.facts.verifyBefore,
    );
  if (before.failure) return before.failure;

  // agent: N Leaf loops at once, each in its own sandbox from the same prepared state, each
  // capturing its patch as it ends; with several, each attempt's verify-after starts as soon
  // as its loop ends.
  const modelFor = await connectModel(run, prepared.attempts);
  if (isFailure(modelFor)) return modelFor;
  const readings = patchReadings(run, prepared);
  const verifier = verifyEach(run, prepared, readings, copies.fresh);
  const trajectories = await attemptTrajectories(run, prepared.attempts);
  made.trajectoryPath = trajectories[0]!;
  const attempts = await runAttempts(
    run,
    prepared,
    copies.sandboxes,
    trajectories,
    modelFor,
    verifier.early,
    trajectoryEnvironment(setup.facts.environment, setup.facts.egress),
  );
  made.firstAttempt = attempts[0]!;
  if (attempts.every((a) => a.failure)) return attempts[0]!.failure;

  // verify-after: each patch in a fresh sandbox with the repository's own harness. policy.
  const verified = await verifier.all(attempts);
  if (run.signal.aborted) return { outcome: 'cancelled', error: '' };
  const violations = await checkPolicies(run, prepared, readings, attempts);

  // Select the winner by executed evidence: what the result holds and publishing consumes.
  const judged = attempts.map((a, i) => judge(a, readings.of(a), verified[i], violations[i]!));
  made.selection = await select(run, judged, before.facts.verifyBefore);
  return undefined;
}
