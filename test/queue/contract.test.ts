// One contract, two backends: the embedded SQLite queue and BullMQ on a real Redis
// (127.0.0.1:6379, a key prefix of its own per test, only those keys removed afterwards).
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RedisQueue } from '../../src/queue/redis-queue.js';
import { SqliteQueue } from '../../src/queue/sqlite-queue.js';
import type { Queue } from '../../src/queue/types.js';

interface Job {
  n: number;
  tags: string[];
}

const REDIS_URL = process.env.FROGNANO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

interface Backend {
  name: string;
  /** A queue of one process ("machine"); every call in a test shares the same store. */
  open(options?: { concurrency?: number }): Promise<Queue<Job>>;
  /**
   * The process holding `q`'s runs dies without a word; resolves with a queue on another
   * process once the loss can be seen (sqlite: at its next start; bullmq: stalled check).
   */
  lose(q: Queue<Job>): Promise<Queue<Job>>;
}

let dir: string;
let prefix: string;
const opened: Queue<Job>[] = [];

const sqlite: Backend = {
  name: 'sqlite',
  async open(options = {}) {
    const q = SqliteQueue.open<Job>({ dataDir: dir, concurrency: options.concurrency ?? 1 });
    opened.push(q);
    return q;
  },
  async lose(q) {
    await q.close();
    return this.open();
  },
};

const LOCK_MS = 600;
const bullmq: Backend = {
  name: 'bullmq',
  async open(options = {}) {
    const q = await RedisQueue.open<Job>({
      url: REDIS_URL,
      prefix,
      concurrency: options.concurrency ?? 1,
      worker: true,
      lockMs: LOCK_MS,
    });
    opened.push(q);
    return q;
  },
  async lose(q) {
    // close() stops renewing locks and leaves held jobs active: a dead worker, as Redis sees it.
    await q.close();
    const other = await this.open();
    // BullMQ marks a job whose lock lapsed on one check and moves it on the next.
    const deadline = Date.now() + 20 * LOCK_MS;
    while (Date.now() < deadline) {
      const moved = await other.recoverInterrupted();
      if (moved.requeued.length + moved.failed.length > 0) {
        lost.set(other, moved);
        return other;
      }
      await new Promise((r) => setTimeout(r, LOCK_MS / 4));
    }
    throw new Error('BullMQ did not report the lost run');
  },
};

/** What the loss handling returned (bullmq reports it while waiting for it). */
const lost = new Map<Queue<Job>, Awaited<ReturnType<Queue<Job>['recoverInterrupted']>>>();

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'frognano-contract-'));
  prefix = `fntest:${randomUUID()}`;
});

