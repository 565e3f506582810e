// What the status comment says while a run works, from the pipeline's progress events: the
// phase, the step, and with several attempts each attempt's step and whether its patch is
// being (or has been) verified; an attempt verified early keeps saying so in later phases.
import type { RunProgress } from '../runner/run-types.js';
import type { RunStatus } from './run-status.js';

type Running = Extract<RunStatus, { kind: 'running' }>;

export class RunningStatus {
  #phase: Running['phase'] = 'clone';
  #step: number | undefined;
  #maxSteps: number | undefined;
  readonly #steps: Record<number, number> = {};
  readonly #verification: Record<number, 'verifying' | 'done'> = {};
  readonly #waiting = new Set<number>();

  next(event: RunProgress, retried: boolean | undefined): Running {
    if (event.kind === 'phase') {
      this.#phase = event.phase;
      this.#step = event.phase === 'agent' ? 0 : undefined;
    } else if (event.kind === 'step') {
      this.#phase = 'agent';
      this.#step = event.step;
      this.#maxSteps = event.maxSteps;
      if (event.attempt !== undefined) this.#steps[event.attempt] = event.step;
    } else if (event.kind === 'model-wait') {
      const attempt = event.attempt ?? 1;
      if (event.attempt !== undefined) this.#steps[attempt] ??= 0;
      if (event.waiting) this.#waiting.add(attempt);
      else this.#waiting.delete(attempt);
    } else {
      this.#steps[event.attempt] ??= 0;
      this.#verification[event.attempt] = event.state;
    }
    const several = Object.keys(this.#steps).length > 0;
    return {
      kind: 'running',
      phase: this.#phase,
      step: this.#step,
      maxSteps: this.#maxSteps,
      ...(several ? { attempts: { ...this.#steps } } : {}),
      ...(Object.keys(this.#verification).length > 0
        ? { verification: { ...this.#verification } }
        : {}),
      ...(this.#waiting.size > 0 ? { waiting: [...this.#waiting].sort((a, b) => a - b) } : {}),
      retried,
    };
  }
}
