// The distributed backend: run records in Redis (atomic Lua scripts keep the same guarantees as
// the SQLite transactions), workers' liveness watched by BullMQ.
//
// BullMQ jobs are claim tickets, not runs: one is added whenever a run becomes claimable, a
// worker takes any ticket with a lock it renews while its run lives, and the CLAIM script then
// picks the run: the first claimable one in the fair order (round robin across groups, as the
// SQLite backend orders them, see queue.ts `enqueue`), which BullMQ's own first-in-first-out
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
import { randomUUID } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Queue as BullQueue, Worker as BullWorker, type Job as BullJob } from 'bullmq';
import { Redis } from 'ioredis';
import type {
  EnqueueInput,
  FinishState,
  PendingDelivery,
  Queue,
  RunRecord,
  RunState,
} from './types.js';
import { DEFAULT_REPLAY_WINDOW_MS, type AdmitResult, type EnqueueResult } from './sqlite-store.js';
import {
  ADMIT,
  CLAIM,
  CLAIMABLE,
  COMPLETE_DELIVERY,
  DELETE_RUN,
  ENQUEUE,
  FINISH,
  MIGRATE_FAIR,
  POSITION,
  RECORD_DELIVERY,
  RELEASE,
  RENEW,
  REQUEST_CANCEL,
  REQUEUE_LOST,
  UNLOCK,
} from './redis-scripts.js';
import { toRecord } from './redis-run-record.js';
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

const BULL_QUEUE = 'runs';
const DAY_MS = 24 * 3600 * 1000;
/**
 * BullMQ counts stalls per job, and a ticket serves many runs: it must never fail one on its
 * own count. Claims per run (`attempts`) decide instead.
 */
const TICKET_STALLS = 1_000_000;
/**
 * An exclusive section is a few status comment writes, paced by the shared GitHub throttle
 * (seconds each, minutes behind a burst of other runs' writes): one held this long is hung.
 */
const EXCLUSIVE_MAX_HOLD_MS = 10 * 60_000;

export class RedisQueue<J = unknown> implements Queue<J> {
  readonly kind = 'bullmq' as const;
  readonly concurrency: number;
  readonly maxAttempts = 2;
  readonly prefix: string;
  readonly lockMs: number;
  readonly exclusiveLockMs: number;
  readonly #p: string;
  readonly #redis: Redis;
  readonly #bull: BullQueue;
  readonly #worker: BullWorker | undefined;
  readonly #deliveryRetentionMs: number;
  readonly #replayWindowMs: number;
  /** Runs this process holds: BullMQ job, lock token, lock renewal timer. */
  readonly #held = new Map<string, { job: BullJob; token: string; timer: NodeJS.Timeout }>();
  #claiming = 0;
  /** Runs failed here for being lost too often, not yet returned by recoverInterrupted. */
  #lostFailed: RunRecord<J>[] = [];