afterEach(async () => {
  for (const q of opened.splice(0)) await q.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
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

const job = (n: number): Job => ({ n, tags: [] });

describe.each([sqlite, bullmq])('queue contract: $name', (backend) => {
  it('records each delivery once and keeps its raw trigger pending until handled', async () => {
    const q = await backend.open();
    expect(await q.recordDelivery('d-1', 'run', { a: [1], b: [] })).toBe(true);
    expect(await q.recordDelivery('d-1', 'run', { a: [2] })).toBe(false);
    expect(await q.recordDelivery('d-2', 'cancel', { c: 'x' })).toBe(true);
    // Another process sees what this one recorded (a crash before intake loses nothing).
    const other = await backend.open();
    expect(await other.pendingDeliveries()).toMatchObject([
      { deliveryId: 'd-1', event: 'run', payload: { a: [1], b: [] } },
      { deliveryId: 'd-2', event: 'cancel', payload: { c: 'x' } },
    ]);
    await other.completeDelivery('d-1');
    expect((await q.pendingDeliveries()).map((d) => d.deliveryId)).toEqual(['d-2']);
    expect(await q.recordDelivery('d-1', 'run', { a: 1 })).toBe(false);
  });

  it('allows one active run per key and never two runs for one delivery', async () => {
    const q = await backend.open();
    const first = await q.enqueue({ key: 'o/r#1', job: job(1), deliveryId: 'd-1' });
    expect(first).toMatchObject({ status: 'queued', position: 1, run: { job: job(1) } });
    const busy = await q.enqueue({ key: 'o/r#1', job: job(2), deliveryId: 'd-2' });
    expect(busy.status).toBe('active');
    expect(busy.status === 'active' && busy.run.id).toBe(first.status === 'queued' && first.run.id);
    expect(await q.enqueue({ key: 'o/r#2', job: job(3), deliveryId: 'd-1' })).toEqual({
      status: 'duplicate',
    });
    expect(await q.enqueue({ key: 'o/r#2', job: job(4), deliveryId: 'd-4' })).toMatchObject({
      status: 'queued',
      position: 2,
    });
    expect(await q.list()).toHaveLength(2);

    const claimed = await q.claim();
    expect(claimed).toMatchObject({ job: job(1), state: 'running', attempts: 1 });
    expect(await q.activeFor('o/r#1')).toMatchObject({ id: claimed!.id, state: 'running' });
    expect(await q.stillHeld(claimed!.id)).toBe(true);
    expect(await q.finish(claimed!.id, 'done', { outcome: 'pull_request' })).toBe(true);
    expect(await q.stillHeld(claimed!.id)).toBe(false);
    expect(await q.finish(claimed!.id, 'failed')).toBe(false);
    expect(await q.get(claimed!.id)).toMatchObject({ state: 'done', outcome: 'pull_request' });
    expect(await q.activeFor('o/r#1')).toBeUndefined();
    // Finished, the issue can run again.
    expect((await q.enqueue({ key: 'o/r#1', job: job(5), deliveryId: 'd-5' })).status).toBe(
      'queued',
    );
  });

  it('keeps one active run per key when many processes enqueue at once', async () => {
    const queues = await Promise.all([backend.open(), backend.open(), backend.open()]);
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        queues[i % 3]!.enqueue({ key: 'o/r#7', job: job(i), deliveryId: `d-${i % 6}` }),
      ),
    );
    expect(results.filter((r) => r.status === 'queued')).toHaveLength(1);
    expect(await queues[0]!.list()).toHaveLength(1);
  });

  it('hands out runs oldest first, within the concurrency limit, each to one process', async () => {
    const a = await backend.open({ concurrency: 2 });
    const b = await backend.open({ concurrency: 2 });
    for (let i = 1; i <= 5; i++) await a.enqueue({ key: `o/r#${i}`, job: job(i) });
    const claims = await Promise.all([a.claim(), b.claim(), a.claim(), b.claim()]);
    const got = claims.filter((c) => c !== undefined);
    // sqlite: one limit for the data directory; bullmq: a limit per process.
    expect(got.length).toBe(backend.name === 'sqlite' ? 2 : 4);
    expect(new Set(got.map((c) => c.id)).size).toBe(got.length);
    expect(got.map((c) => c.job.n).sort()).toEqual([1, 2, 3, 4].slice(0, got.length));
    expect(await a.claim()).toBeUndefined();
    // Positions are the same seen from any process.
    const queued = await b.list('queued');
    expect(await a.position(queued[0]!.id)).toBe(1);
    expect(await b.position(queued[0]!.id)).toBe(1);
    expect(await a.position(got[0]!.id)).toBeUndefined();
    await a.finish(got.find((c) => claims.indexOf(c) % 2 === 0)!.id, 'done');
    expect(await a.claim()).toMatchObject({ job: { n: got.length + 1 } });
  });

  it('counts positions across processes as runs leave the queue', async () => {
    const a = await backend.open();
    const b = await backend.open();
    const ids: string[] = [];
    for (let i = 1; i <= 3; i++) {
      const r = await (i % 2 ? a : b).enqueue({ key: `o/r#${i}`, job: job(i) });
      if (r.status === 'queued') ids.push(r.run.id);
    }
    expect(await Promise.all(ids.map((id) => b.position(id)))).toEqual([1, 2, 3]);
    await a.requestCancel('o/r#2');
    expect(await Promise.all(ids.map((id) => a.position(id)))).toEqual([1, undefined, 2]);
    await b.claim();
    expect(await Promise.all(ids.map((id) => a.position(id)))).toEqual([undefined, undefined, 1]);
  });

  it('takes runs round robin across groups: 11 from one repository, then 1 from another is second', async () => {
    const q = await backend.open({ concurrency: 12 });
    const a: string[] = [];
    for (let i = 1; i <= 11; i++) {
      const r = await q.enqueue({ key: `a/r#${i}`, group: 'a/r', job: job(i) });
      expect(r).toMatchObject({ status: 'queued', position: i });
      if (r.status === 'queued') a.push(r.run.id);
    }
    const b = await q.enqueue({ key: 'b/r#1', group: 'b/r', job: job(100) });
    expect(b).toMatchObject({ status: 'queued', position: 2 });
    if (b.status !== 'queued') throw new Error('not queued');
    // Every position is the place in that order, seen from any process.
    const other = await backend.open();
    expect(await other.position(b.run.id)).toBe(2);
    expect(await Promise.all(a.map((id) => other.position(id)))).toEqual([
      1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
    ]);
    const order: number[] = [];
    for (let run = await q.claim(); run; run = await q.claim()) order.push(run.job.n);
    expect(order).toEqual([1, 100, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it('gives each group a turn per round, in the order their oldest runs arrived, as runs come and go', async () => {
    const q = await backend.open({ concurrency: 20 });
    const put = async (key: string, n: number, held = false) => {
      const r = await q.enqueue({ key, group: key.split('#')[0]!, job: job(n), held });
      if (r.status !== 'queued') throw new Error(`${key} not queued`);
      return r.run.id;
    };
    const ids = {
      a1: await put('a/r#1', 1),
      a2: await put('a/r#2', 2),
      a3: await put('a/r#3', 3),
      b1: await put('b/r#1', 11),
      b2: await put('b/r#2', 12),
      c1: await put('c/r#1', 21, true),
    };
    const positions = async () =>
      Object.fromEntries(
        await Promise.all(Object.entries(ids).map(async ([k, id]) => [k, await q.position(id)])),
      );
    expect(await positions()).toEqual({ a1: 1, b1: 2, c1: 3, a2: 4, b2: 5, a3: 6 });
    // A held run keeps its place for positions but is not handed out before release.
    expect((await q.claim())?.job.n).toBe(1);
    expect((await q.claim())?.job.n).toBe(11);
    expect(await q.position(ids.c1)).toBe(1);
    expect((await q.claim())?.job.n).toBe(2);
    // A newcomer joins the current round; a repository just served waits for the others.
    const d1 = await put('d/r#1', 31);
    const a4 = await put('a/r#4', 4);
    expect(await q.position(d1)).toBe(3);
    expect(await q.position(a4)).toBe(5);
    expect(await q.release(ids.c1)).toBe(true);
    const rest: number[] = [];
    for (let run = await q.claim(); run; run = await q.claim()) rest.push(run.job.n);
    expect(rest).toEqual([21, 12, 31, 3, 4]);
  });

  it('does not serve a repository twice in a row when another one waits', async () => {
    const q = await backend.open();
    await q.enqueue({ key: 'a/r#1', group: 'a/r', job: job(1) });
    await q.enqueue({ key: 'a/r#2', group: 'a/r', job: job(2) });
    const first = await q.claim();
    await q.finish(first!.id, 'done');
    // b arrives after a's first run finished: b's first run goes before a's second...
    await q.enqueue({ key: 'b/r#1', group: 'b/r', job: job(11) });
    const second = await q.claim();
    expect(second?.job.n).toBe(11);
    await q.finish(second!.id, 'done');
    // ...and b's next one waits for a's.
    await q.enqueue({ key: 'b/r#2', group: 'b/r', job: job(12) });
    const third = await q.claim();
    expect(third?.job.n).toBe(2);
    await q.finish(third!.id, 'done');
    expect((await q.claim())?.job.n).toBe(12);
  });

  it('refuses a run past the per-group cap atomically, and takes one again once a run leaves', async () => {
    const queues = await Promise.all([backend.open(), backend.open(), backend.open()]);
    const results = await Promise.all(
      Array.from({ length: 9 }, (_, i) =>
        queues[i % 3]!.enqueue({
          key: `a/r#${i}`,
          group: 'a/r',
          job: job(i),
          maxQueuedInGroup: 3,
        }),
      ),
    );
    expect(results.filter((r) => r.status === 'queued')).toHaveLength(3);
    expect(results.filter((r) => r.status === 'full')).toEqual(
      Array.from({ length: 6 }, () => ({ status: 'full', queued: 3 })),
    );
    // Other groups are not affected; held runs count; admit refuses the same way.
    const q = queues[0]!;
    expect(
      (await q.enqueue({ key: 'b/r#1', group: 'b/r', job: job(20), maxQueuedInGroup: 3 })).status,
    ).toBe('queued');
    expect(
      await q.admit({
        deliveryId: 'd-full',
        event: 'run',
        payload: {},
        run: { key: 'a/r#20', group: 'a/r', job: job(21), held: true, maxQueuedInGroup: 3 },
      }),
    ).toEqual({ status: 'recorded', enqueued: { status: 'full', queued: 3 } });
    expect((await q.pendingDeliveries()).map((d) => d.deliveryId)).toEqual(['d-full']);
    // A running run is not waiting: a claimed run makes room.
    const running = await q.claim();
    expect(running?.group).toBe('a/r');
    const admitted = await q.admit({
      deliveryId: 'd-room',
      event: 'run',
      payload: {},
      run: { key: 'a/r#21', group: 'a/r', job: job(22), held: true, maxQueuedInGroup: 3 },
    });
    expect(admitted).toMatchObject({ status: 'recorded', enqueued: { status: 'queued' } });
    expect(
      (await q.enqueue({ key: 'a/r#22', group: 'a/r', job: job(23), maxQueuedInGroup: 3 })).status,
    ).toBe('full');
  });

  it('cancels a queued run at once and flags a running one for its worker', async () => {
    const q = await backend.open();
    const other = await backend.open();
    await q.enqueue({ key: 'o/r#1', job: job(1) });
    await q.enqueue({ key: 'o/r#2', job: job(2) });
    const running = await q.claim();
    expect(running?.key).toBe('o/r#1');

    const queuedCancel = await other.requestCancel('o/r#2');
    expect(queuedCancel).toMatchObject({ wasRunning: false, run: { state: 'cancelled' } });
    // A cancelled run is never handed out.
    expect(await other.claim()).toBeUndefined();

    expect(await q.isCancelRequested(running!.id)).toBe(false);
    const runningCancel = await other.requestCancel('o/r#1');
    expect(runningCancel).toMatchObject({ wasRunning: true, run: { id: running!.id } });
    expect(await q.isCancelRequested(running!.id)).toBe(true);
    await q.finish(running!.id, 'cancelled', { outcome: 'cancelled' });
    expect(await other.requestCancel('o/r#1')).toBeUndefined();
  });

  it('keeps notes and REST call counts per run', async () => {
    const q = await backend.open();
    const other = await backend.open();
    await q.setNote('o/r#1', 'status-comment-id', '42');
    expect(await other.getNote('o/r#1', 'status-comment-id')).toBe('42');
    await other.setNote('o/r#1', 'status-comment-id', undefined);
    expect(await q.getNote('o/r#1', 'status-comment-id')).toBeUndefined();
    const r = await q.enqueue({ key: 'o/r#1', job: job(1) });
    if (r.status !== 'queued') throw new Error('not queued');
    await q.addRestCalls(r.run.id, 3);
    await other.addRestCalls(r.run.id, 2);
    expect((await q.get(r.run.id))?.restCalls).toBe(5);
  });

  it('requeues a run whose process was lost once, and fails it the second time', async () => {
    let q = await backend.open();
    await q.enqueue({ key: 'o/r#1', job: job(1) });
    await q.enqueue({ key: 'o/r#2', job: job(2) });
    const first = await q.claim();
    expect(first).toMatchObject({ key: 'o/r#1', attempts: 1 });

    q = await backend.lose(q);
    const once = lost.get(q) ?? (await q.recoverInterrupted());
    expect(once.requeued.map((r) => r.id)).toEqual([first!.id]);
    expect(once.failed).toEqual([]);
    // Back in the queue where it was: still first.
    expect(await q.position(first!.id)).toBe(1);
    expect(await q.activeFor('o/r#1')).toMatchObject({ id: first!.id, state: 'queued' });

    const again = await q.claim();
    expect(again).toMatchObject({ id: first!.id, attempts: 2 });
    q = await backend.lose(q);
    const twice = lost.get(q) ?? (await q.recoverInterrupted());
    expect(twice.requeued).toEqual([]);
    expect(twice.failed).toMatchObject([
      { id: first!.id, state: 'failed', outcome: 'interrupted' },
    ]);
    // The queue is not stuck: the next run goes, the issue can run again.
    expect(await q.claim()).toMatchObject({ key: 'o/r#2' });
    expect((await q.enqueue({ key: 'o/r#1', job: job(3) })).status).toBe('queued');
  });

  it('runs one exclusive section per key at a time across processes, other keys meanwhile', async () => {
    const [a, b] = [await backend.open(), await backend.open()];
    const log: string[] = [];
    const section = (q: Queue<Job>, key: string, name: string) =>
      q.exclusive(key, async () => {
        log.push(`${name} in`);
        await new Promise((resolve) => setTimeout(resolve, 150));
        log.push(`${name} out`);
      });
    await Promise.all([
      section(a, 'o/r#1', 'a1'),
      section(b, 'o/r#1', 'b1'),
      section(b, 'o/r#2', 'b2'),
    ]);
    // The two sections of o/r#1 never overlap; o/r#2's runs beside one of them.
    const one = log.filter((l) => !l.startsWith('b2'));
    expect(one.map((l) => l.split(' ')[1])).toEqual(['in', 'out', 'in', 'out']);
    expect(one[0]!.split(' ')[0]).toBe(one[1]!.split(' ')[0]);
    expect(log.indexOf('b2 in')).toBeLessThan(log.indexOf(one[1]!));
    // A holder that throws gives the lock back.
    await expect(a.exclusive('o/r#3', () => Promise.reject(new Error('boom')))).rejects.toThrow(
      'boom',
    );
    const started = Date.now();
    await b.exclusive('o/r#3', async () => undefined);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('keeps run artifacts where serve can read them', async () => {
    const q = await backend.open();
    const body = Buffer.from(JSON.stringify({ steps: Array(200).fill('same text') }));
    await q.putArtifact('run-1', 'trajectory.json', body, 60);
    const read = await (await backend.open()).getArtifact('run-1', 'trajectory.json');
    // sqlite: the data directory is the store, nothing is copied.
    if (backend.name === 'sqlite') expect(read).toBeUndefined();
    else expect(read?.equals(body)).toBe(true);
  });
});
