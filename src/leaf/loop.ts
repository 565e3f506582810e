// The Leaf agent loop (leaf-protocol.md §5), in the shape of mini-swe-agent's agent: a short
// loop over one step, each step returning the stop it ran into or nothing to go on, with the
// run's counters in one state object (loop-state.ts).
//
//   runLeaf   start the state (system + user), checkpoint an empty trajectory, then for each
//             step up to max_steps: stop with `cancelled` / `max_time` (stop.ts), else step;
//             falling out of the loop is `max_turns`; finishRun captures the patch after any
//             stop but `cancelled` and writes the final trajectory (finish-run.ts).
//   runStep   (step.ts) query the model (query-model.ts: a failed query stops with
//             `cancelled`, `max_time`, `max_context_len` or `llm_query_error` and records
//             nothing) → record the assistant message and its usage (record-assistant.ts) →
//             a cut-off turn stops, no tool calls stops with `agent`, else run the tool calls
//             in order (run-tool-calls.ts) and stop with `max_context_len` at the limit →
//             commit the step, checkpoint the trajectory, report progress.
//
// History is append-only, and the trajectory is checkpointed after every step.
import { finishRun } from './finish-run.js';
import { createLoopState } from './loop-state.js';
import type { LeafRunOptions, LeafRunResult } from './loop-types.js';
import { runStep } from './step.js';
import { interrupted, stopped, type Stop } from './stop.js';
import { RUNNING, checkpoint, trajectoryTail } from './trajectory-checkpoint.js';

export type {
  LeafRunOptions,
  LeafRunResult,
  LeafStepProgress,
  LeafStepSummary,
  LeafUsageTotals,
} from './loop-types.js';
export { isContextOverflowError } from './context-limits.js';
export { CAPTURE_DEADLINE_GRACE_MS } from './finish-run.js';
export { TOOL_DEADLINE_GRACE_MS } from './run-tool-call.js';

export async function runLeaf(options: LeafRunOptions): Promise<LeafRunResult> {
  const state = createLoopState(options);
  // A record exists from the start, so a run stuck in its first request is still visible.
  await checkpoint(state, trajectoryTail(state, undefined, RUNNING));
  let stop: Stop | undefined;
  for (let index = 0; index < state.limits.maxSteps && !stop; index++) {
    stop = interrupted(state) ?? (await runStep(state, index));
  }
  // No request follows a stop, so the model slot goes to the next loop now: the patch capture
  // and the last trajectory write need no GPU.
  await state.options.model.release?.();
  return finishRun(state, stop ?? stopped('max_turns'));
}
