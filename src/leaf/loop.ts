// The Leaf agent loop (leaf-protocol.md §5), in the shape of mini-swe-agent's agent: a short
// loop over one step (step.ts), each step returning the stop it ran into or nothing to go on,
// with the run's counters in one state object (loop-state.ts).
//
//   runLeaf    start the state (system + user), checkpoint an empty trajectory, then for each
//              step up to max_steps: stop with `cancelled` / `max_time`, else step; falling out
//              of the loop is `max_turns`. The model slot is given back as the steps end.
//   finishRun  after any stop but `cancelled` capture the patch (partial work is still shown),
//              then write the final trajectory and put the result together.
//
// History is append-only, and the trajectory is checkpointed after every step.
import { capturePatch, type CapturePatchOptions } from './capture-patch.js';
import {
  budgetNow,
  createLoopState,
  describeError,
  elapsedMs,
  interrupted,
  stopped,
  type LeafRunOptions,
  type LeafRunResult,
  type LoopState,
  type Stop,
} from './loop-state.js';
import { SandboxLost } from './sandbox.js';
import { recoverSandbox } from './sandbox-recovery.js';
import { runStep } from './step.js';
import { RUNNING, checkpoint, trajectoryTail } from './trajectory-checkpoint.js';

export type {
  LeafRunOptions,
  LeafRunResult,
  LeafStepProgress,
  LeafStepSummary,
  LeafUsageTotals,
} from './loop-state.js';
export { isContextOverflowError } from './context-limits.js';
export { TOOL_DEADLINE_GRACE_MS } from './run-tool-call.js';

/**
 * How long past the run's deadline the patch capture may still take: enough for git on an
 * ordinary repository, not for hashing a file the agent blew up to many gigabytes.
 */
export const CAPTURE_DEADLINE_GRACE_MS = 20_000;

/** Runs the loop to its stop; gives the model back (`Model.release`) once, however it ends. */
export async function runLeaf(options: LeafRunOptions): Promise<LeafRunResult> {
  let state: LoopState;
  let stop: Stop | undefined;
  try {
    state = createLoopState(options);
    // A record exists from the start, so a run stuck in its first request is still visible.
    await checkpoint(state, trajectoryTail(state, undefined, RUNNING));
    for (let index = 0; index < state.limits.maxSteps && !stop; index++) {
      stop = interrupted(state) ?? (await runStep(state, index));
    }
  } finally {
    // No request follows a stop, so the model slot goes to the next loop now: the patch capture
    // and the last trajectory write need no GPU.
    await options.model.release?.();
  }
  return finishRun(state, stop ?? stopped('max_turns'));
}

interface CapturedPatch {
  bytes: Buffer;
  text: string | null;
  error: string | null;
}

async function finishRun(state: LoopState, final: Stop): Promise<LeafRunResult> {
  const patch: CapturedPatch =
    final.reason === 'cancelled'
      ? { bytes: Buffer.alloc(0), text: null, error: null }
      : await captureFinalPatch(state, final);
  const finalTail = trajectoryTail(state, final, {
    status: 'finished',
    patch: patch.text,
    patchError: patch.error,
  });
  await checkpoint(state, finalTail);
  state.options.logger?.info(
    {
      instanceId: state.options.instanceId,
      exitReason: final.reason,
      steps: state.nSteps,
      contextTokens: state.contextTokens,
    },
    'leaf run finished',
  );

  return {
    trajectory: state.recorder.toRecord(finalTail),
    exitReason: final.reason,
    error: final.error,
    finalMessage: final.finalMessage,
    patch: patch.text ?? '',
    patchBytes: patch.bytes,
    patchError: patch.error,
    partial: final.reason !== 'agent',
    nSteps: state.nSteps,
    contextTokens: state.contextTokens,
    usage: state.usage,
    steps: state.summaries,
    elapsedMs: elapsedMs(state),
    toolCallFallbacks: state.fallbacks,
    sandboxRecoveries: state.recoveries,
    trajectoryError: state.trajectoryError,
  };
}

/**
 * Upstream never records a failed capture as an empty patch: it retries the attempt. Ours tries
 * the capture again once (a lost sandbox rebuilt and replayed first), and only then reports the
 * error, which fails the attempt (runner/phases/agent.ts).
 */
async function captureFinalPatch(state: LoopState, final: Stop): Promise<CapturedPatch> {
  // Record the stop before the (possibly slow) capture, so a crash there loses nothing else.
  await checkpoint(state, trajectoryTail(state, final, RUNNING));
  // One deadline for both tries; the first failure is the one reported (a retry after a
  // killed `git add` only meets the lock it left).
  const options = captureOptions(state);
  let first: string | undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      const bytes = await capturePatch(state.options.sandbox, options);
      return { bytes, text: bytes.toString('utf8'), error: null };
    } catch (error) {
      const patchError = describeError(error);
      first ??= patchError;
      state.options.logger?.warn(
        { instanceId: state.options.instanceId, error: patchError, attempt },
        'patch capture failed',
      );
      const unrecovered =
        error instanceof SandboxLost
          ? await recoverSandbox(state, error, { step: null, tool: 'patch capture' })
          : undefined;
      const timeLeft = options.deadline === undefined || Date.now() < options.deadline;
      if (attempt >= CAPTURE_ATTEMPTS || unrecovered || !timeLeft) {
        const why = unrecovered ? `; ${unrecovered.error ?? unrecovered.reason}` : '';
        return { bytes: Buffer.alloc(0), text: null, error: first + why };
      }
    }
  }
}

/** One retry, as a fresh capture: enough for a passing fault, never a loop. */
const CAPTURE_ATTEMPTS = 2;

function captureOptions(state: LoopState): CapturePatchOptions {
  if (state.limits.timeBudgetMs === undefined) return {};
  return {
    deadline:
      Date.now() + Math.max(0, state.deadline - budgetNow(state)) + CAPTURE_DEADLINE_GRACE_MS,
  };
}
