// The context-length rules of leaf-protocol.md §5: what counts as an overflow, how the context
// count is taken from a response, and which limit a cut-off (`length`) turn ran into.
import type { ModelResponse } from './model.js';
import type { StopReason } from './protocol.js';
import type { TrajectoryRecorder } from './trajectory.js';

const LENGTH_FINISH_REASONS = new Set(['length', 'max_tokens', 'max_new_tokens']);

/** §5: the error text reads like a context overflow. */
export function isContextOverflowError(text: string): boolean {
  const lower = text.toLowerCase();
  return (
    lower.includes('context_length_exceeded') ||
    lower.includes('reduce the length') ||
    lower.includes('maximum context length') ||
    (lower.includes('context length') && lower.includes('exceed'))
  );
}

/** §5: the turn was cut off, so its tool calls may be cut off too (any case, as upstream: `LENGTH`). */
export function isLengthFinish(finishReason: string | null): boolean {
  return finishReason !== null && LENGTH_FINISH_REASONS.has(finishReason.toLowerCase());
}

/** Context tokens := usage.total_tokens, else prompt + completion, else the estimate. */
export function contextTokensAfter(response: ModelResponse, recorder: TrajectoryRecorder): number {
  const usage = response.usage;
  if (usage?.totalTokens !== undefined) return usage.totalTokens;
  if (usage?.promptTokens !== undefined && usage.completionTokens !== undefined) {
    return usage.promptTokens + usage.completionTokens;
  }
  return recorder.historyTokenEstimate();
}

/**
 * Which limit a cut-off turn ran into (upstream's `_length_exit_reason`): with both counts, the
 * context limit, else the per-turn cap, else the context limit; without them the per-turn cap
 * (ours is always set), never a guess from our estimate.
 */
export function classifyLengthFinish(
  response: ModelResponse,
  limits: { maxContextTokens: number; maxTokensPerTurn: number },
): StopReason {
  const prompt = response.usage?.promptTokens;
  const completion = response.usage?.completionTokens;
  if (prompt === undefined || completion === undefined) return 'max_tokens_per_turn';
  if (prompt + completion >= limits.maxContextTokens) return 'max_context_len';
  if (completion >= limits.maxTokensPerTurn) return 'max_tokens_per_turn';
  return 'max_context_len';
}
