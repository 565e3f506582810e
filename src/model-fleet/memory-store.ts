// The fleet's shared state within one process (no FROGNANO_REDIS_URL): the cap then bounds this
// process's loops; a released lease wakes the waiting loops at once, oldest first.
import { abortReason, type DownMark, type FleetStore } from './fleet-store.js';

export class MemoryFleetStore implements FleetStore {
  readonly renewEveryMs = 60_000;
  readonly #leases = new Map<string, Set<string>>();
  readonly #down = new Map<string, DownMark>();
  readonly #waiters = new Set<() => void>();

  async tryAcquire(candidates: readonly string[], cap: number, leaseId: string) {
    let best: string | undefined;
    let bestLoad = Number.POSITIVE_INFINITY;
    for (const endpoint of candidates) {
      const load = this.#leases.get(endpoint)?.size ?? 0;
      if (load < cap && load < bestLoad) {
        best = endpoint;
        bestLoad = load;
      }
    }
    if (best === undefined) return undefined;
    this.#set(best).add(leaseId);
    return best;
  }

  async renew(): Promise<void> {
    // Nothing lapses within one process: the lease ends with its loop.
  }

  async release(endpoint: string, leaseId: string): Promise<void> {
    this.#leases.get(endpoint)?.delete(leaseId);
    // Every waiter tries again, in the order they came: the oldest takes the slot.
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const wake of waiters) wake();
  }

  async loads(endpoints: readonly string[]) {
    return new Map(endpoints.map((e) => [e, this.#leases.get(e)?.size ?? 0]));
  }

  async markDown(endpoint: string, forMs: number, reason: string): Promise<void> {
    this.#down.set(endpoint, { until: Date.now() + forMs, reason });
    if (forMs <= 0) this.#down.delete(endpoint);
  }

  async downMarks(endpoints: readonly string[]) {
    const now = Date.now();
    const marks = new Map<string, DownMark>();
    for (const endpoint of endpoints) {
      const mark = this.#down.get(endpoint);
      if (mark && mark.until > now) marks.set(endpoint, mark);
    }
    return marks;
  }

  waitForRelease(maxMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#waiters.delete(done);
        resolve();
      };
      const onAbort = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        reject(abortReason(signal!));
      };
      const timer = setTimeout(done, maxMs);
      this.#waiters.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  async close(): Promise<void> {}

  #set(endpoint: string): Set<string> {
    let set = this.#leases.get(endpoint);
    if (!set) this.#leases.set(endpoint, (set = new Set()));
    return set;
  }
}
