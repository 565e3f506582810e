// Where the fleet keeps what several processes must agree on: the leases (one per agent loop
// talking to an endpoint, bounded per endpoint) and which endpoints are marked down. In-process
// without Redis (memory-store.ts); in Redis across all workers (redis-store.ts).

export interface DownMark {
  /** Epoch ms when the mark lapses. */
  until: number;
  reason: string;
}

export interface FleetStore {
  /**
   * Takes a lease on the candidate with the fewest leases that has fewer than `cap` (earlier
   * candidates win ties), atomically; undefined when every candidate is full.
   */
  tryAcquire(
    candidates: readonly string[],
    cap: number,
    leaseId: string,
  ): Promise<string | undefined>;
  /** Keeps a lease alive (a lease not renewed lapses: a dead worker cannot hold it for ever). */
  renew(endpoint: string, leaseId: string): Promise<void>;
  release(endpoint: string, leaseId: string): Promise<void>;
  /** Leases held now, per endpoint (all processes sharing the store). */
  loads(endpoints: readonly string[]): Promise<Map<string, number>>;
  markDown(endpoint: string, forMs: number, reason: string): Promise<void>;
  /** The marks in force now. */
  downMarks(endpoints: readonly string[]): Promise<Map<string, DownMark>>;
  /**
   * Resolves when a lease may have been released (or after `maxMs`): a waiting loop tries again
   * then. Rejects when `signal` aborts.
   */
  waitForRelease(maxMs: number, signal?: AbortSignal): Promise<void>;
  /** How often a holder must renew its leases. */
  readonly renewEveryMs: number;
  close(): Promise<void>;
}

/** Resolves after `ms`, or rejects at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}
