// Endpoint errors never keep credentials, however the endpoint escapes its JSON: a gateway whose
// encoder writes `/` as `\/` and non-ASCII as `\uXXXX` (PHP's json_encode, Python's json.dumps)
// echoes the API key in a form the raw body does not show, and JSON parsing turns it back.
// `frognano solve` as a user runs it, with the only endpoint failing, so its error is the run's.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createPythonRepo, ISSUE_TEXT } from '../support/python-repo.js';
import {
  startScriptedModelServer,
  type RecordedRequest,
  type ResponseSpec,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';

const CLI = path.resolve('bin/frognano.js');
const REDIS_URL = 'redis://127.0.0.1:6379';

let work: string;
const servers: ScriptedModelServer[] = [];
beforeEach(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'frognano-endpoint-secrets-escaped-'));
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

/** A gateway's 502 echoing the request's headers, JSON-encoded PHP-style (`\/`, `\uXXXX`). */
function echoingEscaped(request: RecordedRequest): ResponseSpec {
  const echo = JSON.stringify({
    error: { message: `bad gateway; request headers ${JSON.stringify(request.headers)}` },
  });
  const escaped = echo
    .replaceAll('/', '\\/')
    .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return { kind: 'error', status: 502, body: escaped };
}

async function filesUnder(dir: string): Promise<string[]> {
  const names = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return names.filter((d) => d.isFile()).map((d) => path.join(d.parentPath, d.name));
}

it('keeps an API key out of the run when the only endpoint echoes it JSON-escaped', async () => {
  const repo = createPythonRepo(path.join(work, 'repo'));
  const gateway = await startScriptedModelServer({ onExhausted: echoingEscaped });
  servers.push(gateway);
  const apiKey = 'k/3y';
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
        FROGNANO_MODEL_URL: gateway.baseUrl,
        FROGNANO_API_KEY: apiKey,
        FROGNANO_MODEL_MAX_RETRIES: '0',
        FROGNANO_REDIS_URL: REDIS_URL,
        FROGNANO_REDIS_PREFIX: prefix,
        FROGNANO_DATA_DIR: path.join(work, 'data'),
      },
    );
    // The gateway was asked with the key and echoed it, escaped.
    expect(gateway.chatRequests[0]?.headers.authorization).toBe(`Bearer ${apiKey}`);
    const stored = [run.stderr];
    for (const file of await filesUnder(outDir)) stored.push(await readFile(file, 'utf8'));
    const mark = await redis.get(`${prefix}:model-fleet:down:127.0.0.1:${gateway.port}`);
    stored.push(String(mark));
    expect(stored.join('\n')).toContain('bad gateway');
    for (const text of stored) {
      expect(text).not.toContain(apiKey);
      expect(text).not.toContain('k\\/3y');
    }
  } finally {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
}, 180_000);
