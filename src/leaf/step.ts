// One step of the Leaf loop (leaf-protocol.md §5), top to bottom: query the model with the whole
// history (a failed query is the stop it stands for), record the assistant message and its
// usage, run its tool calls (run-tool-calls.ts); then commit the step, checkpoint and report
// progress. Returns the stop the step ran into, or nothing to go on.
import {
  classifyLengthFinish,
  contextTokensAfter,
  isContextOverflowError,
  isLengthFinish,
} from './context-limits.js';
import {
  budgetNow,
  describeError,
  elapsedMs,
  stopped,
  type LeafStepProgress,
  type LeafStepSummary,
  type LeafUsageTotals,
  type LoopState,
  type Stop,
} from './loop-state.js';
import type { AssistantMessage } from './messages.js';
import type { ModelResponse } from './model.js';
import { TOOL_SCHEMAS } from './protocol.js';
import { MAX_TIMER_MS, raceAbort } from './run-tool-call.js';
import { runToolCalls } from './run-tool-calls.js';
import { applyToolCallFallback } from './tool-call-fallback.js';
import { RUNNING, checkpoint, trajectoryTail } from './trajectory-checkpoint.js';
import { round3, stepUsage, type TrajectoryStep } from './trajectory.js';

export async function runStep(state: LoopState, index: number): Promise<Stop | undefined> {
  // Counted before the query, as upstream does: a query that fails is one of n_steps.
  state.nSteps++;
  const query = await queryModel(state);
  // A failed query is no step: nothing else is recorded for it.
  if (!query.ok) return query.stop;
  const recorded = recordAssistant(state, index, query.response);
  const stop = await act(state, query.response, recorded);
  const { step, message } = recorded;
  step.elapsed_sec = round3(elapsedMs(state) / 1000);
  state.recorder.commitStep(step);
  await checkpoint(state, trajectoryTail(state, stop, RUNNING));
  notify(state, {
    step: state.nSteps,
    maxSteps: state.limits.maxSteps,
    tools: (message.tool_calls ?? []).map((call) => call.function.name),
    elapsedMs: elapsedMs(state),
    contextTokens: state.contextTokens,
  });
  return stop;
}

type QueryOutcome = { ok: true; response: ModelResponse } | { ok: false; stop: Stop };

/** The whole history, ended by the caller's cancel or the run's deadline. */
async function queryModel(state: LoopState): Promise<QueryOutcome> {
  const { model, signal } = state.options;
  // One controller per request: the caller's cancel and the wall-clock deadline both end it.
  const controller = new AbortController();
  const onAbort = (): void => controller.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  let deadlineHit = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = (atLeastMs: number): void => {
    const remaining = state.deadline - budgetNow(state);
    // setTimeout fires at once beyond 2^31-1 ms; such a far deadline is left to the per-step check.
    if (remaining > MAX_TIMER_MS) return;
    const waited = model.waitedMs?.() ?? 0;
    timer = setTimeout(
      () => {
        // The model waited for a slot meanwhile: that time moved the deadline on.
        if ((model.waitedMs?.() ?? 0) > waited && state.deadline - budgetNow(state) > 0) {
          return arm(250);
        }
        deadlineHit = true;
        controller.abort();
      },
      Math.max(atLeastMs, remaining),
    );
  };
  arm(0);
  try {
    // Raced as well: the SDK does not wake from a retry back-off when aborted.
    const response = await raceAbort(
      model.complete(state.recorder.messages, TOOL_SCHEMAS, controller.signal),
      controller.signal,
    );
    return { ok: true, response };
  } catch (error) {
    if (signal?.aborted) return { ok: false, stop: stopped('cancelled') };
    if (deadlineHit) return { ok: false, stop: stopped('max_time') };
    const text = describeError(error);
    return {
      ok: false,
      stop: isContextOverflowError(text)
        ? stopped('max_context_len')
        : stopped('llm_query_error', text),
    };
  } finally {
    if (timer) clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

interface RecordedAssistant {
  message: AssistantMessage;
  step: TrajectoryStep;
  summary: LeafStepSummary;
}

/**
 * §1: counts the answer's usage, recovers tool calls written as text (§7), appends the
 * assistant message, takes the context count, and opens the step's trajectory record and
 * summary for its tool calls to fill.
 */
function recordAssistant(
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

/** §5: a cut-off turn stops, no tool calls is the agent's answer, else the calls run. */
async function act(
  state: LoopState,
  response: ModelResponse,
  { message, step, summary }: RecordedAssistant,
): Promise<Stop | undefined> {
  const calls = message.tool_calls ?? [];
  // A cut-off turn's tool calls may be cut off too: never run them.
  // Upstream's final_message is the cut-off turn's content too.
  if (isLengthFinish(response.finishReason)) {
    return stopped(classifyLengthFinish(response, state.limits), null, message.content ?? '');
  }
  if (calls.length === 0) return stopped('agent', null, message.content ?? '');
  const stop = await runToolCalls(state, calls, step, summary);
  step.context_tokens = state.contextTokens;
  if (!stop && state.contextTokens >= state.limits.maxContextTokens) {
    return stopped('max_context_len');
  }
  return stop;
}

function notify(state: LoopState, progress: LeafStepProgress): void {
  try {
    state.options.onStep?.(progress);
  } catch (error) {
    state.options.logger?.warn({ error: describeError(error) }, 'onStep callback failed');
  }
}
