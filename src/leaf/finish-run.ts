// The end of a Leaf run (leaf-protocol.md §5): after any stop but `cancelled` the patch is
// captured (partial work is still shown), then the final trajectory is written and the
// result assembled from the loop's state.
import { capturePatch, type CapturePatchOptions } from './capture-patch.js';
import { describeError } from './describe-error.js';
import { budgetNow, elapsedMs, type LoopState } from './loop-state.js';
import type { LeafRunResult } from './loop-types.js';
import { SandboxLost } from './sandbox.js';
import { recoverSandbox } from './sandbox-recovery.js';
import type { Stop } from './stop.js';
import { RUNNING, checkpoint, trajectoryTail } from './trajectory-checkpoint.js';

/**
 * How long past the run's deadline the patch capture may still take: enough for git on an
 * ordinary repository, not for hashing a file the agent blew up to many gigabytes.
 */
export const CAPTURE_DEADLINE_GRACE_MS = 20_000;

interface CapturedPatch {
  bytes: Buffer;
  text: string | null;
  error: string | null;
}

export async function finishRun(state: LoopState, final: Stop): Promise<LeafRunResult> {
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
