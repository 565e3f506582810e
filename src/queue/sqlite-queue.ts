// The embedded backend: today's SQLite SqliteStore behind the async door. One data directory,
// shared by the processes of one host; nothing to copy, so artifacts stay on disk.
import { randomUUID } from 'node:crypto';
import { SqliteStore, type QueueOptions } from './sqlite-store.js';
import type {
  AdmitResult,
  EnqueueInput,
  EnqueueResult,
  FinishState,
  PendingDelivery,
  Queue,
  RunRecord,
  RunState,
} from './types.js';

/**
 * An exclusive section is a few status comment writes, paced by the shared GitHub throttle
 * (seconds each, minutes behind a burst of other runs' writes): one held this long is hung.
 */
const EXCLUSIVE_MAX_HOLD_MS = 10 * 60_000;

export class SqliteQueue<J = unknown> implements Queue<J> {
  readonly kind = 'sqlite' as const;

  constructor(
    readonly runs: SqliteStore<J>,
    readonly exclusiveLockMs = 30_000,
  ) {}

  static open<J = unknown>(options: QueueOptions): SqliteQueue<J> {
    return new SqliteQueue(SqliteStore.open<J>(options), options.exclusiveLockMs);
  }

  get concurrency(): number {
    return this.runs.concurrency;
  }

  get maxAttempts(): number {
    return this.runs.maxAttempts;
  }

  async recordDelivery(
    deliveryId: string,
    event: string,
    payload: unknown,
    bodySha256?: string,
  ): Promise<boolean> {
    return this.runs.recordDelivery(deliveryId, event, payload, bodySha256);
  }

  async admit(input: Parameters<SqliteStore<J>['admit']>[0]): Promise<AdmitResult<J>> {
    return this.runs.admit(input);
  }

  async release(id: string, job?: J): Promise<boolean> {
    return this.runs.release(id, job);
  }

  async discard(id: string): Promise<boolean> {
    return this.runs.discard(id);
  }

  async runForDelivery(deliveryId: string): Promise<RunRecord<J> | undefined> {
    return this.runs.runForDelivery(deliveryId);
  }

  async pruneFinished(before: number): Promise<string[]> {
    return this.runs.pruneFinished(before);
  }

  async pruneDeliveries(before: number): Promise<number> {
    return this.runs.pruneDeliveries(before);
  }

  async pendingDeliveries(): Promise<PendingDelivery[]> {
    return this.runs.pendingDeliveries();
  }

  async completeDelivery(deliveryId: string): Promise<void> {
    this.runs.completeDelivery(deliveryId);
  }

  async enqueue(input: EnqueueInput<J>): Promise<EnqueueResult<J>> {
    return this.runs.enqueue(input);
  }

  async claim(): Promise<RunRecord<J> | undefined> {
    return this.runs.claim();
  }

  async finish(
    id: string,
    state: FinishState,
    details?: { outcome?: string; summary?: string },
  ): Promise<boolean> {
    const before = this.runs.get(id);
    if (!before || (before.state !== 'queued' && before.state !== 'running')) return false;
    this.runs.finish(id, state, details);
    return true;
  }

  async requestCancel(
    key: string,
  ): Promise<{ run: RunRecord<J>; wasRunning: boolean } | undefined> {
    return this.runs.requestCancel(key);
  }

  async stillHeld(id: string): Promise<boolean> {
    // One worker process per data directory: a running run is this process's.
    return this.runs.get(id)?.state === 'running';
  }

  async isCancelRequested(id: string): Promise<boolean> {
    return this.runs.isCancelRequested(id);
  }

  async position(id: string): Promise<number | undefined> {
    return this.runs.position(id);
  }

  async get(id: string): Promise<RunRecord<J> | undefined> {
    return this.runs.get(id);
  }

  async activeFor(key: string): Promise<RunRecord<J> | undefined> {
    return this.runs.activeFor(key);
  }

  async list(state?: RunState): Promise<RunRecord<J>[]> {
    return this.runs.list(state);
  }

  async addRestCalls(id: string, calls: number): Promise<void> {
    this.runs.addRestCalls(id, calls);
  }

  async recoverInterrupted(): Promise<{ requeued: RunRecord<J>[]; failed: RunRecord<J>[] }> {
    return this.runs.recoverInterrupted();
  }

  async getNote(key: string, name: string): Promise<string | undefined> {
    return this.runs.getNote(key, name);
  }

  async setNote(key: string, name: string, value: string | undefined): Promise<void> {
    this.runs.setNote(key, name, value);
  }

  async putArtifact(): Promise<void> {
    // The data directory is the store: run files are already on this host's disk.
  }

  async getArtifact(): Promise<Buffer | undefined> {
    return undefined;
  }

  /**
   * `serve` and `worker` may share one data directory from two processes: the lock lives in the
   * database file, with a lease of `exclusiveLockMs` renewed while `fn` runs, so a long burst of
   * paced GitHub writes keeps it (a lapsed lease let a second status comment be created). The
   * renewal timer dies with its process: a crashed holder's lease lapses within one TTL. A
   * waiter waits as long as the lock lives: going ahead without it is the duplicate it exists
   * to prevent. A holder stuck past EXCLUSIVE_MAX_HOLD_MS stops renewing, so no hang blocks an
   * issue's status writes for good.
   */
  async exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const token = randomUUID();
    const leaseMs = this.exclusiveLockMs;
    while (!this.runs.tryLock(key, token, leaseMs)) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const stopRenewing = this.#renewLock(key, token, leaseMs);
    try {
      return await fn();
    } finally {
      stopRenewing();
      this.runs.unlock(key, token);
    }
  }

  /** Extends a held lease every third of its TTL until stopped, lost, or held too long. */
  #renewLock(key: string, token: string, leaseMs: number): () => void {
    const until = Date.now() + EXCLUSIVE_MAX_HOLD_MS;
    const timer = setInterval(() => {
      if (Date.now() > until) return clearInterval(timer);
      try {
        // false: another holder has it (ours lapsed while this process stalled): leave it be.
        if (!this.runs.renewLock(key, token, leaseMs)) clearInterval(timer);
      } catch {
        // The database busy past its timeout: the next tick tries again, within the lease.
      }
    }, leaseMs / 3);
    timer.unref?.();
    return () => clearInterval(timer);
  }

  async close(): Promise<void> {
    this.runs.close();
  }
}
