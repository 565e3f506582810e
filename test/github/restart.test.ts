// A process killed mid-run (SIGKILL: no cleanup at all) and restarted: the orphaned container
// is reaped, the run is requeued once, and the status comment tells the truth throughout.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { LABEL_RUN } from '../../src/sandbox/docker-sandbox.js';
import { describeDocker, ensureSandboxImage } from '../support/docker-engine.js';
import { createPythonRepo } from '../support/python-repo.js';
import { finalAnswer, startScriptedModelServer } from '../support/scripted-model-server.js';
import {
  gate,
  mockGitHub,
  mockStatusComment,
  newGitHubMock,
  startFakeGitHub,
  OWNER,
  REPO,
  startHarness,
  waitFor,
  type Harness,
} from './helpers/app-harness.js';
import { testPrivateKey } from './helpers/github.js';
import { useStrictNock } from './helpers/strict-nock.js';

useStrictNock();

let child: ChildProcess | undefined;
let harness: Harness | undefined;
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  child?.kill('SIGKILL');
  await harness?.stop({ keepFiles: true });
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function containersOf(runId: string): Promise<string[]> {
  const list = await connectDocker().listContainers({
    all: true,
    filters: { label: [`${LABEL_RUN}=${runId}`] },
  });
  return list.map((c) => c.Id);
}

describeDocker('restart after a crash (real Docker, real process kill)', () => {
  beforeAll(() => nock.restore());
  afterAll(() => nock.activate());
  it('reaps the orphaned container, requeues the run once and keeps the status comment truthful', async () => {
    await ensureSandboxImage();
    const root = mkdtempSync(join(tmpdir(), 'frognano-crash-'));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    const repo = createPythonRepo(join(root, 'src'), {
      '.github/frognano.yml': 'max_steps: 5\ntest: python3 -m pytest\n',
    });
    mkdirSync(join(root, 'git', OWNER), { recursive: true });
    execFileSync('git', [
      'clone',
      '-q',
      '--bare',
      repo.dir,
      join(root, 'git', OWNER, `${REPO}.git`),
    ]);
    const dataDir = join(root, 'data');
    const held = gate();
    const model = await startScriptedModelServer({
      script: [held.step, finalAnswer('Nothing needed changing.')],
    });
    cleanups.push(() => model.close());

    // GitHub for both lives: a strict fake on loopback (nock cannot share a process with Docker's
    // hijacked exec streams, and a child process could not see nock anyway).
    const gh = newGitHubMock('fake');
    const fake = await startFakeGitHub(gh);
    cleanups.push(() => fake.close());
    mockGitHub({}, gh);
    mockStatusComment(gh, 1);

    // 1. The App in its own process takes the label and starts the run.
    child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(import.meta.dirname, 'helpers', 'app-process.ts'),
        root,
        dataDir,
        model.baseUrl,
        fake.url,
      ],
      // The fake checks the App's JWTs against this process's key.
      {
        stdio: ['ignore', 'ignore', 'inherit'],
        env: { ...process.env, TEST_APP_PRIVATE_KEY: testPrivateKey() },
      },
    );
    // The agent loop is waiting on the model: the container is up.
    let reached = false;
    void held.reached.then(() => (reached = true));
    await waitFor(
      () => reached || gh.statusBodies.some((s) => s.includes('the run failed')),
      'the model request',
      60_000,
    );
    expect(gh.statusBodies.join('\n')).not.toContain('the run failed');
    await waitFor(
      () => gh.statusBodies.some((s) => s.includes('the model is working')),
      'the running status',
      30_000,
    );
    const beforeRestart = gh.statusBodies.length;

    // 2. Kill it without any chance to clean up.
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    child = undefined;

    const probe = await startHarnessQueueView(dataDir);
    const runId = probe.runId;
    expect(probe.state).toBe('running');
    expect(await containersOf(runId)).toHaveLength(1); // orphaned

    // 3. Restart in this process: recovery reaps, requeues once, says so, and the run completes.
    harness = await startHarness({
      root,
      dataDir,
      model,
      sandbox: 'docker',
      python: 'python3',
      throttleMs: 0,
      env: { GITHUB_API_URL: fake.url },
    });
    expect(await containersOf(runId)).toEqual([]);
    await harness.app.workers!.idle();

    const after = gh.statusBodies.slice(beforeRestart);
    expect(after[0]).toContain(
      'the previous attempt was interrupted by a restart; queued again (position 1).',
    );
    const last = after.at(-1) ?? '';
    expect(after.filter((b) => b.includes('the run failed'))).toEqual([]);
    expect(last).toContain('no pull request: the model finished without changing any file.');
    expect(last).toContain('> Nothing needed changing.');
    expect(await harness.app.queue!.get(runId)).toMatchObject({
      state: 'done',
      attempts: 2,
      outcome: 'no_change',
    });
    expect(await containersOf(runId)).toEqual([]);
    expect(gh.authFailures, 'calls without the credential their route wants').toEqual([]);
    expect(fake.unmatched, 'requests no mock matched').toEqual([]);
    expect(fake.pending(), 'mocks never used').toEqual([]);
  }, 120_000);
});

/** Reads the run left behind by the killed process straight from its SQLite file. */
async function startHarnessQueueView(dataDir: string): Promise<{ runId: string; state: string }> {
  const { SqliteStore } = await import('../../src/queue/sqlite-store.js');
  const q = SqliteStore.open({ dataDir, concurrency: 1 });
  try {
    const [run] = q.list();
    return { runId: run!.id, state: run!.state };
  } finally {
    q.close();
  }
}
