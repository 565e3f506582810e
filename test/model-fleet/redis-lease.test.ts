// The shared cap in Redis, across worker processes: the leases of two workers together never
// exceed the cap on one endpoint, and a worker killed with -9 while holding a slot loses it once
// its lease lapses (no renewal), so the loop waiting in the other worker goes on.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisFleetStore } from '../../src/model-fleet/redis-store.js';
import {
  finalAnswer,
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';

const REDIS = process.env.FROGNANO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const WORKER = join(import.meta.dirname, 'helpers', 'fleet-worker.ts');

const children = new Set<ChildProcess>();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function model(delayMs: number): Promise<ScriptedModelServer> {
  const server = await startScriptedModelServer({
    onExhausted: { ...finalAnswer('ok'), delayMs },
  });
  cleanups.push(() => server.close());
  return server;
}

function prefix(): string {
  const p = `frognano-test-fleet-${randomUUID().slice(0, 8)}`;
  cleanups.push(async () => {
    const redis = new Redis(REDIS);
    const keys = await redis.keys(`${p}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });
  return p;
}

interface Worker {
  child: ChildProcess;
  lines: string[];
  /** Resolves with the first line matching. */
  line(pattern: RegExp): Promise<string>;
  exited: Promise<number | null>;
}

function startWorker(args: {
  url: string;
  prefix: string;
  cap: number;
  loops: number;
  steps: number;
  leaseMs: number;
  name: string;
}): Worker {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      WORKER,
      args.url,
      REDIS,
      args.prefix,
      String(args.cap),
      String(args.loops),
      String(args.steps),
      String(args.leaseMs),
      args.name,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.add(child);
  const lines: string[] = [];
  const waiting: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const w of [...waiting]) {
      if (w.pattern.test(line)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    child,
    lines,
    exited,
    line: (pattern) => {
      const seen = lines.find((l) => pattern.test(l));
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => waiting.push({ pattern, resolve }));
    },
  };
}

describe('model slots in Redis', () => {
  it('bounds the loops of two workers together by the cap on one endpoint', async () => {
    const server = await model(150);
    const p = prefix();
    const common = { url: server.baseUrl, prefix: p, cap: 2, loops: 3, steps: 3, leaseMs: 5000 };
    const one = startWorker({ ...common, name: 'one' });
    const two = startWorker({ ...common, name: 'two' });
    expect(await one.exited).toBe(0);
    expect(await two.exited).toBe(0);
    expect(server.chatRequests).toHaveLength(18);
    // Never more than two loops' requests at once, whichever worker they came from.
    expect(server.maxInFlight).toBeLessThanOrEqual(2);
    expect(
      [...one.lines, ...two.lines].filter((l) => l.startsWith('waiting')).length,
    ).toBeGreaterThan(0);
    const store = new RedisFleetStore({ url: REDIS, prefix: p });
    cleanups.push(() => store.close());
    const name = `127.0.0.1:${server.port}`;
    expect((await store.loads([name])).get(name)).toBe(0);
  }, 60_000);

  it('frees the slot of a worker killed with -9 once its lease lapses', async () => {
    const server = await model(0);
    const p = prefix();
    const common = { url: server.baseUrl, prefix: p, cap: 1, loops: 1, leaseMs: 1500 };
    const holder = startWorker({ ...common, steps: 0, name: 'holder' });
    await holder.line(/^held holder-0$/);
    const waiter = startWorker({ ...common, steps: 2, name: 'waiter' });
    await waiter.line(/^waiting waiter-0$/);
    // The holder is alive and renewing: the waiter stays out.
    const store = new RedisFleetStore({ url: REDIS, prefix: p });
    cleanups.push(() => store.close());
    const name = `127.0.0.1:${server.port}`;
    expect((await store.loads([name])).get(name)).toBe(1);
    expect(server.chatRequests).toHaveLength(1);

    holder.child.kill('SIGKILL');
    await holder.exited;
    // Nobody releases the slot: it lapses, and the waiting loop takes it.
    await waiter.line(/^held waiter-0$/);
    expect(await waiter.exited).toBe(0);
    expect(waiter.lines).toEqual(['waiting waiter-0', 'held waiter-0', 'ended waiter-0', 'done']);
    expect(server.chatRequests).toHaveLength(3);
  }, 60_000);
});
