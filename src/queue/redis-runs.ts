// The Redis backend's run records (hashes, with their sets kept by redis-scripts.ts) and what
// starts or stops a run short of a worker: enqueue, release, discard, cancel, prune.
import { randomUUID } from 'node:crypto';
import type { ClaimTickets } from './redis-claim-tickets.js';
import type { RedisKeys } from './redis-keys.js';
import { toRecord } from './redis-run-record.js';
import { DELETE_RUN, ENQUEUE, POSITION, RELEASE, REQUEST_CANCEL } from './redis-scripts.js';
import type { EnqueueInput, EnqueueResult, RunRecord, RunState, RunStore } from './types.js';

export class RedisRuns<J = unknown> implements RunStore<J> {
  constructor(
    readonly keys: RedisKeys,
    readonly tickets: ClaimTickets,
  ) {}

  async get(id: string): Promise<RunRecord<J> | undefined> {
    const { redis, p } = this.keys;
    const [h, job] = await Promise.all([
      redis.hgetall(`${p}run:${id}`),
      redis.get(`${p}job:${id}`),
    ]);
    if (!h.state || job === null) return undefined;
    return toRecord<J>(id, h, job);
  }

  async activeFor(key: string): Promise<RunRecord<J> | undefined> {
    const id = await this.keys.redis.get(`${this.keys.p}active:${key}`);
    return id ? this.get(id) : undefined;
  }

  async list(state?: RunState): Promise<RunRecord<J>[]> {
    const { redis, p } = this.keys;
    const ids =
      state === 'queued'
        ? await redis.zrange(`${p}queued`, '0', '-1')
        : await redis.zrange(`${p}runs`, '0', '-1');
    const runs = await Promise.all(ids.map((id) => this.get(id)));
    return runs.filter((r): r is RunRecord<J> => !!r && (!state || r.state === state));
  }

  async position(id: string): Promise<number | undefined> {
    const position = (await this.keys.eval(POSITION, [id])) as number | null;
    return position ?? undefined;
  }

  async runForDelivery(deliveryId: string): Promise<RunRecord<J> | undefined> {
    const id = await this.keys.redis.get(`${this.keys.p}bydelivery:${deliveryId}`);
    return id ? this.get(id) : undefined;
  }

  async enqueue(input: EnqueueInput<J>): Promise<EnqueueResult<J>> {
    const reply = (await this.keys.eval(ENQUEUE, [
      input.key,
      input.deliveryId ?? '',
      input.id ?? randomUUID(),
      String(Date.now()),
      input.held ? '1' : '0',
      JSON.stringify(input.job),
      input.group ?? '',
      capArg(input.maxQueuedInGroup),
    ])) as string[];
    return this.enqueued(reply, !!input.held);
  }

  /** What the ENQUEUE script's reply (or ADMIT's, after its status) made; a ticket when claimable. */
  async enqueued(reply: string[], held: boolean): Promise<EnqueueResult<J>> {
    if (reply[0] === 'duplicate') return { status: 'duplicate' };
    if (reply[0] === 'full') return { status: 'full', queued: Number(reply[1]) };
    const run = await this.get(reply[1] as string);
    if (!run) throw new Error(`run ${reply[1]} vanished from Redis while being enqueued`);
    if (reply[0] === 'active') return { status: 'active', run };
    if (!held) await this.tickets.add(run.id);
    return { status: 'queued', run, position: Number(reply[2]) };
  }

  async release(id: string, job?: J): Promise<boolean> {
    const replacement = job === undefined ? '' : JSON.stringify(job);
    if ((await this.keys.eval(RELEASE, [id, replacement])) !== 1) return false;
    await this.tickets.add(id);
    return true;
  }

  async discard(id: string): Promise<boolean> {
    return (await this.keys.eval(DELETE_RUN, [id, '1', '0'])) === 1;
  }

  async requestCancel(
    key: string,
  ): Promise<{ run: RunRecord<J>; wasRunning: boolean } | undefined> {
    const reply = (await this.keys.eval(REQUEST_CANCEL, [key, String(Date.now())])) as
      [string, string] | null;
    if (!reply) return undefined;
    const [id, running] = reply;
    if (running === '0') await this.tickets.remove(id);
    const run = await this.get(id);
    if (!run) return undefined;
    return { run, wasRunning: running === '1' };
  }

  async addRestCalls(id: string, calls: number): Promise<void> {
    if (calls === 0) return;
    const key = `${this.keys.p}run:${id}`;
    // Only for an existing run: HINCRBY on a missing hash would create a half record.
    if (await this.keys.redis.exists(key)) await this.keys.redis.hincrby(key, 'rest', calls);
  }

  async pruneFinished(before: number): Promise<string[]> {
    const pruned: string[] = [];
    for (const id of await this.keys.redis.zrange(`${this.keys.p}runs`, '0', '-1')) {
      if ((await this.keys.eval(DELETE_RUN, [id, '0', String(before)])) === 1) pruned.push(id);
    }
    return pruned;
  }
}

/** A group's cap as a script argument ('' for none). */
export function capArg(max: number | undefined): string {
  return max === undefined ? '' : String(max);
}
