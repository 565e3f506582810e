// The worker's job-level deadline (issue 8, item 2): a run still going its agent time limit
// plus the grace after the agent started is aborted, reported on the issue as over time, and
// abandoned if it does not stop. GitHub is mocked strictly at the wire; the pipeline is a
// stand-in that starts its agent phase and then overruns, which the real one cannot be made to
// do on purpose.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { IssueJob } from '../../src/github/job.js';
import { KeyedLock } from '../../src/github/keyed-lock.js';
import { createWorkerPool } from '../../src/github/create-worker-pool.js';
import type { RunPipelineFn } from '../../src/runs/index.js';
import { SqliteStore } from '../../src/queue/sqlite-store.js';
import { SqliteQueue } from '../../src/queue/sqlite-queue.js';
import { mockStatusComment, newGitHubMock } from '../github/helpers/app-harness.js';
import { TEST_INSTALLATION_TOKEN, silentLog, testOctokit } from '../github/helpers/github.js';
import { runResult } from '../github/helpers/run-result.js';
import { useStrictNock } from '../github/helpers/strict-nock.js';

useStrictNock();

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const job: IssueJob = {
  installationId: 1,
  owner: 'Codertocat',
  repo: 'Hello-World',
  issueNumber: 1,
  issueTitle: 'add() subtracts',
  issueText: 'add() subtracts\n\nIt should add.',
  sender: { login: 'Codertocat', id: 21031067 },
  source: 'label',
  deliveryId: 'delivery-1',
};

async function runWith(runPipeline: RunPipelineFn) {
  const dataDir = mkdtempSync(join(tmpdir(), 'frognano-worker-deadline-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const queue = SqliteStore.open<IssueJob>({ dataDir, concurrency: 1 });
  cleanups.push(() => queue.close());
  const gh = newGitHubMock('nock');
  // The stand-in installation client's token, as if this mock had minted it.
  gh.tokens.add(TEST_INSTALLATION_TOKEN);
  mockStatusComment(gh, 1);
  const pool = createWorkerPool({
    queue: new SqliteQueue(queue),
    auth: () => Promise.resolve(testOctokit()),
    mintInstallationToken: () => Promise.resolve('ghs_unused'),
    runPipeline,
    botIdentity: () => Promise.resolve({ name: 'frognano[bot]', email: 'bot@example.com' }),
    lock: new KeyedLock(),
    log: silentLog,
    gitBaseUrl: 'file:///nonexistent',
    dataDir,
    sandbox: 'local',
    statusThrottleMs: 0,
    pollMs: 50,
    jobDeadlineGraceMs: 300,
    jobAbandonMs: 500,
  });
  queue.enqueue({ key: 'Codertocat/Hello-World#1', job });
  pool.start();
  cleanups.push(() => pool.stop());
  await pool.idle();
  const [run] = queue.list();
  return { run, statusBodies: gh.statusBodies };
}

it('aborts a run that outlives timeout_minutes plus the grace and reports it', async () => {
  let aborted: unknown;
  const { run, statusBodies } = await runWith(async (request) => {
    request.onProgress?.({ kind: 'phase', phase: 'agent', timeoutMs: 200 });
    // Stuck after the agent (a hung test run, say) until the worker aborts it.
    await new Promise<void>((resolve) =>
      request.signal?.addEventListener('abort', () => resolve(), { once: true }),
    );
    aborted = request.signal?.reason;
    return runResult({ outcome: 'cancelled', error: 'the run was cancelled' });
  });
  expect(aborted).toBeInstanceOf(Error);
  expect(run).toMatchObject({ state: 'failed', outcome: 'timed_out' });
  expect(statusBodies.at(-1)).toContain('took longer than its time limit');
  expect(statusBodies.at(-1)).toContain('Nothing was published');
});

it('gives up on a run that ignores the abort, and still reports it', async () => {
  const { run, statusBodies } = await runWith((request) => {
    request.onProgress?.({ kind: 'phase', phase: 'agent', timeoutMs: 200 });
    return new Promise(() => undefined);
  });
  expect(run).toMatchObject({ state: 'failed', outcome: 'timed_out' });
  expect(statusBodies.at(-1)).toContain('took longer than its time limit');
});
