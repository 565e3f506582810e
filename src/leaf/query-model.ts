// One model query of a step (leaf-protocol.md §5): the whole history, ended by the caller's
// cancel or the run's deadline; a failure becomes the stop it stands for.
import { isContextOverflowError } from './context-limits.js';
import { describeError } from './describe-error.js';
import { budgetNow, type LoopState } from './loop-state.js';
import type { ModelResponse } from './model.js';
import { TOOL_SCHEMAS } from './protocol.js';
import { MAX_TIMER_MS, raceAbort } from './race-abort.js';
import { stopped, type Stop } from './stop.js';

export type QueryOutcome = { ok: true; response: ModelResponse } | { ok: false; stop: Stop };

export async function queryModel(state: LoopState): Promise<QueryOutcome> {
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
