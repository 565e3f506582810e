// `frognano runs` and `frognano runs show` as a user runs them: a child process reading a real
// queue database and run directories in FROGNANO_DATA_DIR.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IssueJob } from '../../src/github/job.js';
import { runOutDir } from '../../src/data-dir.js';
import { SqliteStore } from '../../src/queue/sqlite-store.js';
import { RedisQueue } from '../../src/queue/redis-queue.js';
import { writeRunRecord } from '../../src/web/index.js';
import { runResult } from '../github/helpers/run-result.js';
import { generateTrajectory } from './helpers/generated-trajectory.js';

const CLI = path.resolve('bin/frognano.js');
let dataDir: string;
const ids: Record<string, string> = {};

function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      {
        env: { PATH: process.env.PATH, HOME: process.env.HOME, FROGNANO_DATA_DIR: dataDir, ...env },
        cwd: tmpdir(),
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

function job(repo: string, n: number, title: string): IssueJob {
  return {
    installationId: 1,
    owner: 'octo',
    repo,
    issueNumber: n,
    issueTitle: title,
    issueText: title,
    sender: { login: 'maint', id: 1 },
    source: n === 2 ? 'retry' : 'label',
    deliveryId: `d${n}`,
  };
}

describe('frognano runs', () => {
  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'frognano-runs-cli-'));
    const queue = SqliteStore.open<IssueJob>({ dataDir, concurrency: 1 });
    for (const [repo, n, title] of [
      ['calc', 1, 'done run \u001b[31mred\u001b[0m title'],
      ['calc', 2, 'running run'],
      ['other', 3, 'queued run'],
    ] as const) {
      const r = queue.enqueue({ key: `octo/${repo}#${n}`, job: job(repo, n, title) });
      if (r.status === 'queued') ids[n] = r.run.id;
    }
    queue.claim();
    const done = runOutDir(dataDir, ids[1]!);
    mkdirSync(done, { recursive: true });
    await writeRunRecord(done, { model: 'frog-test', result: runResult({ runId: ids[1]! }) });
    queue.finish(ids[1]!, 'done', { outcome: 'pull_request' });
    queue.claim();
    const running = runOutDir(dataDir, ids[2]!);
    mkdirSync(running, { recursive: true });
    writeFileSync(
      path.join(running, 'trajectory.json'),
      JSON.stringify(generateTrajectory({ steps: 12, tokens: 4000, status: 'running' })),
    );
    queue.close();
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('lists the queue and the recent runs, newest first', async () => {
    const { code, stdout } = await cli(['runs']);
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('queue: 1 running, 1 queued');
    expect(lines[1]).toMatch(/^STATE\s+ISSUE\s+AGE\s+STEP\s+OUTCOME\s+ID$/);
    expect(lines[2]).toMatch(
      new RegExp(`^queued\\s+octo/other#3\\s+\\d+s\\s+-\\s+-\\s+${ids[3]}$`),
    );
    expect(lines[3]).toMatch(
      new RegExp(`^running\\s+octo/calc#2\\s+\\d+s\\s+12/150\\s+-\\s+${ids[2]}$`),
    );
    expect(lines[4]).toMatch(
      new RegExp(`^done\\s+octo/calc#1\\s+\\d+s\\s+3/150\\s+pull_request\\s+${ids[1]}$`),
    );

    const filtered = await cli(['runs', '--state', 'running']);
    expect(filtered.stdout).toContain('octo/calc#2');
    expect(filtered.stdout).not.toContain('octo/calc#1');
  });

  it('prints JSON for scripts', async () => {
    const { code, stdout } = await cli(['runs', '--json', '--repo', 'octo/calc']);
    expect(code).toBe(0);
    const runs = JSON.parse(stdout) as { id: string; state: string; step?: number }[];
    expect(runs.map((r) => [r.id, r.state, r.step])).toEqual([
      [ids[2], 'running', 12],
      [ids[1], 'done', 3],
    ]);
  });

  it('shows one run by a prefix of its id, with no control characters from the title', async () => {
    const { code, stdout } = await cli(['runs', 'show', ids[1]!.slice(0, 8)]);
    expect(code).toBe(0);
    expect(stdout).toMatch(new RegExp(`^run\\s+${ids[1]}$`, 'm'));
    expect(stdout).toMatch(/^state\s+done \(pull_request\)$/m);
    expect(stdout).toMatch(/^issue\s+octo\/calc#1 done run {2}\[31mred \[0m title$/m);
    expect(stdout).not.toContain('\u001b');
    expect(stdout).toMatch(/^trigger\s+label by @maint$/m);
    expect(stdout).toMatch(/^model\s+frog-test$/m);
    expect(stdout).toMatch(/^tests\s+before fail \(exit 1\) → after pass \(exit 0\)$/m);
    expect(stdout).toMatch(/^files changed\s+calc\.py$/m);
    expect(stdout).not.toContain('run page');

    const withUrl = await cli(['runs', 'show', ids[1]!, '--json'], {
      FROGNANO_PUBLIC_URL: 'https://bot.example.com',
    });
    const shown = JSON.parse(withUrl.stdout) as { runPageUrl: string; result: { patch: string } };
    expect(shown.runPageUrl).toBe(`https://bot.example.com/frognano/runs/${ids[1]}/trajectory`);
    expect(shown.result.patch).toContain('+    return a + b');
  });

  it('fails in one line for an unknown run or a missing queue', async () => {
    const unknown = await cli(['runs', 'show', 'ffffffff']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe('frognano: no run ffffffff: see `frognano runs` for the ids\n');
    const missing = await cli(['runs'], { FROGNANO_DATA_DIR: path.join(dataDir, 'nope') });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^frognano: no run queue at .*nope\/frognano\.sqlite: /);
  });
});

