// Saving the trajectory (leaf-protocol.md §6): the fields after `steps` as the run stands,
// written after every step and at the end; a failed write is kept, never thrown.
import { describeError, elapsedMs, type LoopState, type Stop } from './loop-state.js';
import { RUNNING_EXIT_REASON, round3, type TrajectoryTail } from './trajectory.js';

export interface TailStatus {
  status: 'running' | 'finished';
  patch: string | null;
  patchError: string | null;
}

export const RUNNING: Readonly<TailStatus> = { status: 'running', patch: null, patchError: null };

export function trajectoryTail(
  state: LoopState,
  stop: Stop | undefined,
  extra: TailStatus,
): TrajectoryTail {
  const { limits, usage } = state;
  return {
    n_steps: state.nSteps,
    exit_reason: stop?.reason ?? RUNNING_EXIT_REASON,
    error: stop?.error ?? null,
    final_message: stop?.finalMessage ?? '',
    context_tokens: state.contextTokens,
    elapsed_sec: round3(elapsedMs(state) / 1000),
    output_patch: extra.patch,
    // Upstream: every checkpoint is partial, the final record is not.
    partial: extra.status !== 'finished',
    status: extra.status,
    ended_on_limit: stop !== undefined && stop.reason !== 'agent',
    budget: {
      max_steps: limits.maxSteps,
      max_context_tokens: limits.maxContextTokens,
      max_tokens_per_turn: limits.maxTokensPerTurn,
      time_budget_sec: limits.timeBudgetMs === undefined ? null : limits.timeBudgetMs / 1000,
    },
    usage: {
      requests: usage.requests,
      requests_without_usage: usage.requestsWithoutUsage,
      prompt_tokens: usage.promptTokens,
      completion_tokens: usage.completionTokens,
    },
    tool_call_fallbacks: state.fallbacks,
    ...(state.options.model.servedBy ? { model_endpoints: state.options.model.servedBy() } : {}),
    ...(state.options.model.waitedMs
      ? { model_wait_sec: round3(state.options.model.waitedMs() / 1000) }
      : {}),
    patch_error: extra.patchError,
    sandbox_recoveries: state.recoveries.map((recovery) => ({ ...recovery })),
  };
}

export async function checkpoint(state: LoopState, tail: TrajectoryTail): Promise<void> {
  try {
    await state.recorder.write(tail);
  } catch (error) {
    // A full disk must not throw away the run: the result still carries everything.
    state.trajectoryError = describeError(error);
    state.options.logger?.warn(
      { instanceId: state.options.instanceId, error: state.trajectoryError },
      'trajectory write failed',
    );
  }
}
