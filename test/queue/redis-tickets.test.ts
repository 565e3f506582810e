// BullMQ on Redis hands out claim tickets, and the CLAIM script picks the run (fair order).
// What the contract suite cannot see: a lost worker's ticket taken by the next claim resumes
// its run, leftover tickets are completed unused, a missing ticket is made again, and runs
// queued before fair share keep their place. Real Redis at 127.0.0.1:6379, a prefix per test.
import { randomUUID } from 'node:crypto';
import { Queue as BullQueue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RedisQueue } from '../../src/queue/redis-queue.js';

const REDIS_URL = process.env.FROGNANO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const LOCK_MS = 600;

interface Job {
  n: number;
}

let prefix: string;
const opened: { close(): Promise<void> }[] = [];

beforeEach(() => {
  prefix = `fntest:${randomUUID()}`;
});

afterEach(async () => {
  for (const q of opened.splice(0)) await q.close().catch(() => undefined);
  const redis = new Redis(REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
});

async function open(concurrency = 1): Promise<RedisQueue<Job>> {
  const q = await RedisQueue.open<Job>({
    url: REDIS_URL,
    prefix,
    concurrency,
    worker: true,
    lockMs: LOCK_MS,
  });
  opened.push(q);
  return q;
}

function bull(): BullQueue {
  const b = new BullQueue('runs', { connection: { url: REDIS_URL }, prefix });
  opened.push(b);
  return b;
}

/** Claims until a run comes (BullMQ gives a lost ticket back on its stalled check). */
async function claimSoon(q: RedisQueue<Job>) {
  const deadline = Date.now() + 20 * LOCK_MS;
  while (Date.now() < deadline) {
    const run = await q.claim();
    if (run) return run;
    await new Promise((r) => setTimeout(r, LOCK_MS / 4));
  }
  throw new Error('no run was handed out');
}

describe('RedisQueue claim tickets', () => {
  it('resumes a lost run through its ticket, then fails it when lost again, and goes on', async () => {
    const first = await open();
    await first.enqueue({ key: 'a/r#1', group: 'a/r', job: { n: 1 } });
    const lost = await first.claim();
    expect(lost).toMatchObject({ job: { n: 1 }, attempts: 1 });
    // The worker dies: its lock lapses, and the next claim anywhere gets its ticket back.
    await first.close();
    const second = await open();
    const resumed = await claimSoon(second);
    expect(resumed).toMatchObject({ id: lost!.id, state: 'running', attempts: 2 });
    expect(await second.stillHeld(lost!.id)).toBe(true);
    expect(await second.recoverInterrupted()).toEqual({ requeued: [], failed: [] });
    await second.enqueue({ key: 'b/r#1', group: 'b/r', job: { n: 2 } });

    await second.close();
    const third = await open(2);
    // b's run goes meanwhile; a's, claimed twice already, is failed once its ticket is back
    // (by the claim that takes the ticket, or by the sweep), and told through the sweep.
    expect(await claimSoon(third)).toMatchObject({ job: { n: 2 }, attempts: 1 });
    const deadline = Date.now() + 20 * LOCK_MS;
    let failed: unknown[] = [];
    while (failed.length === 0 && Date.now() < deadline) {
      expect(await third.claim()).toBeUndefined();
      failed = (await third.recoverInterrupted()).failed;
      await new Promise((r) => setTimeout(r, LOCK_MS / 4));
    }
    expect(failed).toMatchObject([{ id: lost!.id, state: 'failed', outcome: 'interrupted' }]);
    expect(await third.activeFor('a/r#1')).toBeUndefined();
  });

  it('completes leftover tickets unused, and makes a missing one again', async () => {
    const q = await open(3);
    const runs = [];
    for (let i = 1; i <= 3; i++) {
      const r = await q.enqueue({ key: `a/r#${i}`, job: { n: i } });
      if (r.status === 'queued') runs.push(r.run);
    }
    const tickets = bull();
    expect(await tickets.getWaitingCount()).toBe(3);
    // A cancelled run's ticket goes with it; one lost (removed here by hand) leaves a run
    // without a ticket; whichever ticket a claim takes, the run is the first in order.
    await q.requestCancel('a/r#3');
    await tickets.remove(runs[0]!.id);
    expect(await tickets.getWaitingCount()).toBe(1);
    expect((await q.claim())?.job.n).toBe(1);
    expect(await q.claim()).toBeUndefined();
    // Run 2 is claimable and has no ticket: the sweep makes one.
    await q.recoverInterrupted();
    expect((await q.claim())?.job.n).toBe(2);
    // A spare ticket (a process that died after adding one twice) is completed unused.
    await tickets.add('claim', {}, { jobId: 'spare' });
    expect(await q.claim()).toBeUndefined();
    expect(await tickets.getWaitingCount()).toBe(0);
    expect(await tickets.getJobState('spare')).toBe('completed');
  });

  it('keeps runs queued before fair share first, in their order, a lost one too', async () => {
    // What an earlier version left in Redis: run hashes without a group or turn, one job each;
    // the third run was running on a worker that died (BullMQ put its job back in the wait list).
    const redis = new Redis(REDIS_URL);
    const p = `${prefix}:fn:`;
    const old = [randomUUID(), randomUUID(), randomUUID()];
    try {
      for (const [i, id] of old.entries()) {
        const running = i === 2;
        await redis.hset(`${p}run:${id}`, {
          key: `o/r#${i + 1}`,
          deliveryId: '',
          state: running ? 'running' : 'queued',
          attempts: running ? 1 : 0,
          owner: running ? 'a-dead-worker' : '',
          cancel: 0,
          rest: 0,
          createdAt: Date.now(),
          held: 0,
          seq: i + 1,
        });
        await redis.set(`${p}job:${id}`, JSON.stringify({ n: i + 1 }));
        await redis.zadd(`${p}runs`, i + 1, id);
        if (running) await redis.sadd(`${p}running`, id);
        else await redis.zadd(`${p}queued`, i + 1, id);
        await redis.set(`${p}active:o/r#${i + 1}`, id);
        await redis.set(`${p}seq`, i + 1);
      }
    } finally {
      redis.disconnect();
    }
    const legacy = bull();
    for (const id of old) await legacy.add('run', { runId: id }, { jobId: id });
    const q = await open(4);
    expect((await q.recoverInterrupted()).requeued.map((r) => r.id)).toEqual([old[2]]);
    const fresh = await q.enqueue({ key: 'o/r#1', group: 'o/r', job: { n: 5 } });
    expect(fresh.status).toBe('active');
    const other = await q.enqueue({ key: 'x/y#1', group: 'x/y', job: { n: 4 } });
    expect(other).toMatchObject({ status: 'queued', position: 4 });
    expect(await Promise.all(old.map((id) => q.position(id)))).toEqual([1, 2, 3]);
    const order = [];
    for (let run = await q.claim(); run; run = await q.claim()) order.push(run.job.n);
    expect(order).toEqual([1, 2, 3, 4]);
  });
});
