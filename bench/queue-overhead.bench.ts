// Queue overhead per run: enqueue → claim → finish through the async queue door, on the embedded
// SQLite backend and on BullMQ over Redis (127.0.0.1:6379, a key prefix of its own, removed
// afterwards). Sequential, so each figure is one run's bookkeeping, not throughput under load.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RedisQueue } from '../src/queue/redis-queue.js';
import { SqliteQueue } from '../src/queue/sqlite-queue.js';
import type { Queue } from '../src/queue/types.js';

const RUNS = 300;
const REDIS_URL = process.env.FROGNANO_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function perRun(queue: Queue<{ n: number }>): Promise<{ median: number; p99: number }> {
  const times: number[] = [];
  for (let n = 0; n < RUNS + 20; n++) {
    const start = process.hrtime.bigint();
    const queued = await queue.enqueue({ key: `o/r#${n}`, job: { n }, deliveryId: `d-${n}` });
    if (queued.status !== 'queued') throw new Error(`run ${n} not queued: ${queued.status}`);
    const run = await queue.claim();
    if (!run) throw new Error(`run ${n} not claimed`);
    await queue.finish(run.id, 'done', { outcome: 'pull_request' });
    if (n >= 20) times.push(Number(process.hrtime.bigint() - start) / 1e6); // after a warm-up
  }
  times.sort((a, b) => a - b);
  return {
    median: times[Math.floor(times.length / 2)] as number,
    p99: times[Math.floor(times.length * 0.99)] as number,
  };
}

export default async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'frognano-bench-queue-'));
  const prefix = `fnbench:${randomUUID()}`;
  try {
    const sqlite = SqliteQueue.open<{ n: number }>({ dataDir: dir, concurrency: 1 });
    const s = await perRun(sqlite);
    await sqlite.close();
    const redis = await RedisQueue.open<{ n: number }>({
      url: REDIS_URL,
      prefix,
      concurrency: 1,
      worker: true,
    });
    const r = await perRun(redis);
    await redis.close();
    const fmt = (ms: number) => `${ms.toFixed(2).padStart(6)} ms`;
    console.log(
      `queue overhead per run (enqueue → claim → finish), ${RUNS} runs one after another:`,
    );
    console.log(`  sqlite   median ${fmt(s.median)}   p99 ${fmt(s.p99)}`);
    console.log(`  bullmq   median ${fmt(r.median)}   p99 ${fmt(r.p99)}   (Redis at ${REDIS_URL})`);
    console.log(
      `  ratio    median ${(r.median / s.median).toFixed(1)}x; either way a small part of a run that lasts minutes`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
    const client = new Redis(REDIS_URL);
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await client.del(...keys);
    } while (cursor !== '0');
    client.disconnect();
  }
}
