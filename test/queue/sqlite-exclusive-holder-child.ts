// Holds a SqliteQueue exclusive section (the sqlite-exclusive test's other process): for
// `holdMs`, then prints when it left (before the lock is given back), or until killed.
import { setTimeout as sleep } from 'node:timers/promises';
import { SqliteQueue } from '../../src/queue/sqlite-queue.js';

const [dataDir, key, ttl, hold] = process.argv.slice(2);
const queue = SqliteQueue.open({
  dataDir: dataDir as string,
  concurrency: 1,
  exclusiveLockMs: Number(ttl),
});
await queue.exclusive(key as string, async () => {
  process.stdout.write('locked\n');
  if (hold === 'forever') {
    // The renewal timer is unref'd (it never keeps a process alive): this one is, until killed.
    setInterval(() => undefined, 1 << 30);
    await new Promise<never>(() => undefined);
  }
  await sleep(Number(hold));
  process.stdout.write(`out ${Date.now()}\n`);
});
await queue.close();
