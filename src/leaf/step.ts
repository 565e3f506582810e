// One step of the Leaf loop (leaf-protocol.md §5): query the model, record the assistant
// message, run its tool calls; then commit the step, checkpoint and report progress. Returns
// the stop the step ran into, or nothing to go on.
import { classifyLengthFinish, isLengthFinish } from './context-limits.js';
import { describeError } from './describe-error.js';
import { elapsedMs, type LoopState } from './loop-state.js';
import type { LeafStepProgress } from './loop-types.js';
import type { ModelResponse } from './model.js';
import { queryModel } from './query-model.js';
import { recordAssistant, type RecordedAssistant } from './record-assistant.js';
import { round3 } from './round3.js';
import { runToolCalls } from './run-tool-calls.js';
import { stopped, type Stop } from './stop.js';
import { RUNNING, checkpoint, trajectoryTail } from './trajectory-checkpoint.js';

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
