// Throughput of 40 short scripted runs with one `frognano worker` process, then two: a `serve`
// process and the workers, each its own data directory, one Redis (BullMQ, a key prefix per
// measurement), the local sandbox, a fake GitHub on loopback behind real App auth. The model is
// the bottleneck, as on a GPU server: every call answers after 200 ms. Goal: 2 workers >= 1.7x.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import nock from 'nock';
import type { IssueJob } from '../src/github/job.js';
import { RedisQueue } from '../src/queue/redis-queue.js';
import {
  mockGitHub,
  newGitHubMock,
  OWNER,
  REPO,
  REPO_PATH,
  sign,
  startFakeGitHub,
} from '../test/github/helpers/app-harness.js';
import { testPrivateKey } from '../test/github/helpers/github.js';
import { labeledPayload } from '../test/github/helpers/payloads.js';
import { createPythonRepo } from '../test/support/python-repo.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
} from '../test/support/scripted-model-server.js';

const RUNS = 40;
const MODEL_MS = 200;
const GOAL = 1.7;
const REDIS_URL = process.env.FROGNANO_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const NODE = join(import.meta.dirname, '..', 'test', 'queue', 'helpers', 'app-node.ts');

export default async function run(): Promise<void> {
  // The harness module loads nock; nothing here may be intercepted.
  nock.restore();
  const root = mkdtempSync(join(tmpdir(), 'frognano-bench-workers-'));
  const repo = createPythonRepo(join(root, 'src'), {
    '.github/frognano.yml': 'max_steps: 6\ntest: "true"\n',
  });
  mkdirSync(join(root, 'git', OWNER), { recursive: true });
  execFileSync('git', ['clone', '-q', '--bare', repo.dir, join(root, 'git', OWNER, `${REPO}.git`)]);
  const model = await startScriptedModelServer({
    record: false,
    onExhausted: (request) =>
      (request.body?.messages ?? []).some((m) => m.role === 'tool')
        ? finalAnswer('Fixed add().', { delayMs: MODEL_MS })
        : toolCall(
            'Edit',
            { file_path: 'calc.py', old_string: 'return a - b', new_string: 'return a + b' },
            { delayMs: MODEL_MS },
          ),
  });
  const gh = newGitHubMock('fake');
  const fake = await startFakeGitHub(gh);
  mockGitHub({}, gh);
  let ids = 5000;
  const any = (
    method: 'GET' | 'POST' | 'PATCH',
    path: RegExp,
    status: number,
    reply: () => unknown,
  ) => gh.intercept({ method, path, status, persist: true, reply });
  any('GET', new RegExp(`^${REPO_PATH}/issues/\\d+/comments$`), 200, () => []);
  any('POST', new RegExp(`^${REPO_PATH}/issues/\\d+/comments$`), 201, () => ({ id: ids++ }));
  any('PATCH', new RegExp(`^${REPO_PATH}/issues/comments/\\d+$`), 200, () => ({ id: 1 }));
  any('GET', new RegExp(`^${REPO_PATH}/pulls$`), 200, () => []);
  any('POST', new RegExp(`^${REPO_PATH}/pulls$`), 201, () => {
    const number = ids++;
    return { number, html_url: `https://github.com/${OWNER}/${REPO}/pull/${number}` };
  });
  any('POST', new RegExp(`^${REPO_PATH}/pulls/\\d+/requested_reviewers$`), 201, () => ({}));

  const children: ChildProcess[] = [];
  const start = async (args: string[]): Promise<string | null> => {
    const child = spawn(process.execPath, ['--import', 'tsx', NODE, ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
      // The default lock: on a loaded machine a worker must not be thought lost mid-run.
      env: {
        ...process.env,
        FROGNANO_LOST_WORKER_SECONDS: '30',
        // The fake checks the App's JWTs against this process's key.
        TEST_APP_PRIVATE_KEY: testPrivateKey(),
      },
    });
    children.push(child);
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`${args[0]} exited with ${code}`)));
    });
    return (JSON.parse(line) as { url: string | null }).url;
  };

  const measure = async (workers: number): Promise<number> => {
    const prefix = `fnbench:${randomUUID()}`;
    const node = (mode: string, name: string) => [
      mode,
      root,
      join(root, `data-${prefix.slice(-8)}-${name}`),
      model.baseUrl,
      fake.url,
      REDIS_URL,
      prefix,
      '1',
    ];
    const view = await RedisQueue.open<IssueJob>({ url: REDIS_URL, prefix, concurrency: 1 });
    try {
      const serveUrl = await start(node('serve', 'serve'));
      await Promise.all(Array.from({ length: workers }, (_, i) => start(node('worker', `w${i}`))));
      const began = Date.now();
      await Promise.all(
        Array.from({ length: RUNS }, async (_, i) => {
          const body = JSON.stringify(
            labeledPayload({
              sender: { login: 'Codertocat', id: 21031067 },
              issueNumber: i + 1,
              issueTitle: `Issue #${i + 1}: add() subtracts`,
            }),
          );
          const res = await fetch(`${serveUrl}/api/github/webhooks`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-github-event': 'issues',
              'x-github-delivery': randomUUID(),
              'x-hub-signature-256': sign(body),
            },
            body,
          });
          await res.text();
        }),
      );
      const deadline = Date.now() + 30 * 60_000;
      for (;;) {
        const runs = await view.list();
        if (
          runs.length === RUNS &&
          runs.every((r) => r.state !== 'queued' && r.state !== 'running')
        ) {
          const failed = runs.filter((r) => r.state !== 'done');
          if (failed.length) throw new Error(`${failed.length} runs did not finish done`);
          break;
        }
        if (Date.now() > deadline) throw new Error('the runs did not finish within 30 minutes');
        await new Promise((r) => setTimeout(r, 200));
      }
      return (Date.now() - began) / 1000;
    } finally {
      for (const child of children.splice(0)) child.kill('SIGKILL');
      await view.close();
      await dropPrefix(prefix);
    }
  };

  try {
    const one = await measure(1);
    const two = await measure(2);
    const speedup = one / two;
    console.log(
      `${RUNS} short scripted runs (2 model calls of ${MODEL_MS} ms each, test command "true", so the model is the bottleneck), one serve, workers of concurrency 1, ${cpus().length} cores:`,
    );
    console.log(`  1 worker   ${one.toFixed(1).padStart(6)} s   ${(RUNS / one).toFixed(2)} runs/s`);
    console.log(`  2 workers  ${two.toFixed(1).padStart(6)} s   ${(RUNS / two).toFixed(2)} runs/s`);
    console.log(
      `  speed-up   ${speedup.toFixed(2)}x   (goal >= ${GOAL}x: ${speedup >= GOAL ? 'met' : 'NOT met'})`,
    );
  } finally {
    await model.close();
    await fake.close();
    rmSync(root, { recursive: true, force: true });
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
