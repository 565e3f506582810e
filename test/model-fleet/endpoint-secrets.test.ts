// Endpoint errors never keep credentials: `frognano solve` as a user runs it (a child process,
// a real Python repository, the local sandbox, Redis for the fleet's marks), with two gateways on
// real sockets that answer 502 echoing the request they got (headers, the credentials they
// decoded, the upstream URL), as some gateways do. The URL's short password, its Basic form and
// a short API key must appear in no trajectory.json, summary.md or Redis down mark.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { Trajectory } from '../../src/leaf/trajectory.js';
import { createPythonRepo, ISSUE_TEXT } from '../support/python-repo.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type RecordedRequest,
  type ResponseSpec,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';

const CLI = path.resolve('bin/frognano.js');
const REDIS_URL = 'redis://127.0.0.1:6379';

let work: string;
const servers: ScriptedModelServer[] = [];
beforeEach(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'frognano-endpoint-secrets-'));
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await rm(work, { recursive: true, force: true });
});

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 240_000 },
      (error, _stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stderr });
      },
    );
  });
}

/** A gateway's 502 that tells everything it was sent, credentials decoded. */
function echoing(port: () => number) {
  return (request: RecordedRequest): ResponseSpec => {
    const auth = String(request.headers.authorization ?? '');
    const basic = /^Basic (.+)$/.exec(auth)?.[1];
    const decoded = basic ? Buffer.from(basic, 'base64').toString('utf8') : '';
    const upstream = decoded
      ? `http://${decoded}@127.0.0.1:${port()}`
      : `http://127.0.0.1:${port()}`;
    return {
      kind: 'error',
      status: 502,
      body: {
        error: `bad gateway: upstream ${upstream}${request.path} failed; request was ${request.method} ${request.path} ${JSON.stringify(request.headers)}; basic credentials ${decoded || 'none'}; bearer ${auth.replace(/^Bearer /, '')}`,
      },
    };
  };
}

const fixingScript = (): ResponseSpec[] => [
  toolCall(
    'Edit',
    { file_path: 'calc.py', old_string: 'return a - b', new_string: 'return a + b' },
    { id: 'c1' },
  ),
  finalAnswer('Fixed add().'),
];

it('keeps the URL password, its Basic form and the API key out of every stored endpoint error', async () => {
  const repo = createPythonRepo(path.join(work, 'repo'));
  const holder: { a?: ScriptedModelServer; b?: ScriptedModelServer } = {};
  const a = await startScriptedModelServer({ onExhausted: echoing(() => holder.a!.port) });
  const b = await startScriptedModelServer({ onExhausted: echoing(() => holder.b!.port) });
  holder.a = a;
  holder.b = b;
  const c = await startScriptedModelServer({ script: fixingScript() });
  servers.push(a, b, c);
  const password = 'pw';
  const apiKey = 'k3y';
  const basic = Buffer.from(`user:${password}`).toString('base64');
  // a is behind a gateway with basic auth, b is asked with the API key: both echo their request.
  const urls = [a.baseUrl.replace('http://', `http://user:${password}@`), b.baseUrl, c.baseUrl];
  const prefix = `frognano-test-secrets-${randomUUID()}`;
  const outDir = path.join(work, 'out');
  const redis = new Redis(REDIS_URL);
  try {
    const run = await runCli(
      [
        'solve',
        ...['--repo', repo.dir, '--issue', ISSUE_TEXT, '--sandbox', 'local', '--out', outDir],
      ],
      {
        FROGNANO_MODEL_URL: urls.join(','),
        FROGNANO_API_KEY: apiKey,
        FROGNANO_MODEL_MAX_RETRIES: '0',
        FROGNANO_REDIS_URL: REDIS_URL,
        FROGNANO_REDIS_PREFIX: prefix,
        FROGNANO_DATA_DIR: path.join(work, 'data'),
      },
    );
    expect(run.code, run.stderr).toBe(0);
    // Both gateways were asked, with the credentials, and echoed them.
    expect(a.chatRequests[0]?.headers.authorization).toBe(`Basic ${basic}`);
    expect(b.chatRequests[0]?.headers.authorization).toBe(`Bearer ${apiKey}`);

    const trajectory = Trajectory.parse(
      JSON.parse(await readFile(path.join(outDir, 'trajectory.json'), 'utf8')),
    );
    const errors = trajectory.model_endpoints!.map((r) => r.error);
    expect(errors.slice(0, 2)).toEqual([
      expect.stringContaining('bad gateway: upstream http://'),
      expect.stringContaining('bad gateway: upstream http://'),
    ]);
    const summary = await readFile(path.join(outDir, 'summary.md'), 'utf8');
    const servedSection = summary.slice(summary.indexOf('## Model servers'));
    expect(servedSection).toContain('the run left it: `502 bad gateway');
    const marks = await redis.mget(
      [a, b].map((s) => `${prefix}:model-fleet:down:127.0.0.1:${s.port}`),
    );
    expect(marks.every((m) => m !== null && m.includes('bad gateway'))).toBe(true);

    const stored = [...errors.map(String), servedSection, ...marks.map(String), run.stderr];
    for (const text of stored) {
      expect(text).not.toMatch(new RegExp(`\\b${password}\\b`));
      expect(text).not.toContain(basic);
      expect(text).not.toContain(apiKey);
    }
    // What was redacted says so, and the rest of the echo is kept.
    expect(errors[0]).toContain(`upstream http://[REDACTED]@127.0.0.1:${a.port}`);
    expect(errors[1]).toContain('"authorization":"Bearer [REDACTED]"');
  } finally {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
}, 180_000);
