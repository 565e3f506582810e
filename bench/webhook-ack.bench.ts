// Webhook acknowledgement under load: the App's real HTTP server (Probot, signature
// verification, filtering, the SQLite inbox) answering `/frognano retry` deliveries while 8 runs
// are in flight on the real pipeline (local sandbox, scripted model answering every 300 ms with a
// CPU-bound shell command). GitHub's API is a fake on loopback; throttling and retries stay on,
// as in production. Baseline in the same run: a bare node:http server that reads the body and
// answers 200 - the floor of HTTP on this machine.
// Targets: p99 acknowledgement at most 200 ms; at least 100 deliveries/s sustained. Measured
// with the embedded SQLite queue, then with BullMQ on Redis (a key prefix of its own).
import { execFileSync } from 'node:child_process';
import { createHmac, generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { Redis } from 'ioredis';
import pino from 'pino';
import { startApp } from '../src/app.js';
import { runPipeline } from '../src/runner/run.js';
import { createPythonRepo } from '../test/support/python-repo.js';
import { startScriptedModelServer, toolCall } from '../test/support/scripted-model-server.js';

const RUNS_IN_FLIGHT = 8;
const LATENCY_RATE_PER_SEC = 50;
const LATENCY_SECONDS = 4;
const THROUGHPUT_CONCURRENCY = 8;
const THROUGHPUT_SECONDS = 4;
const TARGET_P99_MS = 200;
const TARGET_PER_SEC = 100;
const SECRET = 'bench-secret';

interface Delivery {
  body: string;
  signature: string;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** A minimal GitHub REST API on loopback: everything the App calls, answered at once. */
async function fakeGitHub(): Promise<{
  url: string;
  requests: () => number;
  close: () => Promise<void>;
}> {
  let count = 0;
  let nextComment = 5000;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    count++;
    req.resume();
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      const json = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (/\/access_tokens$/.test(path)) {
        return json(201, {
          token: `ghs_${randomUUID().replace(/-/g, '')}`,
          expires_at: new Date(Date.now() + 3600_000).toISOString(),
          permissions: {},
        });
      }
      if (/\/permission$/.test(path)) return json(200, { permission: 'write', role_name: 'write' });
      if (/\/reactions$/.test(path)) return json(201, { id: 1, content: 'eyes' });
      if (/\/comments$/.test(path) && req.method === 'GET') return json(200, []);
      if (/\/comments/.test(path))
        return json(req.method === 'POST' ? 201 : 200, { id: nextComment++ });
      return json(404, { message: 'Not Found' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => count,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

function commentDelivery(issue: number): Delivery {
  const payload = {
    action: 'created',
    issue: { number: issue, title: `Issue ${issue}`, body: 'b', state: 'open', locked: false },
    comment: {
      id: 100_000 + issue,
      body: '/frognano retry',
      user: { login: 'maintainer', id: 7, type: 'User' },
    },
    repository: {
      name: 'calc',
      full_name: 'bench/calc',
      owner: { login: 'bench' },
      default_branch: 'main',
    },
    sender: { login: 'maintainer', id: 7, type: 'User' },
    installation: { id: issue },
  };
  const body = JSON.stringify(payload);
  return { body, signature: `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}` };
}

// The load generator runs in a worker thread: its own event loop, so what is measured is the
// server's answer time, not the client waiting behind the pipelines on the main thread.
const CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const { randomUUID } = require('node:crypto');
async function post(url, d, event) {
  const started = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json',
    'x-github-event': event, 'x-github-delivery': randomUUID(), 'x-hub-signature-256': d.signature }, body: d.body });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error('delivery answered ' + res.status);
  return performance.now() - started;
}
async function openLoop({ urls, deliveries, rate, seconds, event }) {
  const total = rate * seconds, lat = urls.map(() => []), start = performance.now();
  for (let i = 0; i < total; i++) {
    const wait = start + (i * 1000) / rate - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    urls.forEach((url, u) => lat[u].push(post(url, deliveries[i % deliveries.length], event)));
  }
  return Promise.all(lat.map(async (l) => (await Promise.all(l)).sort((a, b) => a - b)));
}
async function closedLoop({ url, deliveries, concurrency, seconds, event }) {
  const end = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(Array.from({ length: concurrency }, async (_, c) => {
    for (let i = c; performance.now() < end; i += concurrency) { await post(url, deliveries[i % deliveries.length], event); done++; }
  }));
  return done / seconds;
}
const job = workerData;
(job.kind === 'open' ? openLoop(job) : job.kind === 'closed' ? closedLoop(job) : Promise.all(job.deliveries.map((d) => post(job.url, d, job.event))))
  .then((r) => parentPort.postMessage({ ok: r }), (e) => parentPort.postMessage({ error: String(e) }));
`;

function inWorker<T>(job: Record<string, unknown>): Promise<T> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(CLIENT, { eval: true, workerData: job });
    worker.once('message', (m: { ok?: T; error?: string }) => {
      void worker.terminate();
      if (m.error !== undefined) reject(new Error(m.error));
      else resolve(m.ok as T);
    });
    worker.once('error', reject);
  });
}

/**
 * Open loop: `rate` deliveries per second to each URL, interleaved so the App and the baseline
 * see the same machine load at the same moments; returns each URL's sorted latencies.
 */
function openLoop(
  urls: string[],
  deliveries: Delivery[],
  rate: number,
  seconds: number,
): Promise<number[][]> {
  return inWorker({ kind: 'open', urls, deliveries, rate, seconds, event: 'issue_comment' });
}

/** Closed loop: `concurrency` clients back to back for `seconds`; returns deliveries/s. */
function closedLoop(
  url: string,
  deliveries: Delivery[],
  concurrency: number,
  seconds: number,
): Promise<number> {
  return inWorker({
    kind: 'closed',
    url,
    deliveries,
    concurrency,
    seconds,
    event: 'issue_comment',
  });
}

function postAll(url: string, deliveries: Delivery[], event: string): Promise<number[]> {
  return inWorker({ kind: 'each', url, deliveries, event });
}

async function baselineServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api/github/webhooks`,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

const REDIS_URL = process.env.FROGNANO_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Embedded (SQLite) first, then the same with the queue on Redis (BullMQ). */
export default async function run(): Promise<void> {
  console.log('-- queue: SQLite (embedded)');
  await runOn('sqlite');
  console.log(`\n-- queue: BullMQ on Redis (${REDIS_URL})`);
  await runOn('bullmq');
}

async function runOn(backend: 'sqlite' | 'bullmq'): Promise<void> {
  const prefix = `fnbench:${randomUUID()}`;
  const root = mkdtempSync(join(tmpdir(), 'frognano-bench-ack-'));
  const log = pino({ level: 'silent' });
  const github = await fakeGitHub();
  const python = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], {
    encoding: 'utf8',
  }).trim();
  // Two loads for the 8 runs: `waiting` - model turns of 2 s and trivial commands (the usual
  // state: the GPU thinks); `busy` - model turns of 300 ms, each asking for a CPU-bound command
  // (the worst case on 2 cores).
  let load: 'waiting' | 'busy' = 'waiting';
  const model = await startScriptedModelServer({
    record: false,
    onExhausted: () =>
      load === 'busy'
        ? toolCall(
            'Bash',
            { command: `${python} -c "sum(i*i for i in range(300000))"` },
            { delayMs: 300 },
          )
        : toolCall('Bash', { command: 'true' }, { delayMs: 2000 }),
  });
  const repo = createPythonRepo(join(root, 'src'), { '.github/frognano.yml': 'max_steps: 150\n' });
  mkdirSync(join(root, 'git', 'bench'), { recursive: true });
  execFileSync('git', ['clone', '-q', '--bare', repo.dir, join(root, 'git', 'bench', 'calc.git')]);
  const dataDir = join(root, 'data');
  const localTemp = join(root, 'sandboxes');
  mkdirSync(localTemp);
  const privateKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
    type: 'pkcs1',
    format: 'pem',
  }) as string;

  const baseline = await baselineServer();
  const app = await startApp(
    {
      log,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        APP_ID: '1',
        PRIVATE_KEY: privateKey,
        WEBHOOK_SECRET: SECRET,
        PORT: '0',
        HOST: '127.0.0.1',
        GITHUB_API_URL: github.url,
        FROGNANO_GIT_URL: `file://${join(root, 'git')}`,
        FROGNANO_DATA_DIR: dataDir,
        FROGNANO_SANDBOX: 'local',
        FROGNANO_CONCURRENCY: String(RUNS_IN_FLIGHT),
        FROGNANO_BOT_NAME: 'frognano[bot]',
        FROGNANO_BOT_EMAIL: '1+frognano[bot]@users.noreply.github.com',
        LOG_LEVEL: 'silent',
        ...(backend === 'bullmq'
          ? { FROGNANO_REDIS_URL: REDIS_URL, FROGNANO_REDIS_PREFIX: prefix }
          : {}),
      },
    },
    {
      runPipeline: (request) =>
        runPipeline(request, {
          modelConfig: { baseUrl: model.baseUrl, maxRetries: 0 },
          dataDir,
          localTempRoot: localTemp,
          logger: log,
          handleSignals: false,
        }),
      reapOrphans: async () => undefined,
    },
  );
  const url = `${app.url}/api/github/webhooks`;
  try {
    // 8 labelled issues, one installation each (throttling is per installation), all running.
    const labels = Array.from({ length: RUNS_IN_FLIGHT }, (_, i) => {
      const labeled = JSON.parse(commentDelivery(i + 1).body) as Record<string, unknown>;
      delete labeled.comment;
      labeled.action = 'labeled';
      labeled.label = { name: 'frognano' };
      const body = JSON.stringify(labeled);
      return {
        body,
        signature: `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`,
      };
    });
    await postAll(url, labels, 'issues');
    const deadline = Date.now() + 60_000;
    while (((await app.queue?.list('running'))?.length ?? 0) < RUNS_IN_FLIGHT) {
      if (Date.now() > deadline) throw new Error('the 8 runs did not start within 60 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 1000)); // let them reach the agent loop

    // `/frognano retry` on the busy issues: verified, recorded, answered - intake does the rest.
    const deliveries = Array.from({ length: RUNS_IN_FLIGHT }, (_, i) => commentDelivery(i + 1));
    await closedLoop(url, deliveries, 2, 0.5); // warm-up
    await closedLoop(baseline.url, deliveries, 2, 0.5);

    const fmt = (n: number) => n.toFixed(1).padStart(7);
    for (const scenario of ['waiting', 'busy'] as const) {
      load = scenario;
      await new Promise((r) => setTimeout(r, 2500)); // every run is on the new load by now
      const loopDelay = monitorEventLoopDelay({ resolution: 10 });
      loopDelay.enable();
      const [appLat = [], baseLat = []] = await openLoop(
        [url, baseline.url],
        deliveries,
        LATENCY_RATE_PER_SEC,
        LATENCY_SECONDS,
      );
      loopDelay.disable();
      const running = (await app.queue?.list('running'))?.length ?? 0;
      const baseRate = await closedLoop(
        baseline.url,
        deliveries,
        THROUGHPUT_CONCURRENCY,
        THROUGHPUT_SECONDS,
      );
      const appRate = await closedLoop(url, deliveries, THROUGHPUT_CONCURRENCY, THROUGHPUT_SECONDS);
      const p50 = percentile(appLat, 50);
      const p99 = percentile(appLat, 99);
      console.log(
        `-- ${running} runs in flight, ${scenario === 'waiting' ? 'waiting on the model (2 s turns, trivial commands)' : 'busy (300 ms turns, each a CPU-bound command)'}; load average ${loadavg()[0]?.toFixed(2)} on ${cpus().length} cores`,
      );
      console.log(
        `ack latency, ${LATENCY_RATE_PER_SEC}/s for ${LATENCY_SECONDS} s (${appLat.length} deliveries each, interleaved with the baseline):`,
      );
      console.log(
        `  app       p50 ${fmt(p50)} ms   p99 ${fmt(p99)} ms   (target p99 <= ${TARGET_P99_MS} ms: ${p99 <= TARGET_P99_MS ? 'met' : 'NOT met'})`,
      );
      console.log(
        `  baseline  p50 ${fmt(percentile(baseLat, 50))} ms   p99 ${fmt(percentile(baseLat, 99))} ms   (bare node:http in the same process)`,
      );
      console.log(
        `  ratio     p50 ${(p50 / percentile(baseLat, 50)).toFixed(1)}x   p99 ${(p99 / percentile(baseLat, 99)).toFixed(1)}x;  main event loop delay p50 ${(loopDelay.percentile(50) / 1e6).toFixed(1)} ms, p99 ${(loopDelay.percentile(99) / 1e6).toFixed(1)} ms`,
      );
      console.log(
        `sustained deliveries, ${THROUGHPUT_CONCURRENCY} clients for ${THROUGHPUT_SECONDS} s:`,
      );
      console.log(
        `  app       ${fmt(appRate)} /s   (target >= ${TARGET_PER_SEC}/s: ${appRate >= TARGET_PER_SEC ? 'met' : 'NOT met'});  baseline ${fmt(baseRate)} /s;  ratio ${(appRate / baseRate).toFixed(2)}x`,
      );
    }
    console.log(
      `deliveries waiting for intake at the end: ${(await app.queue?.pendingDeliveries())?.length ?? 0} (durable; handled after the ack)`,
    );
    console.log(`  fake GitHub API requests made meanwhile: ${github.requests()}`);
  } finally {
    await app.stop();
    await baseline.close();
    await model.close();
    await github.close();
    rmSync(root, { recursive: true, force: true });
    if (backend === 'bullmq') await dropPrefix(prefix);
  }
}

async function dropPrefix(prefix: string): Promise<void> {
  const client = new Redis(REDIS_URL);
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await client.del(...keys);
  } while (cursor !== '0');
  client.disconnect();
}
