// The doctor's model checks with several endpoints, on real sockets (scripted OpenAI-compatible
// servers): one line per endpoint, the context length against FROGNANO_MAX_CONTEXT_TOKENS, the
// workers' shared state in Redis, and `--probe`'s conformance of tool calls and reasoning.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { CHECKS, runChecks } from '../../src/commands/doctor.js';
import { RedisFleetStore } from '../../src/model-fleet/redis-store.js';
import { PROBE_TASK } from '../../src/model-fleet/conformance-probe.js';
import {
  finalAnswer,
  qwenXmlToolCall,
  startScriptedModelServer,
  toolCall,
  type ScriptedModelServer,
  type ScriptedModelServerOptions,
} from '../support/scripted-model-server.js';

const REDIS = process.env.FROGNANO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server(options: ScriptedModelServerOptions = {}): Promise<ScriptedModelServer> {
  const s = await startScriptedModelServer(options);
  cleanups.push(() => s.close());
  return s;
}

const checks = CHECKS.filter((c) => c.name === 'configuration' || c.name === 'model endpoint');

async function doctor(env: NodeJS.ProcessEnv, probe = false) {
  const outcomes = await runChecks({
    env: { FROGNANO_DATA_DIR: '/tmp/unused', ...env },
    cwd: process.cwd(),
    mode: 'worker',
    checks,
    probe,
  });
  return outcomes.slice(1);
}

const name = (s: ScriptedModelServer) => `127.0.0.1:${s.port}`;
/** A port nothing listens on any more. */
async function closedUrl(): Promise<string> {
  const s = await startScriptedModelServer();
  await s.close();
  return s.baseUrl;
}

describe('doctor: several model endpoints', () => {
  it('checks each one: served model, and a context length below FROGNANO_MAX_CONTEXT_TOKENS warns with both numbers and the flag', async () => {
    const a = await server();
    const b = await server({ maxModelLen: 32768 });
    const outcomes = await doctor({ FROGNANO_MODEL_URL: `${a.baseUrl},${b.baseUrl}` });
    expect(outcomes.map((o) => o.line)).toEqual([
      `✓ model endpoint ${name(a)}: ${a.baseUrl} serves microsoft/FrogNano-4B-2609`,
      `! model endpoint ${name(b)}: ${b.baseUrl} serves microsoft/FrogNano-4B-2609, but its context length (max_model_len) is 32768 tokens, below FROGNANO_MAX_CONTEXT_TOKENS 131072: long runs end in context errors → fix: start the server with --max-model-len 131072 (vLLM) or --context-length 131072 (SGLang), or set FROGNANO_MAX_CONTEXT_TOKENS=32768`,
    ]);
    expect(outcomes.some((o) => o.blocks)).toBe(false);
  });

  it('warns when one of several is down (runs use the others) and blocks when none serves', async () => {
    const a = await server();
    const down = await closedUrl();
    const one = await doctor({ FROGNANO_MODEL_URL: `${a.baseUrl},${down}` });
    const port = new URL(down).port;
    expect(one[1]!.line).toMatch(
      new RegExp(
        `^! model endpoint 127\\.0\\.0\\.1:${port}: model endpoint http://127\\.0\\.0\\.1:${port}/v1 is unreachable \\(ECONNREFUSED\\); runs use the other endpoints → fix: start an OpenAI-compatible server there first`,
      ),
    );
    expect(one.some((o) => o.blocks)).toBe(false);
    const none = await doctor({ FROGNANO_MODEL_URL: `${down},${await closedUrl()}` });
    expect(none.map((o) => o.line.slice(0, 1))).toEqual(['✗', '✗']);
    expect(none.every((o) => o.blocks)).toBe(true);
  });

  it('never shows the credentials of a URL', async () => {
    const a = await server();
    const url = a.baseUrl.replace('http://', 'http://user:hunter2-secret@');
    const outcomes = await doctor({ FROGNANO_MODEL_URL: url });
    expect(outcomes.map((o) => o.line)).toEqual([
      `✓ model endpoint: ${a.baseUrl} serves microsoft/FrogNano-4B-2609`,
    ]);
    expect(a.requests[0]!.headers.authorization).toBe(
      `Basic ${Buffer.from('user:hunter2-secret').toString('base64')}`,
    );
  });

  it('with Redis, shows the loops the workers have in flight and a down mark', async () => {
    const a = await server();
    const b = await server();
    const prefix = `frognano-test-doctor-${randomUUID().slice(0, 8)}`;
    cleanups.push(async () => {
      const redis = new Redis(REDIS);
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    });
    const store = new RedisFleetStore({ url: REDIS, prefix });
    cleanups.push(() => store.close());
    await store.tryAcquire([name(a)], 8, 'lease-1');
    await store.tryAcquire([name(a)], 8, 'lease-2');
    await store.markDown(name(b), 30_000, '500 CUDA error');
    const outcomes = await doctor({
      FROGNANO_MODEL_URL: `${a.baseUrl},${b.baseUrl}`,
      FROGNANO_REDIS_URL: REDIS,
      FROGNANO_REDIS_PREFIX: prefix,
    });
    expect(outcomes.map((o) => o.line)).toEqual([
      `✓ model endpoint ${name(a)}: ${a.baseUrl} serves microsoft/FrogNano-4B-2609; 2 of 8 loops in flight`,
      expect.stringMatching(
        new RegExp(
          `^✓ model endpoint ${name(b).replace(/\./g, '\\.')}: .* serves microsoft/FrogNano-4B-2609; 0 of 8 loops in flight; marked down by a worker for \\d+ s more \\(500 CUDA error\\), though it answers now$`,
        ),
      ),
    ]);
  });
});

