import type { ToolHelperChannel } from './tool-helper-channel.js';

/** setTimeout fires at once for delays above 2^31-1 ms, so longer waits are re-armed. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * One exec's watch: the ids the helper reports, the cancel an abort asks for, and the
 * watchdog that calls `onOverrun` when the helper has not finished the command in time
 * (its timeout, or an abort, plus the grace).
 */
export class ExecWatch {
  #id = 0;
  #pgid = 0;
  #cancelRequested = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly helper: ToolHelperChannel,
    private readonly graceMs: number,
    private readonly signal: AbortSignal | undefined,
    private readonly onOverrun: (pgid: number) => void,
  ) {}

  /** The request's callbacks: its id, then the command's process group once it runs. */
  readonly events = {
    onId: (value: number): void => {
      this.#id = value;
    },
    onStarted: (value: number): void => {
      this.#pgid = value;
      if (this.#cancelRequested) this.helper.cancel(this.#id);
    },
  };

  start(timeoutMs: number | undefined): void {
    this.signal?.addEventListener('abort', this.#onAbort, { once: true });
    if (timeoutMs !== undefined) this.#arm(timeoutMs + this.graceMs);
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.signal?.removeEventListener('abort', this.#onAbort);
  }

  readonly #onAbort = (): void => {
    this.#cancelRequested = true;
    if (this.#pgid) this.helper.cancel(this.#id);
    this.#arm(this.graceMs);
  };

  #arm(afterMs: number): void {
    clearTimeout(this.#timer);
    const due = Date.now() + afterMs;
    const fire = (): void => {
      const left = due - Date.now();
      if (left > 0) this.#timer = setTimeout(fire, Math.min(left, MAX_TIMER_MS));
      else this.onOverrun(this.#pgid);
    };
    this.#timer = setTimeout(fire, Math.min(afterMs, MAX_TIMER_MS));
  }
}
