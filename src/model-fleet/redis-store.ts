// The fleet's shared state in Redis (FROGNANO_REDIS_URL): every worker's loops count against one
// cap per endpoint. A lease is a member of the endpoint's sorted set scored by when it lapses;
// its holder renews it, so a worker killed with -9 loses its slots after `leaseMs`. Choosing the
// least-loaded endpoint and taking the lease there is one script: two workers never both take
// the last slot. A release is published, so loops waiting on other machines try again at once.
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { abortReason, type DownMark, type FleetStore } from './fleet-store.js';

const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap = tonumber(ARGV[1])
local ttl = tonumber(ARGV[3])
local best = 0
local bestLoad = cap
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local load = redis.call('ZCARD', key)
  if load < bestLoad then
    best = i
    bestLoad = load
  end
end
if best == 0 then return 0 end
redis.call('ZADD', KEYS[best], now + ttl, ARGV[2])
redis.call('PEXPIRE', KEYS[best], ttl * 2)
return best
`;

const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return 1
`;

const LOADS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = redis.call('ZCOUNT', key, '(' .. now, '+inf')
end
return out
`;

export interface RedisFleetStoreOptions {
  url: string;
  /** Key prefix (FROGNANO_REDIS_PREFIX). */
  prefix: string;
  /** A lease not renewed for this long lapses (default 30 s: FROGNANO_LOST_WORKER_SECONDS). */
  leaseMs?: number;
  log?: Logger;
}

export class RedisFleetStore implements FleetStore {
  readonly renewEveryMs: number;
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #leaseMs: number;
  readonly #log: Logger | undefined;
  #subscriber: Redis | undefined;
  readonly #waiters = new Set<() => void>();

  constructor(options: RedisFleetStoreOptions) {
    this.#leaseMs = Math.max(200, Math.round(options.leaseMs ?? 30_000));
    this.renewEveryMs = Math.max(50, Math.floor(this.#leaseMs / 3));
    this.#prefix = `${options.prefix}:model-fleet`;
    this.#log = options.log;
    // Connects on first use: a process that never runs a loop never opens it.
    this.#redis = new Redis(options.url, { lazyConnect: true });
    this.#redis.on('error', (error: Error) =>
      this.#log?.warn({ err: error.message }, 'model fleet: Redis error'),
    );
  }

  async tryAcquire(candidates: readonly string[], cap: number, leaseId: string) {
    if (candidates.length === 0) return undefined;
    const index = (await this.#redis.eval(
      ACQUIRE,
      candidates.length,
      ...candidates.map((c) => this.#leaseKey(c)),
      cap,
      leaseId,
      this.#leaseMs,
    )) as number;
    return index > 0 ? candidates[index - 1] : undefined;
  }

  async renew(endpoint: string, leaseId: string): Promise<void> {
    await this.#redis.eval(RENEW, 1, this.#leaseKey(endpoint), leaseId, this.#leaseMs);
  }

  async release(endpoint: string, leaseId: string): Promise<void> {
    await this.#redis.zrem(this.#leaseKey(endpoint), leaseId);
    await this.#redis.publish(this.#channel(), endpoint);
  }

  async loads(endpoints: readonly string[]) {
    if (endpoints.length === 0) return new Map<string, number>();
    const counts = (await this.#redis.eval(
      LOADS,
      endpoints.length,
      ...endpoints.map((e) => this.#leaseKey(e)),
    )) as number[];
    return new Map(endpoints.map((e, i) => [e, Number(counts[i] ?? 0)]));
  }

  async markDown(endpoint: string, forMs: number, reason: string): Promise<void> {
    const key = this.#downKey(endpoint);
    if (forMs <= 0) {
      await this.#redis.del(key);
      return;
    }
    const mark: DownMark = { until: Date.now() + forMs, reason };
    await this.#redis.set(key, JSON.stringify(mark), 'PX', Math.round(forMs));
  }

  async downMarks(endpoints: readonly string[]) {
    const marks = new Map<string, DownMark>();
    if (endpoints.length === 0) return marks;
    const values = await this.#redis.mget(...endpoints.map((e) => this.#downKey(e)));
    endpoints.forEach((endpoint, i) => {
      const mark = parseMark(values[i]);
      if (mark) marks.set(endpoint, mark);
    });
    return marks;
  }

  async waitForRelease(maxMs: number, signal?: AbortSignal): Promise<void> {
    await this.#subscribe();
    await new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#waiters.delete(done);
        resolve();
      };
      const onAbort = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        reject(abortReason(signal!));
      };
      // A dead worker's lease lapses without a message: try again now and then anyway.
      const timer = setTimeout(done, maxMs);
      this.#waiters.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  async close(): Promise<void> {
    for (const wake of [...this.#waiters]) wake();
    this.#subscriber?.disconnect();
    this.#redis.disconnect();
  }

  async #subscribe(): Promise<void> {
    if (this.#subscriber) return;
    const subscriber = this.#redis.duplicate();
    this.#subscriber = subscriber;
    subscriber.on('error', () => undefined);
    subscriber.on('message', () => {
      const waiters = [...this.#waiters];
      this.#waiters.clear();
      for (const wake of waiters) wake();
    });
    await subscriber.subscribe(this.#channel());
  }

  #leaseKey(endpoint: string): string {
    return `${this.#prefix}:leases:${endpoint}`;
  }

  #downKey(endpoint: string): string {
    return `${this.#prefix}:down:${endpoint}`;
  }

  #channel(): string {
    return `${this.#prefix}:released`;
  }
}

function parseMark(value: string | null | undefined): DownMark | undefined {
  if (!value) return undefined;
  try {
    const parsed = JSON.parse(value) as Partial<DownMark>;
    if (typeof parsed.until === 'number' && typeof parsed.reason === 'string') {
      return { until: parsed.until, reason: parsed.reason };
    }
  } catch {
    // A value someone else wrote under our prefix: no mark.
  }
  return undefined;
}
