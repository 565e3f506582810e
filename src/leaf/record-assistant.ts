// Records a step's model answer (leaf-protocol.md §1, §5): counts its usage,
// recovers tool calls written as text, appends the assistant message, takes the context count,
// and opens the step's trajectory record and summary for its tool calls to fill.
import { contextTokensAfter } from './context-limits.js';
import type { LoopState } from './loop-state.js';
import type { LeafStepSummary, LeafUsageTotals } from './loop-types.js';
import type { AssistantMessage } from './messages.js';
import type { ModelResponse } from './model.js';
import { round3 } from './round3.js';
import { applyToolCallFallback } from './tool-call-fallback.js';
import { stepUsage, type TrajectoryStep } from './trajectory.js';

export interface RecordedAssistant {
  message: AssistantMessage;
  step: TrajectoryStep;
  summary: LeafStepSummary;
}

export function recordAssistant(
  state: LoopState,
  index: number,
  response: ModelResponse,
): RecordedAssistant {
  countUsage(state.usage, response);
  const fallback = applyToolCallFallback(response.message, state.fallbackIds);
  const message: AssistantMessage = fallback.message;
  if (fallback.applied) {
    state.fallbacks++;
    state.fallbackIds += message.tool_calls?.length ?? 0;
    state.options.logger?.info(
      { instanceId: state.options.instanceId, step: index, source: fallback.source },
      'tool calls recovered from text',
    );
  }
  state.recorder.appendMessage(message);
  state.contextTokens = contextTokensAfter(response, state.recorder);

  // Field order is the trajectory's: elapsed_sec is set when the step ends.
  const step: TrajectoryStep = {
    step: index,
    assistant: message,
    observations: [],
    finish_reason: response.finishReason,
    usage: stepUsage(response.usage),
    model_latency_ms: round3(response.latencyMs),
    tool_latency_ms: [],
    tool_call_fallback: fallback.applied,
    context_tokens: state.contextTokens,
    elapsed_sec: 0,
  };
  if (fallback.applied) step.raw_assistant = response.message;
  const summary: LeafStepSummary = {
    step: index,
    tools: [],
    modelMs: response.latencyMs,
    toolMs: 0,
  };
  state.summaries.push(summary);
  return { message, step, summary };
}

function countUsage(usage: LeafUsageTotals, response: ModelResponse): void {
  usage.requests++;
  if (response.usage) {
    usage.promptTokens += response.usage.promptTokens ?? 0;
    usage.completionTokens += response.usage.completionTokens ?? 0;
  } else {
    usage.requestsWithoutUsage++;
  }
}