describe('frognano runs show: the environment', () => {
  let envDataDir = '';
  let runId = '';
  beforeAll(async () => {
    envDataDir = mkdtempSync(path.join(tmpdir(), 'frognano-runs-env-'));
    const queue = SqliteStore.open<IssueJob>({ dataDir: envDataDir, concurrency: 1 });
    const r = queue.enqueue({ key: 'octo/calc#4', job: job('calc', 4, 'needs dateutil') });
    if (r.status !== 'queued') throw new Error(`not queued: ${r.status}`);
    runId = r.run.id;
    queue.claim();
    const out = runOutDir(envDataDir, runId);
    mkdirSync(out, { recursive: true });
    const result = runResult({
      runId,
      environment: {
        source: 'auto',
        ecosystems: ['python'],
        commands: [],
        plan: [],
        failed: [
          {
            candidate: 'project files',
            reason: "pip install -r 'requirements.txt' (requirements.txt) failed with exit code 1",
          },
        ],
        notes: [],
        snapshot: 'miss',
        seconds: 12.5,
        network: 'registries',
        testsCollected: 0,
        importErrors: ["No module named 'dateutil'"],
        runnable: false,
        problem: "import errors at collection: No module named 'dateutil'",
      },
      egress: {
        mode: 'registries',
        allowedHosts: ['files.pythonhosted.org', 'pypi.org'],
        blocked: [{ host: 'example.org', port: 443, count: 3, reason: 'not allowed' }],
      },
    });
    await writeRunRecord(out, { model: 'frog-test', result });
    queue.finish(runId, 'done', { outcome: 'pull_request' });
    queue.close();
  });
  afterAll(() => rmSync(envDataDir, { recursive: true, force: true }));

  it('carries the facts of the pull request: setup, network, blocked, collection, problem', async () => {
    const { code, stdout } = await cli(['runs', 'show', runId], {
      FROGNANO_DATA_DIR: envDataDir,
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /^tests\s+before fail \(exit 1\) → after pass \(exit 0\) \(inconclusive\)$/m,
    );
    expect(stdout).toMatch(
      /^environment\s+automatic \(python\): nothing installed \(12\.5s\), snapshot miss; 0 tests collected; import errors: No module named 'dateutil'$/m,
    );
    expect(stdout).toMatch(
      /^did not work\s+project files: pip install -r 'requirements\.txt' \(requirements\.txt\) failed with exit code 1$/m,
    );
    expect(stdout).toMatch(
      /^setup network\s+registries; allowed: files\.pythonhosted\.org, pypi\.org; blocked: example\.org:443 ×3 \(not allowed\)$/m,
    );
    expect(stdout).toMatch(
      /^problem\s+the tests could not run in this environment: import errors at collection: No module named 'dateutil'$/m,
    );
  });
});

describe('frognano runs with FROGNANO_REDIS_URL', () => {
  const REDIS_URL = process.env.FROGNANO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `fntest:${randomUUID()}`;
  let runId = '';
  let emptyDataDir = '';
  beforeAll(async () => {
    emptyDataDir = mkdtempSync(path.join(tmpdir(), 'frognano-runs-redis-'));
    const queue = await RedisQueue.open<IssueJob>({
      url: REDIS_URL,
      prefix,
      concurrency: 1,
      worker: true,
    });
    try {
      const r = await queue.enqueue({ key: 'octo/calc#9', job: job('calc', 9, 'made elsewhere') });
      if (r.status !== 'queued') throw new Error(`not queued: ${r.status}`);
      runId = r.run.id;
      await queue.claim();
      // A worker on another host shared its record; this data directory has nothing.
      const record = { model: 'frog-test', result: runResult({ runId }) };
      await queue.putArtifact(runId, 'run.json', Buffer.from(JSON.stringify(record)), 60);
      await queue.finish(runId, 'done', { outcome: 'pull_request' });
    } finally {
      await queue.close();
    }
  });
  afterAll(async () => {
    rmSync(emptyDataDir, { recursive: true, force: true });
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('lists and shows the runs of the shared queue, made on any host', async () => {
    const env = {
      FROGNANO_DATA_DIR: emptyDataDir,
      FROGNANO_REDIS_URL: REDIS_URL,
      FROGNANO_REDIS_PREFIX: prefix,
    };
    const list = await cli(['runs'], env);
    expect(list.stderr).toBe('');
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(
      new RegExp(`^done\\s+octo/calc#9\\s+\\d+s\\s+3/150\\s+pull_request\\s+${runId}$`, 'm'),
    );
    const show = await cli(['runs', 'show', runId], env);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/^model\s+frog-test$/m);
    expect(show.stdout).toMatch(/^files changed\s+calc\.py$/m);
  });
});
