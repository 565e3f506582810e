// The job deadline's view of model-slot waits: a loop's wait for a slot does not count against
// its time budget, so it must not count against the job's deadline either.
import type { RunProgress } from '../runner/run-types.js';

export class ModelWaits {
  readonly #waitedMs = new Map<number, number>();
  readonly #since = new Map<number, number>();

  /** Feed every progress event; only `model-wait` ones count. */
  note(event: RunProgress): void {
    if (event.kind !== 'model-wait') return;
    const attempt = event.attempt ?? 1;
    if (event.waiting) this.#since.set(attempt, performance.now());
    else this.#since.delete(attempt);
    this.#waitedMs.set(attempt, Math.max(this.#waitedMs.get(attempt) ?? 0, event.waitedMs));
  }

  /** True while some loop waits. */
  get waiting(): boolean {
    return this.#since.size > 0;
  }

  /** How far the job's deadline moves: the most any one attempt has waited (attempts run at once). */
  extraMs(): number {
    const now = performance.now();
    let most = 0;
    for (const [attempt, waited] of this.#waitedMs) {
      const since = this.#since.get(attempt);
      most = Math.max(most, waited + (since === undefined ? 0 : now - since));
    }
    return most;
  }
}
