// The tool calls of one step (leaf-protocol.md §5): run in order, one tool message each, their
// estimated tokens added to the context count; a cancel, the deadline or a sandbox failure
// stops the run before the next call.
import {
  describeError,
  interrupted,
  stopped,
  wallDeadline,
  type LeafStepSummary,
  type LoopState,
  type Stop,
} from './loop-state.js';
import type { ToolCall, ToolMessage } from './messages.js';
import { AbortedError, DEADLINE_PASSED, runToolCall } from './run-tool-call.js';
import { SandboxLost } from './sandbox.js';
import { recoverSandbox, rememberCall } from './sandbox-recovery.js';
import { arrayJsonBytes, tokensFromBytes } from './token-estimate.js';
import { round3, type TrajectoryStep } from './trajectory.js';

const SUMMARY_TEXT_LIMIT = 200;

export async function runToolCalls(
  state: LoopState,
  calls: ToolCall[],
  step: TrajectoryStep,
  summary: LeafStepSummary,
): Promise<Stop | undefined> {
  let toolBytes = 0;
  let toolCount = 0;
  let stop: Stop | undefined;
  for (const call of calls) {
    stop = interrupted(state);
    if (stop) break;
    const toolStarted = performance.now();
    const outcome = await callTool(state, step.step, call);
    if (typeof outcome !== 'string') {
      stop = outcome;
      break;
    }
    const observation = outcome;
    const toolMs = performance.now() - toolStarted;
    const toolMessage: ToolMessage = {
      role: 'tool',
      tool_call_id: call.id,
      content: observation,
    };
    toolBytes += state.recorder.appendMessage(toolMessage);
    toolCount++;
    step.observations.push({ tool: call.function.name, observation });
    step.tool_latency_ms.push(round3(toolMs));
    summary.toolMs += toolMs;
    summary.tools.push({
      name: call.function.name,
      args: shorten(call.function.arguments),
      outcome: shorten(firstLine(observation)),
    });
  }
  if (toolCount > 0) state.contextTokens += tokensFromBytes(arrayJsonBytes(toolBytes, toolCount));
  return stop;
}

/**
 * The observation, or the stop a call past the deadline, a cancel or a sandbox failure means. A
 * lost sandbox is rebuilt and replayed, then the call runs again (sandbox-recovery.ts).
 */
async function callTool(state: LoopState, index: number, call: ToolCall): Promise<string | Stop> {
  const { sandbox, signal, logger, instanceId } = state.options;
  for (;;) {
    try {
      const outcome = await runToolCall(sandbox, call.function, signal, wallDeadline(state));
      if (outcome === DEADLINE_PASSED) {
        logger?.warn(
          { instanceId, step: index, tool: call.function.name },
          'tool call outlived the run deadline; abandoned',
        );
        return stopped('max_time');
      }
      rememberCall(state, call.function, outcome);
      return outcome;
    } catch (error) {
      if (error instanceof AbortedError) return stopped('cancelled');
      if (error instanceof SandboxLost) {
        const stop = await recoverSandbox(state, error, { step: index, tool: call.function.name });
        if (stop) return stop;
        continue;
      }
      const stop = stopped('tool_error', describeError(error));
      logger?.warn(
        { instanceId, step: index, tool: call.function.name, error: stop.error },
        'sandbox failed',
      );
      return stop;
    }
  }
}

function firstLine(text: string): string {
  const newline = text.indexOf('\n');
  return newline === -1 ? text : text.slice(0, newline);
}

function shorten(text: string): string {
  return text.length > SUMMARY_TEXT_LIMIT ? `${text.slice(0, SUMMARY_TEXT_LIMIT)}…` : text;
}
