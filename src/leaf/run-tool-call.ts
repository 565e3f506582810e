// One tool call raced against the run's deadline and the caller's cancel.
import { MAX_TIMER_MS, raceAbort } from './race-abort.js';
import type { Sandbox } from './sandbox.js';
import { executeTool } from './tools.js';

/**
 * How long past the run's deadline a tool call may still take before it is abandoned (and
 * its command killed). A Bash call's timeout is clamped to the deadline, so it normally
 * returns its timed-out observation well within this.
 */
export const TOOL_DEADLINE_GRACE_MS = 2000;

export const DEADLINE_PASSED = Symbol('deadline passed');

/**
 * One tool call, raced against the run's deadline (**Ours**): a Bash timeout is clamped to the
 * time left, and a call still running a grace period after the deadline is aborted and
 * abandoned. The caller's cancel aborts the call too (its command is killed).
 */
export async function runToolCall(
  sandbox: Sandbox,
  call: { name: string; arguments: string },
  signal: AbortSignal | undefined,
  deadline: number,
): Promise<string | typeof DEADLINE_PASSED> {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  const timeLeftMs = deadline - performance.now();
  const finite = Number.isFinite(timeLeftMs);
  const task = executeTool(sandbox, call.name, call.arguments, {
    signal: controller.signal,
    ...(finite ? { timeLeftMs } : {}),
  });
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<typeof DEADLINE_PASSED>((resolve) => {
    const wait = timeLeftMs + TOOL_DEADLINE_GRACE_MS;
    if (finite && wait <= MAX_TIMER_MS) {
      timer = setTimeout(() => resolve(DEADLINE_PASSED), Math.max(0, wait));
    }
  });
  try {
    const first = await raceAbort(Promise.race([task, expired]), signal);
    if (first === DEADLINE_PASSED) {
      // The abandoned call may still fail later; that is expected and must stay quiet.
      task.catch(() => undefined);
      controller.abort();
    }
    return first;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    if (signal?.aborted) controller.abort();
  }
}
