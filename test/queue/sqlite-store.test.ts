import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/queue/sqlite-store.js';

interface Job {
  n: number;
}

let dir: string;
const open: SqliteStore<Job>[] = [];
const openQueue = (concurrency = 1) => {
  const q = SqliteStore.open<Job>({ dataDir: dir, concurrency });
  open.push(q);
  return q;
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'frognano-queue-'));
});
afterEach(() => {
  for (const q of open.splice(0)) q.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('SqliteStore (real SQLite)', () => {
  it('records each delivery once and keeps it pending until handled', () => {
    const q = openQueue();
    expect(q.recordDelivery('d-1', 'run', { a: 1 })).toBe(true);
    expect(q.recordDelivery('d-1', 'run', { a: 1 })).toBe(false);
    expect(q.pendingDeliveries()).toMatchObject([
      { deliveryId: 'd-1', event: 'run', payload: { a: 1 } },
    ]);
    q.completeDelivery('d-1');
    expect(q.pendingDeliveries()).toEqual([]);
    expect(q.recordDelivery('d-1', 'run', { a: 1 })).toBe(false);
  });

  it('allows one active run per key and never two runs for one delivery', () => {
    const q = openQueue();
    const first = q.enqueue({ key: 'o/r#1', job: { n: 1 }, deliveryId: 'd-1' });
    expect(first).toMatchObject({ status: 'queued', position: 1 });
    expect(q.enqueue({ key: 'o/r#1', job: { n: 2 }, deliveryId: 'd-2' })).toMatchObject({
      status: 'active',
    });
    expect(q.enqueue({ key: 'o/r#2', job: { n: 3 }, deliveryId: 'd-1' })).toEqual({
      status: 'duplicate',
    });
    const second = q.enqueue({ key: 'o/r#2', job: { n: 4 }, deliveryId: 'd-4' });
    expect(second).toMatchObject({ status: 'queued', position: 2 });
    expect(q.list()).toHaveLength(2);

    // Once the run finishes, the issue can run again.
    const claimed = q.claim();
    expect(claimed?.job).toEqual({ n: 1 });
    q.finish(claimed!.id, 'done');
    expect(q.enqueue({ key: 'o/r#1', job: { n: 5 }, deliveryId: 'd-5' }).status).toBe('queued');
  });

  it('enforces the global concurrency limit, oldest first, across handles on one file', () => {
    const a = openQueue(2);
    const b = openQueue(2);
    for (let i = 1; i <= 4; i++) a.enqueue({ key: `o/r#${i}`, job: { n: i } });
    expect(a.claim()?.job.n).toBe(1);
    expect(b.claim()?.job.n).toBe(2);
    expect(a.claim()).toBeUndefined();
    expect(b.claim()).toBeUndefined();
    const [r3, r4] = a.list('queued');
    expect(a.position(r3!.id)).toBe(1);
    expect(a.position(r4!.id)).toBe(2);
    a.finish(a.list('running')[0]!.id, 'done');
    expect(b.claim()?.job.n).toBe(3);
    expect(a.position(r4!.id)).toBe(1);
  });

  it('cancels a queued run at once and flags a running one', () => {
    const q = openQueue();
    const r1 = q.enqueue({ key: 'k1', job: { n: 1 } });
    const r2 = q.enqueue({ key: 'k2', job: { n: 2 } });
    if (r1.status !== 'queued' || r2.status !== 'queued') throw new Error('not queued');
    q.claim();
    expect(q.requestCancel('k2')).toMatchObject({ wasRunning: false, run: { state: 'cancelled' } });
    expect(q.requestCancel('k1')).toMatchObject({ wasRunning: true, run: { state: 'running' } });
    expect(q.isCancelRequested(r1.run.id)).toBe(true);
    expect(q.requestCancel('nothing')).toBeUndefined();
  });

  it('after a restart requeues interrupted runs once, then reports them failed', () => {
    let q = openQueue();
    const queued = q.enqueue({ key: 'k', job: { n: 1 }, deliveryId: 'd' });
    if (queued.status !== 'queued') throw new Error('not queued');
    const id = queued.run.id;
    q.claim();
    q.close();

    // "Restart" 1: the run is requeued.
    q = openQueue();
    expect(q.recoverInterrupted()).toMatchObject({
      requeued: [{ id, state: 'queued', attempts: 1 }],
      failed: [],
    });
    expect(q.claim()?.id).toBe(id);
    q.close();

    // "Restart" 2: it was interrupted again: failed, and the issue may run again.
    q = openQueue();
    const recovered = q.recoverInterrupted();
    expect(recovered.requeued).toEqual([]);
    expect(recovered.failed).toMatchObject([
      { id, state: 'failed', outcome: 'interrupted', attempts: 2 },
    ]);
    expect(q.enqueue({ key: 'k', job: { n: 2 } }).status).toBe('queued');
    // Duplicate delivery still refused after restarts.
    expect(q.enqueue({ key: 'other', job: { n: 3 }, deliveryId: 'd' }).status).toBe('duplicate');
  });

  it('keeps notes and counts REST calls per run', () => {
    const q = openQueue();
    q.setNote('k', 'status-comment-id', '77');
    expect(q.getNote('k', 'status-comment-id')).toBe('77');
    q.setNote('k', 'status-comment-id', undefined);
    expect(q.getNote('k', 'status-comment-id')).toBeUndefined();
    const r = q.enqueue({ key: 'k', job: { n: 1 } });
    if (r.status !== 'queued') throw new Error('not queued');
    q.addRestCalls(r.run.id, 3);
    q.addRestCalls(r.run.id, 2);
    expect(q.get(r.run.id)?.restCalls).toBe(5);
  });

  it('holds an accepted run for its check: counted in positions, never claimed until released', () => {
    const q = openQueue();
    const a = q.enqueue({ key: 'k1', job: { n: 1 }, deliveryId: 'd1', held: true });
    const b = q.enqueue({ key: 'k2', job: { n: 2 }, deliveryId: 'd2', held: true });
    if (a.status !== 'queued' || b.status !== 'queued') throw new Error('not queued');
    expect([a.position, b.position]).toEqual([1, 2]);
    expect(a.run.held).toBe(true);
    expect(q.claim()).toBeUndefined();
    // A held run blocks its key like any active run.
    expect(q.enqueue({ key: 'k1', job: { n: 3 } }).status).toBe('active');
    expect(q.release(b.run.id)).toBe(true);
    expect(q.release(b.run.id)).toBe(false);
    expect(q.claim()?.id).toBe(b.run.id);
    expect(q.runForDelivery('d1')?.id).toBe(a.run.id);
    // A refused trigger's run disappears; the key is free again.
    expect(q.discard(a.run.id)).toBe(true);
    expect(q.get(a.run.id)).toBeUndefined();
    expect(q.discard(b.run.id)).toBe(false); // running: not discardable
    expect(q.enqueue({ key: 'k1', job: { n: 4 } }).status).toBe('queued');
  });

  it('admits a delivery once: a second id with the same raw body is a replay', () => {
    const q = openQueue();
    const first = q.admit({
      deliveryId: 'd1',
      event: 'run',
      payload: { a: 1 },
      bodySha256: 'aaa',
      run: { key: 'k', job: { n: 1 }, held: true },
    });
    expect(first).toMatchObject({
      status: 'recorded',
      enqueued: { status: 'queued', position: 1 },
    });
    expect(q.admit({ deliveryId: 'd1', event: 'run', payload: {}, bodySha256: 'bbb' })).toEqual({
      status: 'duplicate',
    });
    expect(
      q.admit({
        deliveryId: 'd2',
        event: 'run',
        payload: { a: 1 },
        bodySha256: 'aaa',
        run: { key: 'k2', job: { n: 2 } },
      }),
    ).toEqual({ status: 'replay', firstDeliveryId: 'd1' });
    expect(q.list()).toHaveLength(1);
    expect(q.pendingDeliveries().map((d) => d.deliveryId)).toEqual(['d1']);
    // Another body (the label removed and added again) is a new trigger.
    expect(q.admit({ deliveryId: 'd3', event: 'run', payload: {}, bodySha256: 'ccc' }).status).toBe(
      'recorded',
    );
  });

  it('forgets a body hash after the replay window', () => {
    const q = SqliteStore.open<Job>({ dataDir: dir, concurrency: 1, replayWindowMs: 0 });
    open.push(q);
    q.admit({ deliveryId: 'd1', event: 'run', payload: {}, bodySha256: 'aaa' });
    const later = Date.now() + 5;
    while (Date.now() < later) {
      /* the window is 0 ms: let the clock move */
    }
    expect(q.admit({ deliveryId: 'd2', event: 'run', payload: {}, bodySha256: 'aaa' }).status).toBe(
      'recorded',
    );
  });

  it('prunes finished runs before a cutoff, never active ones', () => {
    const q = openQueue(2);
    const ids = [1, 2, 3].map((n) => {
      const r = q.enqueue({ key: `k${n}`, job: { n } });
      if (r.status !== 'queued') throw new Error('not queued');
      return r.run.id;
    });
    q.claim();
    q.claim();
    q.finish(ids[0]!, 'done');
    // ids[1] running, ids[2] queued
    expect(q.pruneFinished(Date.now() - 60_000)).toEqual([]);
    expect(q.pruneFinished(Date.now() + 1)).toEqual([ids[0]]);
    expect(q.list().map((r) => r.id)).toEqual([ids[1], ids[2]]);
  });

  it('rejects a bad concurrency with one clear line', () => {
    expect(() => SqliteStore.open({ dataDir: dir, concurrency: 0 })).toThrow(
      /concurrency must be a positive integer/,
    );
  });
});
