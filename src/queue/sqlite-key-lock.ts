// The embedded backend's KeyLock: `serve` and `worker` may share one data directory from two
// processes, so the lock of a key lives in the database file (a note with a lease).
import { randomUUID } from 'node:crypto';
import type { SqliteNotes } from './sqlite-notes.js';
import type { KeyLock } from './types.js';

/**
 * An exclusive section is a few status comment writes, paced by the shared GitHub throttle
 * (seconds each, minutes behind a burst of other runs' writes): one held this long is hung.
 */
const EXCLUSIVE_MAX_HOLD_MS = 10 * 60_000;

export class SqliteKeyLock implements KeyLock {
  constructor(
    readonly notes: SqliteNotes,
    /** A section's lease runs out this long after its holder last renewed it. */
    readonly leaseMs = 30_000,
  ) {}

  /**
   * The lease of `leaseMs` is renewed while `fn` runs, so a long burst of paced GitHub writes
   * keeps it (a lapsed lease let a second status comment be created). The renewal timer dies
   * with its process: a crashed holder's lease lapses within one TTL. A waiter waits as long as
   * the lock lives: going ahead without it is the duplicate it exists to prevent. A holder
   * stuck past EXCLUSIVE_MAX_HOLD_MS stops renewing, so no hang blocks an issue's status writes
   * for good.
   */
  async exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const token = randomUUID();
    const leaseMs = this.leaseMs;
    while (!this.notes.tryLock(key, token, leaseMs)) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const stopRenewing = this.#renewLock(key, token, leaseMs);
    try {
      return await fn();
    } finally {
      stopRenewing();
      this.notes.unlock(key, token);
    }
  }

  /** Extends a held lease every third of its TTL until stopped, lost, or held too long. */
  #renewLock(key: string, token: string, leaseMs: number): () => void {
    const until = Date.now() + EXCLUSIVE_MAX_HOLD_MS;
    const timer = setInterval(() => {
      if (Date.now() > until) return clearInterval(timer);
      try {
        // false: another holder has it (ours lapsed while this process stalled): leave it be.
        if (!this.notes.renewLock(key, token, leaseMs)) clearInterval(timer);
      } catch {
        // The database busy past its timeout: the next tick tries again, within the lease.
      }
    }, leaseMs / 3);
    timer.unref?.();
    return () => clearInterval(timer);
  }
}