describe('doctor --probe', () => {
  it('reports structured tool calls and separated reasoning', async () => {
    const a = await server({
      script: [
        toolCall('Bash', { command: 'echo frognano-probe' }, { reasoningContent: 'I run it.' }),
      ],
    });
    const outcomes = await doctor({ FROGNANO_MODEL_URL: a.baseUrl }, true);
    expect(outcomes.map((o) => o.line)).toEqual([
      `✓ model endpoint: ${a.baseUrl} serves microsoft/FrogNano-4B-2609`,
      `✓ model tool calls: ${a.baseUrl} answered with a structured tool call (Bash) in tool_calls`,
      `✓ model reasoning: ${a.baseUrl} sent its reasoning apart, in reasoning_content`,
    ]);
    // The probe is a Leaf request: the five tools, the §2 settings, one small task.
    const body = a.chatRequests[0]!.body!;
    expect(body.tools).toHaveLength(5);
    expect(body.tool_choice).toBe('auto');
    expect(body.messages?.[1]).toEqual({ role: 'user', content: PROBE_TASK });
  });

  it('says which server flag is missing when tool calls and reasoning come back as text', async () => {
    const a = await server({
      script: [
        finalAnswer(
          `<think>I should run it.</think>\n${qwenXmlToolCall('Bash', { command: 'echo frognano-probe' })}`,
        ),
      ],
    });
    const b = await server();
    const outcomes = await doctor({ FROGNANO_MODEL_URL: `${a.baseUrl},${b.baseUrl}` }, true);
    expect(outcomes.map((o) => o.line)).toEqual([
      `✓ model endpoint ${name(a)}: ${a.baseUrl} serves microsoft/FrogNano-4B-2609`,
      `! model tool calls ${name(a)}: ${a.baseUrl} wrote its tool call (Bash) as text in the message, not in tool_calls (the bot parses it, but that is not how FrogNano was evaluated) → fix: start the server with --enable-auto-tool-choice --tool-call-parser qwen3_coder (SGLang: --tool-call-parser qwen3_coder)`,
      `! model reasoning ${name(a)}: ${a.baseUrl} left its reasoning (<think>…</think>) in the message content → fix: start the server with --reasoning-parser qwen3`,
      `✓ model endpoint ${name(b)}: ${b.baseUrl} serves microsoft/FrogNano-4B-2609`,
      // b's script is empty: its 400 is the probe's failure, said as such.
      expect.stringMatching(
        /^✗ model tool calls 127\.0\.0\.1:\d+: the probe request failed \(400 scripted server: script exhausted/,
      ),
      `- model reasoning ${name(b)}: not checked (the probe request failed)`,
    ]);
  });

  it("keeps a proxy's multi-line HTML error page to one short line", async () => {
    const page = `<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n${'<p>filler of a proxy error page</p>\n'.repeat(200)}</body>\n</html>\n`;
    const a = await server({ script: [{ kind: 'error', status: 502, body: page }] });
    const outcomes = await doctor({ FROGNANO_MODEL_URL: a.baseUrl }, true);
    expect(outcomes[1]!.line).toMatch(
      /^✗ model tool calls: the probe request failed \(502 <!DOCTYPE html> <html> <head><title>502 Bad Gateway<\/title><\/head> <body> <p>filler/,
    );
    for (const o of outcomes) {
      expect(o.line).not.toContain('\n');
      expect(o.line.length).toBeLessThan(700);
    }
  });

  it('does not probe an endpoint that is down', async () => {
    const outcomes = await doctor({ FROGNANO_MODEL_URL: await closedUrl() }, true);
    expect(outcomes.map((o) => o.line.split(':')[0])).toEqual([
      '✗ model endpoint',
      '- model tool calls',
      '- model reasoning',
    ]);
  });
});

/** A server that answers GET /v1/models with `status`, `body` and `type`, as a proxy or a wrong server does. */
async function rawServer(status: number, body: string, type = 'text/html'): Promise<string> {
  const s = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': type });
    res.end(body);
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => s.close(resolve)));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1`;
}

describe('doctor: an endpoint that answers GET /models with something else', () => {
  it('an HTML 502 from a proxy: the server behind it failed, not the URL', async () => {
    const url = await rawServer(502, '<html><body><h1>502 Bad Gateway</h1></body></html>');
    const [outcome] = await doctor({ FROGNANO_MODEL_URL: url });
    expect(outcome!.line).toBe(
      `✗ model endpoint: model endpoint ${url} answered HTTP 502 to GET /models (the server, or a proxy in front of it, failed) → fix: check the server's log (it may still be loading the model), and that a proxy points at a running one`,
    );
  });

  it('a 404 or garbage JSON: the URL points at no OpenAI-compatible API, and the fix says so', async () => {
    const missing = await rawServer(404, 'not found', 'text/plain');
    const garbage = await rawServer(200, '{"data": [garb', 'application/json');
    const outcomes = await doctor({ FROGNANO_MODEL_URL: `${missing},${garbage}` });
    const fix = 'check that the URL ends in /v1 and points at an OpenAI-compatible server';
    expect(outcomes.map((o) => o.line)).toEqual([
      `✗ model endpoint ${new URL(missing).host}: model endpoint ${missing} answered HTTP 404 to GET /models (no OpenAI-compatible API at that path) → fix: ${fix}`,
      `✗ model endpoint ${new URL(garbage).host}: model endpoint ${garbage} did not answer GET /models with a model list (no OpenAI-compatible API at that path) → fix: ${fix}`,
    ]);
  });

  it('one that accepts the connection and never answers: not "start a server there"', async () => {
    const s = createServer(() => undefined);
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => {
      s.closeAllConnections();
      return new Promise((resolve) => s.close(resolve));
    });
    const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1`;
    const [outcome] = await doctor({ FROGNANO_MODEL_URL: url });
    expect(outcome!.line).toBe(
      `✗ model endpoint: model endpoint ${url} did not answer GET /models within 5 s (stuck, overloaded, or behind a firewall that drops packets) → fix: check the server's log and that its port is open from this host`,
    );
  });

  it('a port fetch refuses to open (a "bad port" such as 6000): says so, not "start a server"', async () => {
    const [outcome] = await doctor({ FROGNANO_MODEL_URL: 'http://127.0.0.1:6000/v1' });
    expect(outcome!.line).toBe(
      `✗ model endpoint: model endpoint http://127.0.0.1:6000/v1 cannot be used (Node's fetch refuses port 6000, a "bad port" of the Fetch standard, whatever listens there) → fix: serve the model on another port, such as 8000`,
    );
  });

  it('a 401 to the credentials of the URL says to check them, not an API key', async () => {
    const url = await rawServer(401, 'Unauthorized', 'text/plain');
    const [outcome] = await doctor({
      FROGNANO_MODEL_URL: url.replace('http://', 'http://ops:Sw0rdfish-9@'),
    });
    expect(outcome!.line).toBe(
      `✗ model endpoint: model endpoint ${url} refused the credentials of its URL (HTTP 401 on GET /models) → fix: correct the user:password@ in FROGNANO_MODEL_URL (a proxy's basic auth)`,
    );
  });
});
