// The Redis backend's KeyLock: lock:<key> holds its holder's token, with a TTL renewed while the
// section runs.
import { randomUUID } from 'node:crypto';
import type { RedisKeys } from './redis-keys.js';
import { RENEW, UNLOCK } from './redis-scripts.js';
import type { KeyLock } from './types.js';

/**
 * An exclusive section is a few status comment writes, paced by the shared GitHub throttle
 * (seconds each, minutes behind a burst of other runs' writes): one held this long is hung.
 */
const EXCLUSIVE_MAX_HOLD_MS = 10 * 60_000;

export class RedisKeyLock implements KeyLock {
  constructor(
    readonly keys: RedisKeys,
    /** A section's lock lapses this long after its holder last renewed it. */
    readonly ttlMs: number,
  ) {}

  /**
   * The lock lives `ttlMs` and is renewed while `fn` runs, so a long burst of paced GitHub
   * writes keeps it (a lapsed lock let a second status comment be created, issue 16).
   * The renewal timer dies with its process: a crashed holder's lock lapses within one TTL.
   * A waiter waits as long as the lock lives: going ahead without it is the duplicate it exists
   * to prevent. A holder stuck past EXCLUSIVE_MAX_HOLD_MS stops renewing, so no hang blocks an
   * issue's status writes for good.
   */
  async exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const lockKey = `${this.keys.p}lock:${key}`;
    const token = randomUUID();
    const ttlMs = this.ttlMs;
    while ((await this.keys.redis.set(lockKey, token, 'PX', String(ttlMs), 'NX')) !== 'OK') {
      await new Promise((r) => setTimeout(r, 20));
    }
    const stopRenewing = this.#renewLock(lockKey, token, ttlMs);
    try {
      return await fn();
    } finally {
      stopRenewing();
      await this.keys.eval(UNLOCK, [lockKey, token]).catch(() => undefined);
    }
  }

  /** Extends a held lock every third of its TTL until stopped, lost, or held too long. */
  #renewLock(lockKey: string, token: string, ttlMs: number): () => void {
    const until = Date.now() + EXCLUSIVE_MAX_HOLD_MS;
    const timer = setInterval(() => {
      if (Date.now() > until) return clearInterval(timer);
      this.keys.eval(RENEW, [lockKey, token, String(ttlMs)]).then(
        // 0: another holder has it (ours lapsed while this process stalled): leave it be.
        (renewed) => renewed === 0 && clearInterval(timer),
        // Redis unreachable for now: the next tick tries again, within the TTL.
        () => undefined,
      );
    }, ttlMs / 3);
    timer.unref?.();
    return () => clearInterval(timer);
  }
}
