import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/queue/sqlite-store.js';
import { SqliteQueue } from '../../src/queue/sqlite-queue.js';
import { pruneRetention } from '../../src/queue/retention.js';

const DAY = 24 * 3600 * 1000;
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'frognano-retention-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function trajectory(id: string, ageDays = 0): string {
  const d = join(dir, 'trajectories', id);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, 'trajectory.json'), '{}');
  const t = (Date.now() - ageDays * DAY) / 1000;
  utimesSync(d, t, t);
  return d;
}

describe('pruneRetention', () => {
  it('deletes finished runs and trajectories older than the retention, keeps the rest', async () => {
    const q = SqliteStore.open<{ n: number }>({ dataDir: dir, concurrency: 2 });
    try {
      const make = (n: number) => {
        const r = q.enqueue({ key: `k${n}`, job: { n } });
        if (r.status !== 'queued') throw new Error('not queued');
        return r.run.id;
      };
      const old = make(1);
      const running = make(2);
      const queued = make(3);
      q.claim(); // old
      q.claim(); // running
      q.finish(old, 'failed');
      const oldDir = trajectory(old, 40);
      const runningDir = trajectory(running, 40);
      const queuedDir = trajectory(queued, 40);
      const orphanOld = trajectory('00000000-0000-4000-8000-000000000001', 40);
      // Relative to the pruning time below: a day old.
      const orphanNew = trajectory('00000000-0000-4000-8000-000000000002', -30);

      // 31 days from now, the failed run is past a 30-day retention.
      const result = await pruneRetention({
        queue: new SqliteQueue(q),
        trajectoriesDir: join(dir, 'trajectories'),
        retentionDays: 30,
        now: Date.now() + 31 * DAY,
      });
      expect(result).toEqual({ runs: 1, trajectories: 2 });
      expect(q.get(old)).toBeUndefined();
      expect(q.get(running)?.state).toBe('running');
      expect(q.get(queued)?.state).toBe('queued');
      expect(existsSync(oldDir)).toBe(false);
      expect(existsSync(orphanOld)).toBe(false);
      expect(existsSync(runningDir)).toBe(true);
      expect(existsSync(queuedDir)).toBe(true);
      expect(existsSync(orphanNew)).toBe(true);
      // Nothing recent is touched.
      expect(
        await pruneRetention({
          queue: new SqliteQueue(q),
          trajectoriesDir: join(dir, 'trajectories'),
          retentionDays: 30,
        }),
      ).toEqual({ runs: 0, trajectories: 0 });
    } finally {
      q.close();
    }
  });

  it('copes with no trajectories directory', async () => {
    const q = SqliteStore.open({ dataDir: dir, concurrency: 1 });
    try {
      expect(
        await pruneRetention({
          queue: new SqliteQueue(q),
          trajectoriesDir: join(dir, 'nope'),
          retentionDays: 30,
        }),
      ).toEqual({ runs: 0, trajectories: 0 });
    } finally {
      q.close();
    }
  });
});
