// Holds a RedisQueue exclusive section until killed (the redis-exclusive test's other process).
import { RedisQueue } from '../../src/queue/redis-queue.js';

const [url, prefix, key, ttl] = process.argv.slice(2);
const queue = await RedisQueue.open({
  url: url as string,
  prefix: prefix as string,
  concurrency: 1,
  exclusiveLockMs: Number(ttl),
});
await queue.exclusive(key as string, () => {
  process.stdout.write('locked\n');
  return new Promise<never>(() => undefined);
});
