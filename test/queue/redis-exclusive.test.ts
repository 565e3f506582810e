// RedisQueue.exclusive across processes on a real Redis (127.0.0.1:6379): the lock is renewed
// while its holder works, so a section longer than the lock's TTL is still alone; a holder
// that dies stops renewing and its lock expires. A short TTL keeps the test to seconds.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { RedisQueue } from '../../src/queue/redis-queue.js';

const REDIS_URL = process.env.FROGNANO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const TTL_MS = 300;
const KEY = 'o/r#1';

let prefix: string;
let redis: Redis;
const opened: RedisQueue[] = [];
const children: ChildProcess[] = [];

beforeEach(() => {
  prefix = `fntest:${randomUUID()}`;
  redis = new Redis(REDIS_URL);
});

afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const q of opened.splice(0)) await q.close().catch(() => undefined);
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

async function open(): Promise<RedisQueue> {
  const q = await RedisQueue.open({
    url: REDIS_URL,
    prefix,
    concurrency: 1,
    exclusiveLockMs: TTL_MS,
  });
  opened.push(q);
  return q;
}

const lockKey = () => `${prefix}:fn:lock:${KEY}`;

it('keeps a section alone while it runs past the lock TTL, and frees it at once on release', async () => {
  const [a, b] = [await open(), await open()];
  const log: string[] = [];
  let ttlMidway = -2;
  const holding = a.exclusive(KEY, async () => {
    log.push('a in');
    await sleep(TTL_MS * 5);
    ttlMidway = await redis.pttl(lockKey());
    await sleep(TTL_MS);
    log.push('a out');
  });
  await sleep(50);
  const waiting = b.exclusive(KEY, async () => {
    log.push('b in');
    log.push('b out');
  });
  await Promise.all([holding, waiting]);
  expect(log).toEqual(['a in', 'a out', 'b in', 'b out']);
  // Renewed: still held, with a live expiry (never made permanent).
  expect(ttlMidway).toBeGreaterThan(0);
  expect(ttlMidway).toBeLessThanOrEqual(TTL_MS);
  // Released: the key is gone and renewal does not bring it back.
  await sleep(TTL_MS);
  expect(await redis.exists(lockKey())).toBe(0);
  const started = Date.now();
  await a.exclusive(KEY, async () => undefined);
  expect(Date.now() - started).toBeLessThan(TTL_MS);
});

it('renews only its own lock: a lock taken over by another holder is left as it is', async () => {
  const a = await open();
  let seen: { value: string | null; ttl: number } | undefined;
  await a.exclusive(KEY, async () => {
    // As if this holder had stalled past the TTL and another process had taken the lock.
    await redis.set(lockKey(), 'someone-else', 'PX', 10_000);
    await sleep(TTL_MS * 2);
    seen = { value: await redis.get(lockKey()), ttl: await redis.pttl(lockKey()) };
  });
  expect(seen?.value).toBe('someone-else');
  expect(seen?.ttl).toBeGreaterThan(TTL_MS * 10);
  // Nor is it deleted on release.
  expect(await redis.get(lockKey())).toBe('someone-else');
});

it('a holder killed mid-section stops renewing: its lock expires and another process gets it', async () => {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(import.meta.dirname, 'exclusive-holder-child.ts'),
      REDIS_URL,
      prefix,
      KEY,
      String(TTL_MS),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      if (c.toString().includes('locked')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`lock holder exited with ${code}`)));
  });
  // Alive, the child keeps its lock well past the TTL.
  await sleep(TTL_MS * 4);
  expect(await redis.exists(lockKey())).toBe(1);
  child.kill('SIGKILL');
  const killed = Date.now();
  const b = await open();
  await b.exclusive(KEY, async () => undefined);
  const waited = Date.now() - killed;
  // The rest of the last renewal's TTL: at most one TTL, plus polling and scheduling slack.
  expect(waited).toBeLessThan(TTL_MS + 1500);
});
