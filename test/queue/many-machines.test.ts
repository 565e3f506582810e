// Many machines, on one: a `serve` process and `worker` processes, each with its own data
// directory, sharing one Redis (BullMQ), the scripted model, real git remotes, the local sandbox
// and a strict fake GitHub on a socket behind Probot's real App auth. Workers are killed with
// SIGKILL mid-run; Redis is killed and restarted on its AOF mid-burst.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { RedisQueue } from '../../src/queue/redis-queue.js';
import { WRITE_GAP_MS } from '../../src/github/shared-throttle.js';
import type { IssueJob } from '../../src/github/job.js';
import {
  mockGitHub,
  mockPullRequest,
  mockStatusComment,
  newGitHubMock,
  OWNER,
  PYTHON,
  REPO,
  sign,
  startFakeGitHub,
  waitFor,
  type FakeGitHub,
  type GitHubMock,
} from '../github/helpers/app-harness.js';
import { testPrivateKey } from '../github/helpers/github.js';
import { commentPayload, labeledPayload } from '../github/helpers/payloads.js';
import { createPythonRepo } from '../support/python-repo.js';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type RecordedRequest,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';

const SHARED_REDIS = process.env.FROGNANO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const NODE = join(import.meta.dirname, 'helpers', 'app-node.ts');

const children = new Set<ChildProcess>();
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Cluster {
  root: string;
  prefix: string;
  redisUrl: string;
  gh: GitHubMock;
  fake: FakeGitHub;
  model: ScriptedModelServer;
  serveUrl: string;
  /** PR creations per issue number. */
  prs: Map<number, number>;
  /** A view of the shared queue (no worker of its own). */
  queue: RedisQueue<IssueJob>;
  startWorker(name: string): Promise<ChildProcess>;
  label(issue: number, deliveryId?: string): Promise<number>;
  /** A comment by the maintainer on the issue, delivered to serve. */
  comment(issue: number, body: string): Promise<number>;
  /** Issues whose first model call waits until `release(issue)`; `always`: every call. */
  hold(issue: number, always?: boolean): { reached: Promise<void> };
  release(issue: number): void;
}

async function startCluster(
  issues: number[],
  options: {
    redisUrl?: string;
    lostWorkerSeconds?: string;
    pacedWrites?: boolean;
    /** The repository's test command (default pytest). */
    test?: string;
  } = {},
): Promise<Cluster> {
  const root = mkdtempSync(join(tmpdir(), 'frognano-many-'));
  cleanups.push(() => rmSync(root, { recursive: true, force: true }));
  const repo = createPythonRepo(join(root, 'src'), {
    '.github/frognano.yml': `max_steps: 6\ntest: ${options.test ?? `${PYTHON} -m pytest`}\n`,
  });
  mkdirSync(join(root, 'git', OWNER), { recursive: true });
  execFileSync('git', ['clone', '-q', '--bare', repo.dir, join(root, 'git', OWNER, `${REPO}.git`)]);

  const holds = new Map<
    number,
    { always: boolean; gate: Promise<void>; open: () => void; reached: () => void }
  >();
  const respond = async (request: RecordedRequest) => {
    const messages = request.body?.messages ?? [];
    const issue = Number(/Issue #(\d+):/.exec(JSON.stringify(messages))?.[1]);
    const toolResults = messages.filter((m) => m.role === 'tool').length;
    const hold = holds.get(issue);
    if (hold && (hold.always || toolResults === 0)) {
      hold.reached();
      await hold.gate;
    }
    return toolResults === 0
      ? toolCall('Edit', {
          file_path: 'calc.py',
          old_string: 'return a - b',
          new_string: 'return a + b',
        })
      : finalAnswer(`Fixed add() for issue ${issue}.`);
  };
  const model = await startScriptedModelServer({ onExhausted: respond, record: false });
  cleanups.push(() => model.close());

  const gh = newGitHubMock('fake');
  const fake = await startFakeGitHub(gh);
  cleanups.push(() => fake.close());
  mockGitHub({}, gh);
  const prs = new Map<number, number>();
  for (const n of issues) {
    mockStatusComment(gh, n);
    // POST /pulls is one path for every issue: count by the branch the PR is for.
    mockPullRequest(gh, n, 100 + n, (body) => {
      const issue = Number(/^frognano\/issue-(\d+)$/.exec(String(body.head))?.[1]);
      prs.set(issue, (prs.get(issue) ?? 0) + 1);
    });
  }

  const redisUrl = options.redisUrl ?? SHARED_REDIS;
  const prefix = `fntest:${randomUUID()}`;
  cleanups.push(() => dropPrefix(redisUrl, prefix));
  const queue = await RedisQueue.open<IssueJob>({ url: redisUrl, prefix, concurrency: 1 });
  cleanups.push(() => queue.close());

  const start = async (mode: 'serve' | 'worker', name: string) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        NODE,
        mode,
        root,
        join(root, `data-${name}`),
        model.baseUrl,
        fake.url,
        redisUrl,
        prefix,
        mode === 'worker' ? '2' : '1',
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: {
          ...process.env,
          FROGNANO_LOST_WORKER_SECONDS: options.lostWorkerSeconds ?? '3',
          // The fake checks the App's JWTs against this process's key.
          TEST_APP_PRIVATE_KEY: testPrivateKey(),
          // Production pacing of GitHub writes, and status edits at most every 15 s (default).
          ...(options.pacedWrites
            ? { TEST_PACED_WRITES: '1', TEST_STATUS_THROTTLE_MS: '15000' }
            : {}),
        },
      },
    );
    children.add(child);
    child.once('exit', () => children.delete(child));
    const line = await new Promise<string>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout! });
      lines.once('line', resolve);
      child.once('exit', (code) => reject(new Error(`${mode} ${name} exited with ${code}`)));
    });
    return { child, url: (JSON.parse(line) as { url: string | null }).url };
  };
  const serve = await start('serve', 'serve');

  return {
    root,
    prefix,
    redisUrl,
    gh,
    fake,
    model,
    serveUrl: serve.url!,
    prs,
    queue,
    startWorker: async (name) => (await start('worker', name)).child,
    label(issue, deliveryId = randomUUID()) {
      const payload = labeledPayload({
        sender: { login: 'Codertocat', id: 21031067 },
        issueNumber: issue,
        issueTitle: `Issue #${issue}: add() subtracts`,
        issueBody: 'add(2, 3) returns -1; it should return 5.',
      });
      return deliver(serve.url!, 'issues', payload, deliveryId);
    },
    comment(issue, text) {
      const maintainer = { login: 'Codertocat', id: 21031067 };
      const payload = commentPayload({
        sender: maintainer,
        commenter: maintainer,
        body: text,
        issueNumber: issue,
        issueTitle: `Issue #${issue}: add() subtracts`,
      });
      return deliver(serve.url!, 'issue_comment', payload, randomUUID());
    },
    hold(issue, always = false) {
      let open!: () => void;
      let reached!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      const reachedP = new Promise<void>((r) => (reached = r));
      holds.set(issue, { always, gate, open, reached });
      return { reached: reachedP };
    },
    release(issue) {
      holds.get(issue)?.open();
      holds.delete(issue);
    },
  };
}

