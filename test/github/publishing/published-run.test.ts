// `/frognano use K` finds the run behind the pull request wherever the run was made: on this
// host (its data directory) or, with a shared queue, on a worker elsewhere (the run record the
// worker shared); a new selection is saved where every host reads it. Real Redis.
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import type { IssueJob } from '../../../src/github/job.js';
import { publishedRun } from '../../../src/github/publishing/published-run.js';
import { issueKey } from '../../../src/github/intake/triggers.js';
import { runOutDir } from '../../../src/data-dir.js';
import { RedisQueue } from '../../../src/queue/redis-queue.js';
import { SqliteQueue } from '../../../src/queue/sqlite-queue.js';
import type { Queue } from '../../../src/queue/types.js';
import { attemptSummary, runResult } from '../helpers/run-result.js';

const REDIS_URL = process.env.FROGNANO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const target = { owner: 'octo', repo: 'calc' };
const job: IssueJob = {
  installationId: 1,
  ...target,
  issueNumber: 7,
  issueTitle: 'add() subtracts',
  issueText: 'add() subtracts',
  sender: { login: 'maintainer', id: 5 },
  source: 'label',
  deliveryId: 'd-1',
};
function attempt(n: number) {
  return attemptSummary({ attempt: n, selected: n === 1, patch: `patch ${n}` });
}
const result = runResult({ attempts: [attempt(1), attempt(2)], selectedAttempt: 1 });

async function publishedRunIn(queue: Queue<IssueJob>): Promise<string> {
  await queue.enqueue({ key: issueKey(job), job });
  const run = await queue.claim();
  await queue.finish(run!.id, 'done', { outcome: 'pull_request' });
  return run!.id;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'published-run-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

it('reads a run another host made from the shared queue, and saves a new selection there', async () => {
  const prefix = `fntest:${randomUUID()}`;
  cleanups.push(async () => {
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });
  const worker = await RedisQueue.open<IssueJob>({
    url: REDIS_URL,
    prefix,
    concurrency: 1,
    worker: true,
  });
  cleanups.push(() => worker.close());
  const serve = await RedisQueue.open<IssueJob>({ url: REDIS_URL, prefix, concurrency: 1 });
  cleanups.push(() => serve.close());
  const runId = await publishedRunIn(worker);
  // What the worker shares when its run ends (its own data directory is on another host).
  await worker.putArtifact(
    runId,
    'run.json',
    Buffer.from(JSON.stringify({ model: 'frognano-4b', result })),
    60,
  );

  const found = await publishedRun({ queue: serve, dataDir: tempDir() }, target, 7);
  expect(found).toMatchObject({ runId, requestedBy: 'maintainer', model: 'frognano-4b' });
  expect(found!.result.attempts).toHaveLength(2);

  await found!.save({ ...result, selectedAttempt: 2 });
  const again = await publishedRun({ queue: serve, dataDir: tempDir() }, target, 7);
  expect(again!.result.selectedAttempt).toBe(2);
});

it('reads and saves the run record in the data directory with the embedded queue', async () => {
  const dataDir = tempDir();
  const queue = SqliteQueue.open<IssueJob>({ dataDir, concurrency: 1 });
  cleanups.push(() => queue.close());
  const runId = await publishedRunIn(queue);
  expect(await publishedRun({ queue, dataDir }, target, 7)).toBeUndefined();

  const dir = runOutDir(dataDir, runId);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'run.json'), JSON.stringify({ result }));
  const found = await publishedRun({ queue, dataDir }, target, 7);
  await found!.save({ ...result, selectedAttempt: 2 });
  const saved = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as typeof found;
  expect(saved!.result.selectedAttempt).toBe(2);
});
