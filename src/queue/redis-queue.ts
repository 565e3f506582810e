// The distributed backend: run records in Redis (atomic Lua scripts keep the same guarantees as
// the SQLite transactions), workers' liveness watched by BullMQ.
//
// BullMQ jobs are claim tickets, not runs: one is added whenever a run becomes claimable, a
// worker takes any ticket with a lock it renews while its run lives, and the CLAIM script then
// picks the run: the first claimable one in the fair order (round robin across groups, as the
// SQLite backend orders them, see sqlite-runs.ts `enqueue`), which BullMQ's own first-in-first-out
// order could not give. The run records which ticket holds it. A worker that dies stops
// renewing; BullMQ's stalled-job check puts its ticket back in the wait list, and whoever takes
// that ticket next resumes the lost run (or fails it, once it has been claimed `maxAttempts`
// times); recoverInterrupted() also requeues or fails the runs of lost tickets and reports them,
// so their issues are told. A ticket left over (its run was cancelled) is completed unused.
//
// Keys, under `<prefix>:fn:`: seq, run:<id> (hash), job:<id> (the job JSON, never rewritten
// by Lua), runs / queued (zsets by seq: list order), fair (zset by turn, members
// `<seq, 16 digits>:<id>`: the order runs are taken in and their positions), gq:<group> (a
// group's queued runs by turn), round (the highest turn claimed), gclaimed (hash: each group's
// highest claimed turn), running (set), ticket:<ticket> (the run a ticket holds), active:<key>
// (the one active run of a key), bydelivery:<id>, dlv:<id> (a delivery: its raw trigger while
// pending, then only its id), pending (zset), note:<key>, art:<run>:<name> (gzip, with a TTL).
// BullMQ's own keys live under `<prefix>:runs:`.
//
// One class per role, each over the shared connection (redis-keys.ts): the run records
// (redis-runs.ts), a worker's claims (redis-claims.ts), the delivery log (redis-deliveries.ts),
// notes and run files (redis-notes.ts), the key lock (redis-key-lock.ts), the claim tickets
// (redis-claim-tickets.ts). RedisQueue opens them together and answers for all of them.
import { Redis } from 'ioredis';
import { ClaimTickets } from './redis-claim-tickets.js';
import { RedisClaims } from './redis-claims.js';
import { RedisDeliveries } from './redis-deliveries.js';
import { RedisKeyLock } from './redis-key-lock.js';
import { RedisKeys } from './redis-keys.js';
import { RedisArtifacts, RedisNotes } from './redis-notes.js';
import { RedisRuns } from './redis-runs.js';
import { MIGRATE_FAIR } from './redis-scripts.js';
import { DEFAULT_REPLAY_WINDOW_MS } from './sqlite-store.js';
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
import { redactUrl } from './redact-url.js';
import { withTimeout } from './with-timeout.js';

export { redactUrl } from './redact-url.js';

export interface RedisQueueOptions {
  url: string;
  /** Namespace of every key (tests use one per test). */
  prefix?: string;
  /** Runs this process holds at once. */
  concurrency: number;
  /** A worker silent this long is lost: its run is requeued once, then failed (default 30 s). */
  lockMs?: number;
  /** Handled delivery ids are remembered this long for deduplication (default 14 days). */
  deliveryRetentionMs?: number;
  /** A delivery whose raw body was seen within this window is a replay (default 7 days). */
  replayWindowMs?: number;
  /** Open a BullMQ worker (claims, stalled checks); serve-only processes leave it off. */
  worker?: boolean;
  /** An `exclusive` section's lock lapses this long after its holder last renewed it (30 s). */
  exclusiveLockMs?: number;
}

const DAY_MS = 24 * 3600 * 1000;

export class RedisQueue<J = unknown> implements Queue<J> {
  readonly kind = 'bullmq' as const;
  readonly prefix: string;
  readonly exclusiveLockMs: number;
  readonly runs: RedisRuns<J>;
  readonly claims: RedisClaims<J>;
  readonly deliveries: RedisDeliveries<J>;
  readonly notes: RedisNotes;
  readonly artifacts: RedisArtifacts;
  readonly #lock: RedisKeyLock;
  readonly #keys: RedisKeys;
  readonly #tickets: ClaimTickets;

