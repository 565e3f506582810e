// /metrics on real sockets: the App's server after a labelled-issue run (real pipeline, local
// sandbox, scripted model, strict GitHub mocks), and `frognano worker` as its own process.
import { spawn } from 'node:child_process';
import { startFakeGitHubApp } from '../commands/helpers/fake-github-app.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMetrics, startMetricsServer } from '../../src/metrics/index.js';
import { finalAnswer, toolCall, type ScriptStep } from '../support/scripted-model-server.js';
import {
  mockBotIdentity,
  mockGitHub,
  mockPullRequest,
  mockStatusComment,
  startHarness,
  waitFor,
  type Harness,
} from '../github/helpers/app-harness.js';
import { labeledPayload } from '../github/helpers/payloads.js';
import { useStrictNock } from '../github/helpers/strict-nock.js';
import { parseExposition, sampleValue, scrape } from './prom-text.js';

useStrictNock();

let harness: Harness | undefined;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
  // Last in, first out: what was started later depends on what was started before it.
  for (const c of cleanups.splice(0).reverse()) await c();
});

const maintainer = { login: 'Codertocat', id: 21031067 };

const FROGNANO_METRICS: Record<string, string> = {
  frognano_queue_runs: 'gauge',
  frognano_runs_running: 'gauge',
  frognano_runs_finished_total: 'counter',
  frognano_run_duration_seconds: 'histogram',
  frognano_run_phase_duration_seconds: 'histogram',
  frognano_model_tokens_total: 'counter',
  frognano_model_requests_total: 'counter',
  frognano_webhook_deliveries_total: 'counter',
  frognano_sandbox_starts_total: 'counter',
};

