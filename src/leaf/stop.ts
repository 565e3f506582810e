// How a Leaf run stops (leaf-protocol.md §5): the reason, with the error text and final message
// that go with it.
import { budgetNow, type LoopState } from './loop-state.js';
import type { StopReason } from './protocol.js';

export interface Stop {
  reason: StopReason;
  error: string | null;
  finalMessage: string;
}

export function stopped(reason: StopReason, error: string | null = null, finalMessage = ''): Stop {
  return { reason, error, finalMessage };
}

/** §5, checked before each step and each tool call: `cancelled` first, then `max_time`. */
export function interrupted(state: LoopState): Stop | undefined {
  if (state.options.signal?.aborted) return stopped('cancelled');
  if (budgetNow(state) >= state.deadline) return stopped('max_time');
  return undefined;
}