async function deliver(
  serveUrl: string,
  event: string,
  payload: unknown,
  deliveryId: string,
): Promise<number> {
  const body = JSON.stringify(payload);
  const res = await fetch(`${serveUrl}/api/github/webhooks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': deliveryId,
      'x-hub-signature-256': sign(body),
    },
    body,
  });
  await res.text();
  return res.status;
}

async function dropPrefix(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } catch {
    // A Redis of the test's own is gone already.
  } finally {
    redis.disconnect();
  }
}

/** Runs each worker process made (their trajectory directories), by worker name. */
function runsOn(root: string, names: string[]): Record<string, number> {
  return Object.fromEntries(
    names.map((name) => {
      const dir = join(root, `data-${name}`, 'trajectories');
      return [name, existsSync(dir) ? readdirSync(dir).length : 0];
    }),
  );
}

async function allDone(cluster: Cluster, count: number, timeoutMs = 120_000): Promise<void> {
  await waitFor(
    async () => {
      const runs = await cluster.queue.list();
      return (
        runs.length === count && runs.every((r) => r.state !== 'queued' && r.state !== 'running')
      );
    },
    `${count} runs to finish`,
    timeoutMs,
  );
}

it('10 issues labelled at once: 10 draft PRs, each run once, spread over both workers', async () => {
  const issues = Array.from({ length: 10 }, (_, i) => i + 1);
  const cluster = await startCluster(issues);
  await Promise.all([cluster.startWorker('a'), cluster.startWorker('b')]);

  const statuses = await Promise.all(issues.map((n) => cluster.label(n, `burst-${n}`)));
  expect(statuses).toEqual(issues.map(() => 200));
  // GitHub redelivers one: nothing new.
  expect(await cluster.label(3, 'burst-3')).toBe(200);
  await allDone(cluster, 10);

  const runs = await cluster.queue.list();
  expect(
    runs
      .map((r) => [r.job.issueNumber, r.state, r.outcome, r.attempts])
      .sort((x, y) => Number(x[0]) - Number(y[0])),
  ).toEqual(issues.map((n) => [n, 'done', 'pull_request', 1]));
  expect([...cluster.prs.entries()].sort((x, y) => x[0] - y[0])).toEqual(issues.map((n) => [n, 1]));
  const spread = runsOn(cluster.root, ['a', 'b']);
  expect(spread.a! + spread.b!).toBe(10);
  expect(spread.a).toBeGreaterThan(0);
  expect(spread.b).toBeGreaterThan(0);

  // The PR's trajectory link works on serve, though a worker elsewhere made it.
  const served = await fetch(`${cluster.serveUrl}/frognano/runs/${runs[0]!.id}/trajectory.json`);
  expect(served.status).toBe(200);
  expect(JSON.stringify(await served.json())).toContain('Fixed add()');
  // So does its run page: steps and evidence from the files the worker shared.
  const page = await fetch(`${cluster.serveUrl}/frognano/runs/${runs[0]!.id}/trajectory`);
  expect(page.status).toBe(200);
  const html = await page.text();
  expect(html).toContain('Fixed add() for issue');
  expect(html).toMatch(/id="step-1"/);

  expect(cluster.fake.unmatched, 'requests no mock matched').toEqual([]);
}, 180_000);

// Every write of a burst waits for the one before it to be answered and 1 s more (3 s after a
// notifying one), about 11 writes an issue: 8 issues took 4 minutes of writes on a loaded
// 2-core machine; FROGNANO_TEST_WRITE_BURST=20 measures the larger burst (16 minutes there).
const BURST = Number(process.env.FROGNANO_TEST_WRITE_BURST ?? 4);

it(
  `${BURST} issues labelled at once on two workers: serve and both workers space their GitHub writes as one App`,
  async () => {
    const issues = Array.from({ length: BURST }, (_, i) => i + 1);
    // Tests that cost nothing: the burst is GitHub's, not the CPU's.
    const cluster = await startCluster(issues, { pacedWrites: true, test: 'exit 0' });
    await Promise.all([cluster.startWorker('a'), cluster.startWorker('b')]);

    const statuses = await Promise.all(issues.map((n) => cluster.label(n)));
    expect(statuses).toEqual(issues.map(() => 200));
    await allDone(cluster, BURST, BURST * 60_000);
    expect([...cluster.prs.entries()].sort((x, y) => x[0] - y[0])).toEqual(
      issues.map((n) => [n, 1]),
    );
    const spread = runsOn(cluster.root, ['a', 'b']);
    expect(spread.a).toBeGreaterThan(0);
    expect(spread.b).toBeGreaterThan(0);

    // Content-creating requests (token mints are the App's, not content), as GitHub saw them.
    const writes = cluster.fake.arrivals
      .filter((r) => /^(?:POST|PATCH|PUT|DELETE)$/.test(r.method) && r.path.startsWith('/repos/'))
      .map((r) => r.at)
      .sort((x, y) => x - y);
    const gaps = writes.slice(1).map((at, i) => at - writes[i]!);
    const smallest = Math.min(...gaps);
    console.log(
      `${writes.length} GitHub writes from serve and 2 workers over ${Math.round((writes.at(-1)! - writes[0]!) / 1000)} s: smallest gap ${smallest.toFixed(1)} ms (pace ${WRITE_GAP_MS} ms)`,
    );
    expect(writes.length).toBeGreaterThanOrEqual(issues.length * 3);
    // Each write leaves only once the one before it was answered and 1 s more has passed.
    expect(smallest).toBeGreaterThanOrEqual(WRITE_GAP_MS);
    expect(cluster.fake.unmatched, 'requests no mock matched').toEqual([]);
  },
  BURST * 75_000,
);

it('a worker killed mid-run: the run completes on the other, one PR, the issue told; killed twice: failed, queue not stuck', async () => {
  const cluster = await startCluster([1, 2, 3]);
  const workers = new Map<string, ChildProcess>();
  for (const name of ['a', 'b']) workers.set(name, await cluster.startWorker(name));
  const holder = async (runId: string) => {
    await waitFor(
      () =>
        ['a', 'b', 'c'].some((n) =>
          existsSync(join(cluster.root, `data-${n}`, 'trajectories', runId)),
        ),
      'a worker to take the run',
      30_000,
    );
    return ['a', 'b', 'c'].filter((n) =>
      existsSync(join(cluster.root, `data-${n}`, 'trajectories', runId)),
    );
  };
  const kill = async (name: string) => {
    const child = workers.get(name)!;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    workers.delete(name);
  };

  // Issue 1: its first model call hangs; kill whoever runs it.
  const one = cluster.hold(1);
  expect(await cluster.label(1)).toBe(200);
  await one.reached;
  const run1 = (await cluster.queue.list())[0]!;
  const [first] = await holder(run1.id);
  await kill(first!);
  cluster.release(1);
  await allDone(cluster, 1, 60_000);
  expect(await cluster.queue.get(run1.id)).toMatchObject({
    state: 'done',
    outcome: 'pull_request',
    attempts: 2,
  });
  expect(cluster.prs.get(1)).toBe(1);
  expect(cluster.gh.statusBodies.join('\n')).toContain(
    'The previous attempt was interrupted (a restart, or its worker was lost); this is the last try.',
  );
  expect(await holder(run1.id)).toHaveLength(2);

  // Issue 2: every model call hangs; kill the worker holding it, then the next one.
  workers.set('c', await cluster.startWorker('c'));
  const two = cluster.hold(2, true);
  expect(await cluster.label(2)).toBe(200);
  await two.reached;
  const run2 = (await cluster.queue.list()).find((r) => r.job.issueNumber === 2)!;
  const [firstHolder] = await holder(run2.id);
  await kill(firstHolder!);
  await waitFor(
    async () => (await cluster.queue.get(run2.id))?.attempts === 2,
    'the second attempt',
    30_000,
  );
  let secondHolder: string | undefined;
  await waitFor(
    async () => {
      secondHolder = (await holder(run2.id)).find((n) => n !== firstHolder && workers.has(n));
      return secondHolder !== undefined;
    },
    'another worker to take the run',
    30_000,
  );
  await kill(secondHolder!);
  // A fresh worker finds it lost a second time.
  workers.set('d', await cluster.startWorker('d'));
  await waitFor(
    async () => (await cluster.queue.get(run2.id))?.state === 'failed',
    'the run to fail',
    60_000,
  );
  expect(await cluster.queue.get(run2.id)).toMatchObject({
    state: 'failed',
    outcome: 'interrupted',
  });
  await waitFor(
    () => cluster.gh.statusBodies.some((b) => b.includes('so it was given up')),
    'the issue to be told',
    30_000,
  );
  expect(cluster.gh.statusBodies.at(-1)).toContain(
    'the run was interrupted 2 times: its worker was lost (a crash, a kill or a host going away), so it was given up.',
  );
  expect(cluster.prs.get(2)).toBeUndefined();
  cluster.release(2);

  // Not stuck: the next issue runs.
  expect(await cluster.label(3)).toBe(200);
  await waitFor(() => cluster.prs.get(3) === 1, 'the PR of issue 3', 60_000);
  expect(cluster.fake.unmatched, 'requests no mock matched').toEqual([]);
}, 240_000);

it('Redis killed and restarted on its AOF mid-burst: nothing lost, nothing doubled', async () => {
  const redis: OwnRedis = await startOwnRedis();
  cleanups.push(() => redis.stop());
  const issues = Array.from({ length: 8 }, (_, i) => i + 1);
  // Workers must not be taken for lost while Redis is down for a moment.
  const cluster = await startCluster(issues, { redisUrl: redis.url, lostWorkerSeconds: '10' });
  await Promise.all([cluster.startWorker('a'), cluster.startWorker('b')]);

  const first = await Promise.all(issues.slice(0, 4).map((n) => cluster.label(n, `d-${n}`)));
  expect(first).toEqual([200, 200, 200, 200]);
  await redis.restart({ crash: true, downMs: 500 });
  // Deliveries keep coming; one that got no 2xx GitHub redelivers under the same id.
  const rest = await Promise.all(issues.slice(4).map((n) => cluster.label(n, `d-${n}`)));
  for (const [i, status] of rest.entries()) {
    if (status !== 200) expect(await cluster.label(issues[4 + i]!, `d-${issues[4 + i]}`)).toBe(200);
  }
  await allDone(cluster, 8, 120_000);
  expect([...cluster.prs.entries()].sort((x, y) => x[0] - y[0])).toEqual(issues.map((n) => [n, 1]));
  expect(cluster.fake.unmatched, 'requests no mock matched').toEqual([]);
}, 240_000);

it('/frognano cancel at serve stops the run on the worker holding it, within seconds', async () => {
  const cluster = await startCluster([1]);
  await cluster.startWorker('a');
  const held = cluster.hold(1, true);
  expect(await cluster.label(1)).toBe(200);
  await held.reached;
  const [run] = await cluster.queue.list();
  expect(run?.state).toBe('running');

  expect(await cluster.comment(1, '/frognano cancel')).toBe(200);
  await waitFor(
    async () => (await cluster.queue.get(run!.id))?.state === 'cancelled',
    'the run to stop',
    30_000,
  );
  await waitFor(
    () => cluster.gh.statusBodies.some((b) => b.includes('cancelled')),
    'the issue to be told',
    10_000,
  );
  expect(cluster.prs.get(1)).toBeUndefined();
  expect(cluster.fake.unmatched, 'requests no mock matched').toEqual([]);
  cluster.release(1);
}, 120_000);