describe('/metrics on the App server', () => {
  it('shows a labelled-issue run: deliveries, queue, run outcome, phases, tokens, sandbox', async () => {
    let reachedModel!: () => void;
    const reached = new Promise<void>((r) => (reachedModel = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const script: ScriptStep[] = [
      async () => {
        reachedModel();
        await released;
        return toolCall(
          'Edit',
          { file_path: 'calc.py', old_string: 'return a - b', new_string: 'return a + b' },
          { usage: { prompt_tokens: 1200, completion_tokens: 40 } },
        );
      },
      finalAnswer('Fixed add() in calc.py.', {
        usage: { prompt_tokens: 1300, completion_tokens: 25 },
      }),
    ];
    const gh = mockGitHub();
    mockStatusComment(gh);
    mockBotIdentity(gh);
    mockPullRequest(gh, 1, 7, () => undefined);
    harness = await startHarness({ script });

    const before = await scrape(harness.url);
    expect(before.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
    for (const [name, type] of Object.entries(FROGNANO_METRICS)) {
      expect(before.exposition.type.get(name), name).toBe(type);
      expect(before.exposition.help.get(name), name).toMatch(/\w{3,}/);
    }
    // The process's own metrics come along.
    expect(sampleValue(before.exposition, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(before.exposition.type.get('nodejs_eventloop_lag_seconds')).toBe('gauge');

    const other = labeledPayload({ sender: maintainer, label: 'bug' });
    expect(await harness.deliver('issues', other, 'm-ignored')).toBe(200);
    const payload = labeledPayload({ sender: maintainer });
    expect(await harness.deliver('issues', payload, 'm-1')).toBe(200);
    expect(await harness.deliver('issues', payload, 'm-1')).toBe(200);
    await harness.app.intake!.idle();
    await reached;

    // The run waits on the model: it shows as running, in the queue and in this process.
    const during = (await scrape(harness.url)).exposition;
    expect(sampleValue(during, 'frognano_queue_runs', { state: 'running' })).toBe(1);
    expect(sampleValue(during, 'frognano_queue_runs', { state: 'queued' })).toBe(0);
    expect(sampleValue(during, 'frognano_runs_running')).toBe(1);
    expect(sampleValue(during, 'frognano_runs_finished_total')).toBeUndefined();

    release();
    await harness.app.workers!.idle();
    const [run] = await harness.app.queue!.list();
    expect(run).toMatchObject({ state: 'done', outcome: 'pull_request' });

    const after = (await scrape(harness.url)).exposition;
    const value = (name: string, labels?: Record<string, string>) =>
      sampleValue(after, name, labels);
    expect(value('frognano_webhook_deliveries_total', { decision: 'ignored' })).toBe(1);
    expect(
      value('frognano_webhook_deliveries_total', { decision: 'accepted', trigger: 'run' }),
    ).toBe(1);
    expect(
      value('frognano_webhook_deliveries_total', { decision: 'duplicate', trigger: 'run' }),
    ).toBe(1);
    expect(value('frognano_queue_runs', { state: 'running' })).toBe(0);
    expect(value('frognano_queue_runs', { state: 'queued' })).toBe(0);
    expect(value('frognano_runs_running')).toBe(0);
    expect(value('frognano_runs_finished_total', { state: 'done', outcome: 'pull_request' })).toBe(
      1,
    );
    expect(value('frognano_run_duration_seconds_count', { state: 'done' })).toBe(1);
    expect(value('frognano_run_duration_seconds_sum', { state: 'done' })).toBeGreaterThan(0);
    expect(value('frognano_run_duration_seconds_bucket', { state: 'done', le: '+Inf' })).toBe(1);
    // Every phase the pipeline went through was observed once; the agent phase held the gate.
    const phases = after.samples
      .filter((s) => s.name === 'frognano_run_phase_duration_seconds_count')
      .map((s) => s.labels.phase as string);
    expect(phases).toEqual([
      'clone',
      'config',
      'sandbox',
      'verify-before',
      'agent',
      'verify-after',
      'policy',
      'cleanup',
    ]);
    for (const phase of phases) {
      expect(value('frognano_run_phase_duration_seconds_count', { phase }), phase).toBe(1);
    }
    expect(value('frognano_run_phase_duration_seconds_sum', { phase: 'agent' })).toBeGreaterThan(0);
    expect(value('frognano_model_tokens_total', { kind: 'prompt' })).toBe(2500);
    expect(value('frognano_model_tokens_total', { kind: 'completion' })).toBe(65);
    expect(value('frognano_model_requests_total')).toBe(harness.model!.chatRequests.length);
    expect(value('frognano_model_requests_total')).toBe(2);
    expect(value('frognano_sandbox_starts_total', { kind: 'local', snapshot: 'miss' })).toBe(1);
  }, 90_000);
});

describe('a run stopped by a shutdown', () => {
  it('is counted finished as interrupted, and the closed queue drops out of the page', async () => {
    let reachedModel!: () => void;
    const reached = new Promise<void>((r) => (reachedModel = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const gh = mockGitHub();
    mockStatusComment(gh);
    harness = await startHarness({
      script: [
        async () => {
          reachedModel();
          await released;
          return finalAnswer('Nothing to change.');
        },
      ],
    });
    expect(await harness.deliver('issues', labeledPayload({ sender: maintainer }), 'm-stop')).toBe(
      200,
    );
    await harness.app.intake!.idle();
    await reached;
    const metrics = harness.app.metrics!;
    const stopping = harness;
    harness = undefined;
    await stopping.stop();
    release();

    const page = parseExposition(await metrics.scrape());
    expect(
      sampleValue(page, 'frognano_runs_finished_total', {
        state: 'interrupted',
        outcome: 'interrupted',
      }),
    ).toBe(1);
    expect(sampleValue(page, 'frognano_runs_running')).toBe(0);
    expect(sampleValue(page, 'frognano_queue_runs', { state: 'running' })).toBeUndefined();
    expect(gh.statusBodies.at(-1)).toContain('interrupted');
  }, 90_000);
});

describe('frognano serve + frognano worker: each its own /metrics', () => {
  it('the server counts the delivery, the worker the run, both see the shared queue', async () => {
    const serve = await startHarness({
      mode: 'serve',
      script: [
        finalAnswer('Nothing to change.', { usage: { prompt_tokens: 90, completion_tokens: 7 } }),
      ],
    });
    cleanups.push(() => serve.stop());
    const gh = mockGitHub();
    mockStatusComment(gh);
    const worker = await startHarness({
      mode: 'worker',
      root: serve.root,
      dataDir: serve.dataDir,
      model: serve.model,
    });
    cleanups.push(() => worker.app.stop());
    const workerMetrics = await startMetricsServer(worker.app.metrics!, {
      port: 0,
      host: '127.0.0.1',
    });
    cleanups.push(() => workerMetrics.close());

    expect(await serve.deliver('issues', labeledPayload({ sender: maintainer }), 'split-m')).toBe(
      200,
    );
    await serve.app.intake!.idle();
    await waitFor(
      async () => (await worker.app.queue!.list())[0]?.state === 'done',
      'the worker to finish',
    );

    const atServe = (await scrape(serve.url)).exposition;
    const atWorker = (await scrape(workerMetrics.url)).exposition;
    expect(
      sampleValue(atServe, 'frognano_webhook_deliveries_total', { decision: 'accepted' }),
    ).toBe(1);
    expect(sampleValue(atWorker, 'frognano_webhook_deliveries_total')).toBeUndefined();
    expect(sampleValue(atServe, 'frognano_runs_finished_total')).toBeUndefined();
    expect(
      sampleValue(atWorker, 'frognano_runs_finished_total', {
        state: 'done',
        outcome: 'no_change',
      }),
    ).toBe(1);
    expect(sampleValue(atWorker, 'frognano_model_tokens_total', { kind: 'prompt' })).toBe(90);
    for (const page of [atServe, atWorker]) {
      expect(sampleValue(page, 'frognano_queue_runs', { state: 'queued' })).toBe(0);
      expect(sampleValue(page, 'frognano_queue_runs', { state: 'running' })).toBe(0);
    }
  }, 90_000);
});

describe('the metrics registry', () => {
  it('reads the queue depth at scrape time, and leaves it out while the queue cannot answer', async () => {
    let depth: { queued: number; running: number } | Error = { queued: 3, running: 2 };
    const metrics = createMetrics({
      queueDepth: async () => {
        await Promise.resolve();
        if (depth instanceof Error) throw depth;
        return depth;
      },
    });
    const server = await startMetricsServer(metrics, { port: 0, host: '127.0.0.1' });
    cleanups.push(() => server.close());
    let page = (await scrape(server.url)).exposition;
    expect(sampleValue(page, 'frognano_queue_runs', { state: 'queued' })).toBe(3);
    expect(sampleValue(page, 'frognano_queue_runs', { state: 'running' })).toBe(2);
    depth = { queued: 0, running: 1 };
    page = (await scrape(server.url)).exposition;
    expect(sampleValue(page, 'frognano_queue_runs', { state: 'queued' })).toBe(0);
    depth = new Error('the database connection is not open');
    page = (await scrape(server.url)).exposition;
    expect(sampleValue(page, 'frognano_queue_runs', { state: 'queued' })).toBeUndefined();
    expect(sampleValue(page, 'frognano_runs_running')).toBe(0);

    expect(await (await fetch(`${server.url}/ping`)).text()).toBe('PONG');
    expect((await fetch(`${server.url}/nothing`)).status).toBe(404);
    expect((await fetch(`${server.url}/metrics`, { method: 'POST' })).status).toBe(404);
  });

  it('keeps two Apps in one process apart (each its own counters)', async () => {
    const a = createMetrics();
    const b = createMetrics();
    a.webhookDeliveries.inc({ decision: 'accepted', trigger: 'run' });
    const pageB = parseExposition(await b.scrape());
    const pageA = parseExposition(await a.scrape());
    expect(sampleValue(pageA, 'frognano_webhook_deliveries_total')).toBe(1);
    expect(sampleValue(pageB, 'frognano_webhook_deliveries_total')).toBeUndefined();
    // No queue given: no queue gauge rather than zeros that would look real.
    expect(pageA.type.has('frognano_queue_runs')).toBe(false);
  });

  it('names the variable when the port is taken', async () => {
    const metrics = createMetrics();
    const first = await startMetricsServer(metrics, { port: 0, host: '127.0.0.1' });
    cleanups.push(() => first.close());
    const port = Number(new URL(first.url).port);
    await expect(startMetricsServer(metrics, { port, host: '127.0.0.1' })).rejects.toThrow(
      /EADDRINUSE.*FROGNANO_METRICS_PORT/,
    );
  });
});

const CLI = resolve('bin/frognano.js');

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** `frognano worker` as a process: credentials, a fresh data dir, the local sandbox. */
async function spawnWorker(metricsPort: number) {
  // The worker's start-up checks ask GitHub for the App (GET /app with its JWT).
  const github = await startFakeGitHubApp();
  cleanups.push(() => github.close());
  const dir = mkdtempSync(join(tmpdir(), 'frognano-worker-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const child = spawn(process.execPath, [CLI, 'worker'], {
    cwd: dir,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      APP_ID: '1',
      PRIVATE_KEY: github.privateKey,
      WEBHOOK_SECRET: 'unused',
      GITHUB_API_URL: github.url,
      HOST: '127.0.0.1',
      FROGNANO_DATA_DIR: join(dir, 'data'),
      FROGNANO_SANDBOX: 'local',
      FROGNANO_METRICS_PORT: String(metricsPort),
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, exited, output: () => output };
}

describe('frognano worker (a process)', () => {
  it('stays up, serves /metrics and /ping on FROGNANO_METRICS_PORT, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const worker = await spawnWorker(port);
    await waitFor(
      () => worker.output().includes('frognano-bot started'),
      'the worker to start',
      60_000,
    );
    expect(worker.output()).toContain(`http://127.0.0.1:${port}`);
    await new Promise((r) => setTimeout(r, 3000));
    expect(worker.child.exitCode, worker.output()).toBeNull();

    const { exposition } = await scrape(`http://127.0.0.1:${port}`);
    expect(sampleValue(exposition, 'frognano_runs_running')).toBe(0);
    expect(sampleValue(exposition, 'frognano_queue_runs', { state: 'queued' })).toBe(0);
    expect(exposition.type.get('frognano_runs_finished_total')).toBe('counter');
    expect(sampleValue(exposition, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(await (await fetch(`http://127.0.0.1:${port}/ping`)).text()).toBe('PONG');

    worker.child.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 0, signal: null });
  }, 90_000);

  it('stays up with the metrics server off (FROGNANO_METRICS_PORT=0) until SIGTERM', async () => {
    const worker = await spawnWorker(0);
    await waitFor(
      () => worker.output().includes('frognano-bot started'),
      'the worker to start',
      60_000,
    );
    await new Promise((r) => setTimeout(r, 3000));
    expect(worker.child.exitCode, worker.output()).toBeNull();
    expect(worker.output()).not.toContain('"metrics"');
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 0, signal: null });
  }, 90_000);
});
