// Work raced against the run's deadline and the caller's cancel: a model query (raceAbort) or a
// tool call (runToolCall), ended on abort even when the awaited work ignores its signal.
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

/** setTimeout fires at once beyond 2^31-1 ms, so longer waits are not timed at all. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export class AbortedError extends Error {
  constructor() {
    super('aborted');
    this.name = 'AbortedError';
  }
}

export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      // The abandoned work may still fail later; that is expected and must stay quiet.
      promise.catch(() => undefined);
      reject(new AbortedError());
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
