// The job-level deadline: armed when the agent starts, with its time limit. A run still going that
// long plus a grace later (patch capture, the tests after the change, the policy) is aborted, and
// abandoned if it will not stop. Waiting for a model slot does not count against it.
import type { Logger } from 'pino';
import type { RunProgress } from '../runner/run-types.js';
import { ModelWaits } from './model-waits.js';

export const DEFAULT_JOB_DEADLINE_GRACE_MS = 15 * 60_000;
const DEFAULT_JOB_ABANDON_MS = 60_000;
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The run went past its time limit plus the grace; the worker stopped it. */
export class JobOverdue extends Error {
  constructor(readonly limitMs: number) {
    super('the run exceeded its time limit');
    this.name = 'JobOverdue';
  }
}

export interface JobDeadlineOptions {
  graceMs?: number;
  abandonMs?: number;
}

export class JobDeadline {
  readonly #waits = new ModelWaits();
  #overdue: JobOverdue | undefined;
  #timer: NodeJS.Timeout | undefined;
  #giveUp: (error: JobOverdue) => void = () => undefined;
  /** Rejects with the overdue error when a stopped run did not wind down in time. */
  readonly abandoned = new Promise<never>((_, reject) => (this.#giveUp = reject));

  constructor(
    private readonly controller: AbortController,
    private readonly log: Logger,
    private readonly options: JobDeadlineOptions = {},
  ) {
    this.abandoned.catch(() => undefined);
  }

  /** The run's abort signal (a cancel, a shutdown or this deadline). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Set when the deadline passed and the run was stopped. */
  get overdue(): JobOverdue | undefined {
    return this.#overdue;
  }

  /** Feed every progress event: the agent's start arms it, model-slot waits move it. */
  note(event: RunProgress): void {
    if (event.kind === 'phase' && event.phase === 'agent' && event.timeoutMs !== undefined) {
      this.#arm(event.timeoutMs);
    }
    this.#waits.note(event);
  }

  clear(): void {
    clearTimeout(this.#timer);
  }

  #arm(timeoutMs: number): void {
    if (this.#timer || this.#overdue) return;
    const limitMs = timeoutMs + (this.options.graceMs ?? DEFAULT_JOB_DEADLINE_GRACE_MS);
    const armedAt = performance.now();
    const waits = this.#waits;
    const fire = (): void => {
      // Waiting for a model slot moved the loops' budgets on, and so the job's deadline.
      const due = armedAt + limitMs + waits.extraMs() - performance.now();
      if (waits.waiting || (waits.extraMs() > 0 && due > 0)) {
        this.#timer = setTimeout(fire, Math.min(Math.max(due, 1000), MAX_TIMER_MS));
        return;
      }
      const overdue = new JobOverdue(limitMs);
      this.#overdue = overdue;
      this.log.warn({ limitMs }, 'run exceeded its time limit; stopping it');
      this.controller.abort(overdue);
      this.#timer = setTimeout(
        () => this.#giveUp(overdue),
        this.options.abandonMs ?? DEFAULT_JOB_ABANDON_MS,
      );
    };
    this.#timer = setTimeout(fire, Math.min(limitMs, MAX_TIMER_MS));
  }
}
