// Ends a wait on abort even when the awaited work ignores its signal.

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
