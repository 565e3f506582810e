// The worker's job deadline and the status comment while a loop waits for a model slot: the
// wait does not count against the time limit, so the deadline moves on by it, and the comment
// says the run is waiting. GitHub is mocked strictly at the wire; the pipeline is a stand-in
// that reports a long wait for a slot, as a real run does when every endpoint is at its cap.
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
  const dataDir = mkdtempSync(join(tmpdir(), 'frognano-worker-model-wait-'));
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

it('moves the job deadline on by the time a loop waited for a model slot, and says it waits', async () => {
  let aborted = false;
  const { run, statusBodies } = await runWith(async (request) => {
    request.signal?.addEventListener('abort', () => (aborted = true), { once: true });
    // Limit 200 ms + 300 ms grace; the loop waits 1.5 s for a slot, then works 100 ms.
    request.onProgress?.({ kind: 'phase', phase: 'agent', timeoutMs: 200 });
    request.onProgress?.({ kind: 'model-wait', waiting: true, waitedMs: 0 });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    request.onProgress?.({ kind: 'model-wait', waiting: false, waitedMs: 1500 });
    request.onProgress?.({
      kind: 'step',
      step: 1,
      maxSteps: 150,
      tools: ['Bash'],
      elapsedMs: 1600,
      contextTokens: 10,
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    return runResult({ patch: '', filesChanged: [], finalMessage: 'Nothing to change.' });
  });
  expect(aborted).toBe(false);
  expect(run).toMatchObject({ outcome: 'no_change' });
  expect(statusBodies).toContainEqual(
    expect.stringContaining('running: waiting for a model slot.'),
  );
  expect(statusBodies).toContainEqual(
    expect.stringContaining('the wait does not count against the time limit'),
  );
});