  private constructor(options: RedisQueueOptions, redis: Redis) {
    this.prefix = options.prefix ?? 'frognano';
    this.exclusiveLockMs = options.exclusiveLockMs ?? 30_000;
    const replayWindowMs = options.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS;
    const retentionMs = Math.max(options.deliveryRetentionMs ?? 14 * DAY_MS, replayWindowMs);
    this.#keys = new RedisKeys(redis, `${this.prefix}:fn:`);
    const connection = { url: options.url, maxRetriesPerRequest: null };
    this.#tickets = new ClaimTickets(connection, this.prefix);
    this.runs = new RedisRuns<J>(this.#keys, this.#tickets);
    this.claims = new RedisClaims<J>(this.#keys, this.runs, this.#tickets, {
      connection,
      prefix: this.prefix,
      concurrency: options.concurrency,
      lockMs: options.lockMs ?? 30_000,
      worker: !!options.worker,
    });
    this.deliveries = new RedisDeliveries<J>(this.#keys, this.runs, replayWindowMs, retentionMs);
    this.notes = new RedisNotes(this.#keys);
    this.artifacts = new RedisArtifacts(this.#keys);
    this.#lock = new RedisKeyLock(this.#keys, this.exclusiveLockMs);
  }

  /** Connects (fails fast when Redis does not answer) and starts BullMQ's stalled-run check. */
  static async open<J = unknown>(options: RedisQueueOptions): Promise<RedisQueue<J>> {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1) {
      throw new Error(`queue concurrency must be a positive integer (got ${options.concurrency})`);
    }
    const redis = new Redis(options.url, { maxRetriesPerRequest: null, lazyConnect: true });
    redis.on('error', () => undefined);
    try {
      await withTimeout(redis.connect(), 5000);
      await redis.ping();
    } catch (error) {
      redis.disconnect();
      throw new Error(
        `cannot reach Redis at ${redactUrl(options.url)} (${error instanceof Error ? error.message : String(error)}): start it or fix FROGNANO_REDIS_URL`,
        { cause: error },
      );
    }
    const queue = new RedisQueue<J>(options, redis);
    await queue.#keys.eval(MIGRATE_FAIR, []);
    await queue.#tickets.ready();
    await queue.claims.start();
    return queue;
  }

  get concurrency(): number {
    return this.claims.concurrency;
  }

  get maxAttempts(): number {
    return this.claims.maxAttempts;
  }

  get lockMs(): number {
    return this.claims.lockMs;
  }

  async close(): Promise<void> {
    await this.claims.close();
    await this.#tickets.close();
    this.#keys.redis.disconnect();
  }

  // The delivery log (redis-deliveries.ts).
  recordDelivery(deliveryId: string, event: string, payload: unknown, bodySha256?: string) {
    return this.deliveries.recordDelivery(deliveryId, event, payload, bodySha256);
  }
  admit(input: Parameters<RedisDeliveries<J>['admit']>[0]): Promise<AdmitResult<J>> {
    return this.deliveries.admit(input);
  }
  pendingDeliveries(): Promise<PendingDelivery[]> {
    return this.deliveries.pendingDeliveries();
  }
  completeDelivery(deliveryId: string): Promise<void> {
    return this.deliveries.completeDelivery(deliveryId);
  }
  pruneDeliveries(): Promise<number> {
    return this.deliveries.pruneDeliveries();
  }

  // The run records (redis-runs.ts).
  enqueue(input: EnqueueInput<J>): Promise<EnqueueResult<J>> {
    return this.runs.enqueue(input);
  }
  release(id: string, job?: J): Promise<boolean> {
    return this.runs.release(id, job);
  }
  discard(id: string): Promise<boolean> {
    return this.runs.discard(id);
  }
  requestCancel(key: string): Promise<{ run: RunRecord<J>; wasRunning: boolean } | undefined> {
    return this.runs.requestCancel(key);
  }
  runForDelivery(deliveryId: string): Promise<RunRecord<J> | undefined> {
    return this.runs.runForDelivery(deliveryId);
  }
  position(id: string): Promise<number | undefined> {
    return this.runs.position(id);
  }
  get(id: string): Promise<RunRecord<J> | undefined> {
    return this.runs.get(id);
  }
  activeFor(key: string): Promise<RunRecord<J> | undefined> {
    return this.runs.activeFor(key);
  }
  list(state?: RunState): Promise<RunRecord<J>[]> {
    return this.runs.list(state);
  }
  addRestCalls(id: string, calls: number): Promise<void> {
    return this.runs.addRestCalls(id, calls);
  }
  pruneFinished(before: number): Promise<string[]> {
    return this.runs.pruneFinished(before);
  }

  // A worker's claims (redis-claims.ts).
  claim(): Promise<RunRecord<J> | undefined> {
    return this.claims.claim();
  }
  finish(
    id: string,
    state: FinishState,
    details?: { outcome?: string; summary?: string },
  ): Promise<boolean> {
    return this.claims.finish(id, state, details);
  }
  stillHeld(id: string): Promise<boolean> {
    return this.claims.stillHeld(id);
  }
  isCancelRequested(id: string): Promise<boolean> {
    return this.claims.isCancelRequested(id);
  }
  recoverInterrupted(): Promise<{ requeued: RunRecord<J>[]; failed: RunRecord<J>[] }> {
    return this.claims.recoverInterrupted();
  }

  // Notes, run files and the key lock (redis-notes.ts, redis-key-lock.ts).
  getNote(key: string, name: string): Promise<string | undefined> {
    return this.notes.getNote(key, name);
  }
  setNote(key: string, name: string, value: string | undefined): Promise<void> {
    return this.notes.setNote(key, name, value);
  }
  putArtifact(runId: string, name: string, body: Buffer, ttlSeconds: number): Promise<void> {
    return this.artifacts.putArtifact(runId, name, body, ttlSeconds);
  }
  getArtifact(runId: string, name: string): Promise<Buffer | undefined> {
    return this.artifacts.getArtifact(runId, name);
  }
  exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.#lock.exclusive(key, fn);
  }
}
