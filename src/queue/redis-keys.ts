// What every role of the Redis backend shares: the connection and the namespace of its keys
// (listed at the top of redis-queue.ts), and the Lua scripts run under that namespace.
import type { Redis } from 'ioredis';

export class RedisKeys {
  constructor(
    readonly redis: Redis,
    /** `<prefix>:fn:`, before every key of the backend's own. */
    readonly p: string,
  ) {}

  /** Runs one of redis-scripts.ts's scripts (its keys derive from the namespace, ARGV[1]). */
  eval(script: string, args: string[]): Promise<unknown> {
    return this.redis.eval(script, 0, this.p, ...args);
  }
}
