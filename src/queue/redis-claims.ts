// A worker's side of the Redis backend: it takes any claim ticket with a BullMQ lock it renews
// while its run lives, and the CLAIM script then picks the run (the first claimable one in the
// fair order). A worker that dies stops renewing; BullMQ's stalled-job check puts its ticket
// back in the wait list, and whoever takes that ticket next resumes the lost run (or fails it,
// once it has been claimed `maxAttempts` times); recoverInterrupted() also requeues or fails the
// runs of lost tickets and reports them, so their issues are told.
import { randomUUID } from 'node:crypto';
import { Worker as BullWorker, type Job as BullJob } from 'bullmq';
import { BULL_QUEUE, type ClaimTickets } from './redis-claim-tickets.js';
import type { RedisKeys } from './redis-keys.js';
import type { RedisRuns } from './redis-runs.js';
import { CLAIM, CLAIMABLE, FINISH, REQUEUE_LOST } from './redis-scripts.js';
import type { FinishState, RunClaims, RunRecord } from './types.js';

/**
 * BullMQ counts stalls per job, and a ticket serves many runs: it must never fail one on its
 * own count. Claims per run (`attempts`) decide instead.
 */
const TICKET_STALLS = 1_000_000;

export class RedisClaims<J = unknown> implements RunClaims<J> {
  readonly kind = 'bullmq' as const;
  readonly maxAttempts = 2;
  readonly concurrency: number;
  /** A worker silent this long is lost: its run is requeued once, then failed. */
  readonly lockMs: number;
  /** Undefined in a process that only serves (it never claims). */
  readonly worker: BullWorker | undefined;
  /** Runs this process holds: BullMQ job, lock token, lock renewal timer. */
  readonly #held = new Map<string, { job: BullJob; token: string; timer: NodeJS.Timeout }>();
  #claiming = 0;
  /** Runs failed here for being lost too often, not yet returned by recoverInterrupted. */
  #lostFailed: RunRecord<J>[] = [];

  constructor(
    readonly keys: RedisKeys,
    readonly runs: RedisRuns<J>,
    readonly tickets: ClaimTickets,
    options: {
      connection: { url: string; maxRetriesPerRequest: null };
      prefix: string;
      concurrency: number;
      lockMs: number;
      worker: boolean;
    },
  ) {
    this.concurrency = options.concurrency;
    this.lockMs = options.lockMs;
    this.worker = options.worker
      ? new BullWorker(BULL_QUEUE, null, {
          connection: options.connection,
          prefix: options.prefix,
          autorun: false,
          lockDuration: this.lockMs,
          stalledInterval: this.lockMs,
          maxStalledCount: TICKET_STALLS,
        })
      : undefined;
    this.worker?.on('error', () => undefined);
  }

  /** Starts BullMQ's stalled-run check (a worker process only). */
  async start(): Promise<void> {
    if (!this.worker) return;
    await this.worker.waitUntilReady();
    void this.worker.startStalledCheckTimer();
  }

  async close(): Promise<void> {
    for (const { timer } of this.#held.values()) clearInterval(timer);
    this.#held.clear();
    // force: the runs this process holds are left to BullMQ's stalled check (requeued once).
    await this.worker?.close(true);
  }

  async claim(): Promise<RunRecord<J> | undefined> {
    const worker = this.worker;
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
          await this.tickets.add(randomUUID());
          continue;
        }
        const [was, id, failed] = (await this.keys.eval(CLAIM, [
          job.id,
          token,
          String(Date.now()),
          String(this.maxAttempts),
        ])) as [string, string, string];
        if (failed) {
          const run = await this.runs.get(failed);
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
        return await this.runs.get(id);
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
      (await this.keys.eval(FINISH, [
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
      await this.tickets.remove(id);
    }
    return ended;
  }

  async stillHeld(id: string): Promise<boolean> {
    const held = this.#held.get(id);
    if (!held) return false;
    const [state, owner] = await this.keys.redis.hmget(`${this.keys.p}run:${id}`, 'state', 'owner');
    return state === 'running' && owner === held.token;
  }

  async isCancelRequested(id: string): Promise<boolean> {
    return (await this.keys.redis.hget(`${this.keys.p}run:${id}`, 'cancel')) === '1';
  }

  addRestCalls(id: string, calls: number): Promise<void> {
    return this.runs.addRestCalls(id, calls);
  }

  async recoverInterrupted(): Promise<{ requeued: RunRecord<J>[]; failed: RunRecord<J>[] }> {
    const requeued: RunRecord<J>[] = [];
    const failed: RunRecord<J>[] = this.#lostFailed.splice(0);
    const { redis, p } = this.keys;
    for (const id of await redis.smembers(`${p}running`)) {
      if (this.#held.has(id)) continue;
      const [owner, held] = await redis.hmget(`${p}run:${id}`, 'owner', 'ticket');
      // Runs claimed before tickets were held by their own job.
      const ticket = held || id;
      const ticketState = await this.tickets.state(ticket);
      if (ticketState === 'active') continue;
      const run = await this.runs.get(id);
      if (!run || run.state !== 'running') continue;
      // BullMQ put the ticket back in the wait list: it stays there for whoever claims next.
      const waiting =
        (ticketState === 'waiting' || ticketState === 'prioritized' || ticketState === 'delayed') &&
        !(await this.tickets.get(ticket))?.deferredFailure;
      if (run.cancelRequested) {
        if (await this.#finishLost(id, owner ?? null, 'cancelled', 'cancelled', 'interrupted')) {
          failed.push((await this.runs.get(id)) as RunRecord<J>);
        }
      } else if (run.attempts < this.maxAttempts) {
        if ((await this.keys.eval(REQUEUE_LOST, [id, owner ?? ''])) === 1) {
          if (!waiting) await this.tickets.add(randomUUID());
          requeued.push((await this.runs.get(id)) as RunRecord<J>);
        }
      } else {
        const gone = await this.#failLost(id, owner ?? null);
        if (gone) failed.push(gone);
      }
    }
    // A process that died between making a run claimable and adding its ticket: one ticket per
    // claimable run at least (a spare one is completed unused).
    const claimable = (await this.keys.eval(CLAIMABLE, [])) as number;
    for (let tickets = await this.tickets.waitingCount(); tickets < claimable; tickets++) {
      await this.tickets.add(randomUUID());
    }
    return { requeued, failed };
  }

  async #failLost(id: string, owner?: string | null): Promise<RunRecord<J> | undefined> {
    const key = `${this.keys.p}run:${id}`;
    const by = owner === undefined ? await this.keys.redis.hget(key, 'owner') : owner;
    const attempts = Number((await this.keys.redis.hget(key, 'attempts')) ?? 0);
    const summary = `interrupted ${attempts} times: the worker running it was lost`;
    if (!(await this.#finishLost(id, by, 'failed', 'interrupted', summary))) return undefined;
    return this.runs.get(id);
  }

  async #finishLost(
    id: string,
    owner: string | null,
    state: FinishState,
    outcome: string,
    summary: string,
  ): Promise<boolean> {
    const reply = await this.keys.eval(FINISH, [
      id,
      state,
      String(Date.now()),
      outcome,
      summary,
      owner ?? '',
    ]);
    return reply === 1;
  }
}
