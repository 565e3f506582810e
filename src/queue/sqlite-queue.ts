// The embedded backend: the SQLite store (sqlite-store.ts) behind the async `Queue` door. One
// data directory, shared by the processes of one host; nothing to copy, so artifacts stay on
// disk. The key lock is sqlite-key-lock.ts.
import { SqliteKeyLock } from './sqlite-key-lock.js';
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

export class SqliteQueue<J = unknown> implements Queue<J> {
  readonly kind = 'sqlite' as const;
  readonly #lock: SqliteKeyLock;

  constructor(
    readonly store: SqliteStore<J>,
    exclusiveLockMs = 30_000,
  ) {
    this.#lock = new SqliteKeyLock(store.notes, exclusiveLockMs);
  }

  static open<J = unknown>(options: QueueOptions): SqliteQueue<J> {
    return new SqliteQueue(SqliteStore.open<J>(options), options.exclusiveLockMs);
  }

  get concurrency(): number {
    return this.store.concurrency;
  }

  get maxAttempts(): number {
    return this.store.maxAttempts;
  }

  async recordDelivery(
    deliveryId: string,
    event: string,
    payload: unknown,
    bodySha256?: string,
  ): Promise<boolean> {
    return this.store.recordDelivery(deliveryId, event, payload, bodySha256);
  }

  async admit(input: Parameters<SqliteStore<J>['admit']>[0]): Promise<AdmitResult<J>> {
    return this.store.admit(input);
  }

  async release(id: string, job?: J): Promise<boolean> {
    return this.store.release(id, job);
  }

  async discard(id: string): Promise<boolean> {
    return this.store.discard(id);
  }

  async runForDelivery(deliveryId: string): Promise<RunRecord<J> | undefined> {
    return this.store.runForDelivery(deliveryId);
  }

  async pruneFinished(before: number): Promise<string[]> {
    return this.store.pruneFinished(before);
  }

  async pruneDeliveries(before: number): Promise<number> {
    return this.store.pruneDeliveries(before);
  }

  async pendingDeliveries(): Promise<PendingDelivery[]> {
    return this.store.pendingDeliveries();
  }

  async completeDelivery(deliveryId: string): Promise<void> {
    this.store.completeDelivery(deliveryId);
  }

  async enqueue(input: EnqueueInput<J>): Promise<EnqueueResult<J>> {
    return this.store.enqueue(input);
  }

  async claim(): Promise<RunRecord<J> | undefined> {
    return this.store.claim();
  }

  async finish(
    id: string,
    state: FinishState,
    details?: { outcome?: string; summary?: string },
  ): Promise<boolean> {
    const before = this.store.get(id);
    if (!before || (before.state !== 'queued' && before.state !== 'running')) return false;
    this.store.finish(id, state, details);
    return true;
  }

  async requestCancel(
    key: string,
  ): Promise<{ run: RunRecord<J>; wasRunning: boolean } | undefined> {
    return this.store.requestCancel(key);
  }

  async stillHeld(id: string): Promise<boolean> {
    // One worker process per data directory: a running run is this process's.
    return this.store.get(id)?.state === 'running';
  }

  async isCancelRequested(id: string): Promise<boolean> {
    return this.store.isCancelRequested(id);
  }

  async position(id: string): Promise<number | undefined> {
    return this.store.position(id);
  }

  async get(id: string): Promise<RunRecord<J> | undefined> {
    return this.store.get(id);
  }

  async activeFor(key: string): Promise<RunRecord<J> | undefined> {
    return this.store.activeFor(key);
  }

  async list(state?: RunState): Promise<RunRecord<J>[]> {
    return this.store.list(state);
  }

  async addRestCalls(id: string, calls: number): Promise<void> {
    this.store.addRestCalls(id, calls);
  }

  async recoverInterrupted(): Promise<{ requeued: RunRecord<J>[]; failed: RunRecord<J>[] }> {
    return this.store.recoverInterrupted();
  }

  async getNote(key: string, name: string): Promise<string | undefined> {
    return this.store.getNote(key, name);
  }

  async setNote(key: string, name: string, value: string | undefined): Promise<void> {
    this.store.setNote(key, name, value);
  }

  async putArtifact(): Promise<void> {
    // The data directory is the store: run files are already on this host's disk.
  }

  async getArtifact(): Promise<Buffer | undefined> {
    return undefined;
  }

  /** One holder per key across the processes sharing the data directory (sqlite-key-lock.ts). */
  async exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.#lock.exclusive(key, fn);
  }

  async close(): Promise<void> {
    this.store.close();
  }
}