  private constructor(options: RedisQueueOptions, redis: Redis) {
    this.concurrency = options.concurrency;
    this.prefix = options.prefix ?? 'frognano';
    this.lockMs = options.lockMs ?? 30_000;
    this.exclusiveLockMs = options.exclusiveLockMs ?? 30_000;
    this.#replayWindowMs = options.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS;
    this.#deliveryRetentionMs = Math.max(
      options.deliveryRetentionMs ?? 14 * DAY_MS,
      this.#replayWindowMs,
    );
    this.#p = `${this.prefix}:fn:`;
    this.#redis = redis;
    const connection = { url: options.url, maxRetriesPerRequest: null };
    this.#bull = new BullQueue(BULL_QUEUE, { connection, prefix: this.prefix });
    this.#worker = options.worker
      ? new BullWorker(BULL_QUEUE, null, {
          connection,
          prefix: this.prefix,
          autorun: false,
          lockDuration: this.lockMs,
          stalledInterval: this.lockMs,
          maxStalledCount: TICKET_STALLS,
        })
      : undefined;
    // BullMQ reports connection trouble as events; without a listener Node would crash on them.
    this.#bull.on('error', () => undefined);
    this.#worker?.on('error', () => undefined);
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
    await queue.#eval(MIGRATE_FAIR, []);
    await queue.#bull.waitUntilReady();
    if (queue.#worker) {
      await queue.#worker.waitUntilReady();
      void queue.#worker.startStalledCheckTimer();
    }
    return queue;
  }

  async close(): Promise<void> {
    for (const { timer } of this.#held.values()) clearInterval(timer);
    this.#held.clear();
    // force: the runs this process holds are left to BullMQ's stalled check (requeued once).
    await this.#worker?.close(true);
    await this.#bull.close();
    this.#redis.disconnect();
  }

  async recordDelivery(
    deliveryId: string,
    event: string,
    payload: unknown,
    bodySha256?: string,
  ): Promise<boolean> {
    const fresh = await this.#eval(RECORD_DELIVERY, [
      deliveryId,
      event,
      JSON.stringify(payload),
      String(Date.now()),
      bodySha256 ?? '',
      String(this.#replayWindowMs),
    ]);
    return fresh === 1;
  }

  async admit(input: {
    deliveryId: string;
    event: string;
    payload: unknown;
    bodySha256?: string;
    run?: Omit<EnqueueInput<J>, 'deliveryId' | 'id'>;
  }): Promise<AdmitResult<J>> {
    const reply = (await this.#eval(ADMIT, [
      input.deliveryId,
      input.event,
      JSON.stringify(input.payload),
      String(Date.now()),
      input.bodySha256 ?? '',
      String(this.#replayWindowMs),
      input.run?.key ?? '',
      randomUUID(),
      input.run?.held ? '1' : '0',
      JSON.stringify(input.run?.job ?? null),
      input.run?.group ?? '',
      capArg(input.run?.maxQueuedInGroup),
    ])) as string[];
    if (reply[0] === 'duplicate') return { status: 'duplicate' };
    if (reply[0] === 'replay') return { status: 'replay', firstDeliveryId: reply[1] as string };
    if (!input.run || reply.length < 2) return { status: 'recorded' };
    return {
      status: 'recorded',
      enqueued: await this.#enqueued(reply.slice(1), !!input.run.held),
    };
  }

  async release(id: string, job?: J): Promise<boolean> {
    const replacement = job === undefined ? '' : JSON.stringify(job);
    if ((await this.#eval(RELEASE, [id, replacement])) !== 1) return false;
    await this.#addTicket(id);
    return true;
  }

  async discard(id: string): Promise<boolean> {
    return (await this.#eval(DELETE_RUN, [id, '1', '0'])) === 1;
  }

  async runForDelivery(deliveryId: string): Promise<RunRecord<J> | undefined> {
    const id = await this.#redis.get(`${this.#p}bydelivery:${deliveryId}`);
    return id ? this.get(id) : undefined;
  }

  async pruneFinished(before: number): Promise<string[]> {
    const pruned: string[] = [];
    for (const id of await this.#redis.zrange(`${this.#p}runs`, '0', '-1')) {
      if ((await this.#eval(DELETE_RUN, [id, '0', String(before)])) === 1) pruned.push(id);
    }
    return pruned;
  }

  async pruneDeliveries(): Promise<number> {
    // Handled deliveries carry their own expiry in Redis (retention or replay window).
    return 0;
  }

  async pendingDeliveries(): Promise<PendingDelivery[]> {
    const ids = await this.#redis.zrange(`${this.#p}pending`, '0', '-1');
    const out: PendingDelivery[] = [];
    for (const id of ids) {
      const h = await this.#redis.hgetall(`${this.#p}dlv:${id}`);
      if (h.state !== 'pending' || h.payload === undefined) continue;
      out.push({
        deliveryId: id,
        event: h.event ?? '',
        payload: JSON.parse(h.payload) as unknown,
        receivedAt: Number(h.receivedAt),
      });
    }
    return out;
  }

  async completeDelivery(deliveryId: string): Promise<void> {
    await this.#eval(COMPLETE_DELIVERY, [deliveryId, String(this.#deliveryRetentionMs)]);
  }

  async enqueue(input: EnqueueInput<J>): Promise<EnqueueResult<J>> {
    const reply = (await this.#eval(ENQUEUE, [
      input.key,
      input.deliveryId ?? '',
      input.id ?? randomUUID(),
      String(Date.now()),
      input.held ? '1' : '0',
      JSON.stringify(input.job),
      input.group ?? '',
      capArg(input.maxQueuedInGroup),
    ])) as string[];
    return this.#enqueued(reply, !!input.held);
  }

  async #enqueued(reply: string[], held: boolean): Promise<EnqueueResult<J>> {
    if (reply[0] === 'duplicate') return { status: 'duplicate' };
    if (reply[0] === 'full') return { status: 'full', queued: Number(reply[1]) };
    const run = await this.get(reply[1] as string);
    if (!run) throw new Error(`run ${reply[1]} vanished from Redis while being enqueued`);
    if (reply[0] === 'active') return { status: 'active', run };
    if (!held) await this.#addTicket(run.id);
    return { status: 'queued', run, position: Number(reply[2]) };
  }

  async claim(): Promise<RunRecord<J> | undefined> {
    const worker = this.#worker;
    if (!worker)
      throw new Error('this process opened the queue without a worker: it cannot claim runs');
    // Counted before the await, so concurrent claims in this process never exceed the limit.
    while (this.#held.size + this.#claiming < this.concurrency) {
      this.#claiming++;
      try {
        const token = randomUUID();
        const job = (await worker.getNextJob(token, { block: false })) as BullJob | undefined;
        if (!job?.id) return undefined;
        if (job.deferredFailure) {
          // A job stalled past BullMQ's own count (from before tickets): a ticket all the same.
          await job
            .moveToFailed(new Error(job.deferredFailure), token, false)
            .catch(() => undefined);
          await this.#addTicket(randomUUID());
          continue;
        }
        const [was, id, failed] = (await this.#eval(CLAIM, [
          job.id,
          token,
          String(Date.now()),
          String(this.maxAttempts),
        ])) as [string, string, string];
        if (failed) {
          const run = await this.get(failed);
          if (run) this.#lostFailed.push(run);
        }
        if (was === 'none') {
          // A ticket left over (its run was cancelled or taken through another ticket).
          await job.moveToCompleted('nothing to run', token, false).catch(() => undefined);
          continue;
        }
        const timer = setInterval(() => {
          job.extendLock(token, this.lockMs).catch(() => undefined);
        }, this.lockMs / 3);
        timer.unref?.();
        this.#held.set(id, { job, token, timer });
        return await this.get(id);
      } finally {
        this.#claiming--;
      }
    }
    return undefined;
  }

  async finish(
    id: string,
    state: FinishState,
    details: { outcome?: string; summary?: string } = {},
  ): Promise<boolean> {
    const held = this.#held.get(id);
    const ended =
      (await this.#eval(FINISH, [
        id,
        state,
        String(Date.now()),
        details.outcome ?? '',
        details.summary ?? '',
        held?.token ?? '',
      ])) === 1;
    if (held) {
      clearInterval(held.timer);
      this.#held.delete(id);
      // Fails when BullMQ took the lock away (this worker was thought lost): nothing to undo.
      await held.job.moveToCompleted(state, held.token, false).catch(() => undefined);
    } else if (ended) {
      await this.#bull.remove(id).catch(() => undefined);
    }
    return ended;
  }

  async requestCancel(
    key: string,
  ): Promise<{ run: RunRecord<J>; wasRunning: boolean } | undefined> {
    const reply = (await this.#eval(REQUEST_CANCEL, [key, String(Date.now())])) as
      [string, string] | null;
    if (!reply) return undefined;
    const [id, running] = reply;
    if (running === '0') await this.#bull.remove(id).catch(() => undefined);
    const run = await this.get(id);
    if (!run) return undefined;
    return { run, wasRunning: running === '1' };
  }

  async stillHeld(id: string): Promise<boolean> {
    const held = this.#held.get(id);
    if (!held) return false;
    const [state, owner] = await this.#redis.hmget(`${this.#p}run:${id}`, 'state', 'owner');
    return state === 'running' && owner === held.token;
  }

  async isCancelRequested(id: string): Promise<boolean> {
    return (await this.#redis.hget(`${this.#p}run:${id}`, 'cancel')) === '1';
  }

  async position(id: string): Promise<number | undefined> {
    const position = (await this.#eval(POSITION, [id])) as number | null;
    return position ?? undefined;
  }

  async get(id: string): Promise<RunRecord<J> | undefined> {
    const [h, job] = await Promise.all([
      this.#redis.hgetall(`${this.#p}run:${id}`),
      this.#redis.get(`${this.#p}job:${id}`),
    ]);
    if (!h.state || job === null) return undefined;
    return toRecord<J>(id, h, job);
  }

  async activeFor(key: string): Promise<RunRecord<J> | undefined> {
    const id = await this.#redis.get(`${this.#p}active:${key}`);
    return id ? this.get(id) : undefined;
  }

  async list(state?: RunState): Promise<RunRecord<J>[]> {
    const ids =
      state === 'queued'
        ? await this.#redis.zrange(`${this.#p}queued`, '0', '-1')
        : await this.#redis.zrange(`${this.#p}runs`, '0', '-1');
    const runs = await Promise.all(ids.map((id) => this.get(id)));
    return runs.filter((r): r is RunRecord<J> => !!r && (!state || r.state === state));
  }

  async addRestCalls(id: string, calls: number): Promise<void> {
    if (calls === 0) return;
    const key = `${this.#p}run:${id}`;
    // Only for an existing run: HINCRBY on a missing hash would create a half record.
    if (await this.#redis.exists(key)) await this.#redis.hincrby(key, 'rest', calls);
  }

  async recoverInterrupted(): Promise<{ requeued: RunRecord<J>[]; failed: RunRecord<J>[] }> {
    const requeued: RunRecord<J>[] = [];
    const failed: RunRecord<J>[] = this.#lostFailed.splice(0);
    for (const id of await this.#redis.smembers(`${this.#p}running`)) {
      if (this.#held.has(id)) continue;
      const [owner, held] = await this.#redis.hmget(`${this.#p}run:${id}`, 'owner', 'ticket');
      // Runs claimed before tickets were held by their own job.
      const ticket = held || id;
      const ticketState = await this.#bull.getJobState(ticket);
      if (ticketState === 'active') continue;
      const run = await this.get(id);
      if (!run || run.state !== 'running') continue;
      // BullMQ put the ticket back in the wait list: it stays there for whoever claims next.
      const waiting =
        (ticketState === 'waiting' || ticketState === 'prioritized' || ticketState === 'delayed') &&
        !(await this.#bull.getJob(ticket))?.deferredFailure;
      if (run.cancelRequested) {
        if (await this.#finishLost(id, owner ?? null, 'cancelled', 'cancelled', 'interrupted')) {
          failed.push((await this.get(id)) as RunRecord<J>);
        }
      } else if (run.attempts < this.maxAttempts) {
        if ((await this.#eval(REQUEUE_LOST, [id, owner ?? ''])) === 1) {
          if (!waiting) await this.#addTicket(randomUUID());
          requeued.push((await this.get(id)) as RunRecord<J>);
        }
      } else {
        const gone = await this.#failLost(id, owner ?? null);
        if (gone) failed.push(gone);
      }
    }
    // A process that died between making a run claimable and adding its ticket: one ticket per
    // claimable run at least (a spare one is completed unused).
    const claimable = (await this.#eval(CLAIMABLE, [])) as number;
    for (let tickets = await this.#bull.getWaitingCount(); tickets < claimable; tickets++) {
      await this.#addTicket(randomUUID());
    }
    return { requeued, failed };
  }

  async getNote(key: string, name: string): Promise<string | undefined> {
    return (await this.#redis.hget(`${this.#p}note:${key}`, name)) ?? undefined;
  }

  async setNote(key: string, name: string, value: string | undefined): Promise<void> {
    if (value === undefined) await this.#redis.hdel(`${this.#p}note:${key}`, name);
    else await this.#redis.hset(`${this.#p}note:${key}`, name, value);
  }

  async putArtifact(runId: string, name: string, body: Buffer, ttlSeconds: number): Promise<void> {
    await this.#redis.set(
      `${this.#p}art:${runId}:${name}`,
      gzipSync(body),
      'EX',
      String(ttlSeconds),
    );
  }

  async getArtifact(runId: string, name: string): Promise<Buffer | undefined> {
    const gz = await this.#redis.getBuffer(`${this.#p}art:${runId}:${name}`);
    return gz ? gunzipSync(gz) : undefined;
  }

  /**
   * The lock lives `exclusiveLockMs` and is renewed while `fn` runs, so a long burst of paced
   * GitHub writes keeps it (a lapsed lock let a second status comment be created, issue 16).
   * The renewal timer dies with its process: a crashed holder's lock lapses within one TTL.
   * A waiter waits as long as the lock lives: going ahead without it is the duplicate it exists
   * to prevent. A holder stuck past EXCLUSIVE_MAX_HOLD_MS stops renewing, so no hang blocks an
   * issue's status writes for good.
   */
  async exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const lockKey = `${this.#p}lock:${key}`;
    const token = randomUUID();
    const ttlMs = this.exclusiveLockMs;
    while ((await this.#redis.set(lockKey, token, 'PX', String(ttlMs), 'NX')) !== 'OK') {
      await new Promise((r) => setTimeout(r, 20));
    }
    const stopRenewing = this.#renewLock(lockKey, token, ttlMs);
    try {
      return await fn();
    } finally {
      stopRenewing();
      await this.#eval(UNLOCK, [lockKey, token]).catch(() => undefined);
    }
  }

  /** Extends a held lock every third of its TTL until stopped, lost, or held too long. */
  #renewLock(lockKey: string, token: string, ttlMs: number): () => void {
    const until = Date.now() + EXCLUSIVE_MAX_HOLD_MS;
    const timer = setInterval(() => {
      if (Date.now() > until) return clearInterval(timer);
      this.#eval(RENEW, [lockKey, token, String(ttlMs)]).then(
        // 0: another holder has it (ours lapsed while this process stalled): leave it be.
        (renewed) => renewed === 0 && clearInterval(timer),
        // Redis unreachable for now: the next tick tries again, within the TTL.
        () => undefined,
      );
    }, ttlMs / 3);
    timer.unref?.();
    return () => clearInterval(timer);
  }

  /** Runs this process holds (their BullMQ locks renewed). */
  get heldIds(): string[] {
    return [...this.#held.keys()];
  }

  async #failLost(id: string, owner?: string | null): Promise<RunRecord<J> | undefined> {
    const key = `${this.#p}run:${id}`;
    const by = owner === undefined ? await this.#redis.hget(key, 'owner') : owner;
    const attempts = Number((await this.#redis.hget(key, 'attempts')) ?? 0);
    const summary = `interrupted ${attempts} times: the worker running it was lost`;
    if (!(await this.#finishLost(id, by, 'failed', 'interrupted', summary))) return undefined;
    return this.get(id);
  }

  async #finishLost(
    id: string,
    owner: string | null,
    state: FinishState,
    outcome: string,
    summary: string,
  ): Promise<boolean> {
    const reply = await this.#eval(FINISH, [
      id,
      state,
      String(Date.now()),
      outcome,
      summary,
      owner ?? '',
    ]);
    return reply === 1;
  }

  /** A claim ticket (its id: the run that made it claimable, or a fresh one). */
  async #addTicket(id: string): Promise<void> {
    await this.#bull.add(
      'claim',
      { madeFor: id },
      {
        jobId: id,
        // The run record is the history; BullMQ's copy can go soon after.
        removeOnComplete: { age: 3600 },
        removeOnFail: { age: 7 * 24 * 3600 },
      },
    );
  }

  #eval(script: string, args: string[]): Promise<unknown> {
    return this.#redis.eval(script, 0, this.#p, ...args);
  }
}

function capArg(max: number | undefined): string {
  return max === undefined ? '' : String(max);
}
