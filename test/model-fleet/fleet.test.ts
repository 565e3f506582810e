// The model fleet on real sockets: scripted OpenAI-compatible endpoints, one killed mid-run, one
// answering 500, one too slow; loops pinned to one endpoint, moved on with their whole history
// byte for byte, and bounded per endpoint by a cap whose wait the time budget does not count.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runLeaf } from '../../src/leaf/loop.js';
import type { ChatMessage } from '../../src/leaf/messages.js';
import type { ExecOptions, Sandbox } from '../../src/leaf/sandbox.js';
import { SYSTEM_PROMPT, TOOL_SCHEMAS } from '../../src/leaf/protocol.js';
import { parseEndpoints } from '../../src/model-fleet/endpoint-url.js';
import { ModelFleet, type FleetObserver } from '../../src/model-fleet/fleet.js';
import { redactSecrets } from '../../src/redact.js';
import { createLocalSandbox } from '../../src/sandbox/local-sandbox.js';
import {
  finalAnswer,
  serverError,
  startScriptedModelServer,
  toolCall,
  type ScriptedModelServer,
  type ScriptedModelServerOptions,
} from '../support/scripted-model-server.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server(options: ScriptedModelServerOptions = {}): Promise<ScriptedModelServer> {
  const s = await startScriptedModelServer(options);
  cleanups.push(() => s.close());
  return s;
}

interface Events {
  answered: string[];
  failed: string[];
  down: string[];
}

function fleetOf(
  servers: ScriptedModelServer[],
  options: { maxLoops?: number; maxRetries?: number; timeoutMs?: number } = {},
): { fleet: ModelFleet; events: Events } {
  const events: Events = { answered: [], failed: [], down: [] };
  const observer: FleetObserver = {
    loopStarted: () => undefined,
    loopEnded: () => undefined,
    answered: (e) => events.answered.push(e),
    failed: (e, kind) => events.failed.push(`${e} ${kind}`),
    markedDown: (e) => events.down.push(e),
  };
  const fleet = new ModelFleet({
    endpoints: parseEndpoints(servers.map((s) => s.baseUrl)),
    model: { maxRetries: options.maxRetries ?? 0, timeoutMs: options.timeoutMs ?? 10_000 },
    maxLoops: options.maxLoops ?? 8,
    observer,
    waitPollMs: 200,
  });
  cleanups.push(() => fleet.close());
  return { fleet, events };
}

const nameOf = (s: ScriptedModelServer) => `127.0.0.1:${s.port}`;

function history(task: string): ChatMessage[] {
  return [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: task },
  ];
}

/** The task of each chat request a server received (loops are told apart by their task). */
const tasks = (s: ScriptedModelServer) =>
  s.chatRequests.map((r) => (r.body?.messages?.[1] as { content: string }).content);

describe('model fleet: placement', () => {
  it('spreads new loops over the endpoints by load and keeps each loop on its endpoint', async () => {
    const a = await server({ onExhausted: finalAnswer('ok') });
    const b = await server({ onExhausted: finalAnswer('ok') });
    const { fleet } = fleetOf([a, b]);
    const loops = [1, 2, 3, 4].map(() => fleet.loop());
    for (let round = 0; round < 3; round++) {
      await Promise.all(loops.map((l, i) => l.complete(history(`loop ${i}`), TOOL_SCHEMAS)));
    }
    // Two loops each, every request of a loop on the same server.
    expect(new Set(tasks(a)).size).toBe(2);
    expect(new Set(tasks(b)).size).toBe(2);
    expect(tasks(a).filter((t) => tasks(b).includes(t))).toEqual([]);
    expect(a.chatRequests).toHaveLength(6);
    expect(
      loops.map((l) => l.servedBy().map((r) => [r.requests, r.first_step, r.last_step])),
    ).toEqual(loops.map(() => [[3, 0, 2]]));
    // A finished loop's slot goes to the next one: the emptier endpoint takes it.
    await loops[0]!.release();
    const first = loops[0]!.servedBy()[0]!.endpoint;
    const next = fleet.loop();
    await next.complete(history('next'), TOOL_SCHEMAS);
    expect(next.endpoint).toBe(first);
  });

  it('records what the server said of itself: id, root, max_model_len, version', async () => {
    const a = await server({
      onExhausted: finalAnswer('ok'),
      root: '/models/frognano-4b',
      maxModelLen: 65536,
      version: '0.11.0',
    });
    const { fleet } = fleetOf([a]);
    const [check] = await fleet.check();
    expect(check).toMatchObject({ ok: true });
    const loop = fleet.loop();
    await loop.complete(history('t'), TOOL_SCHEMAS);
    expect(loop.servedBy()).toEqual([
      {
        endpoint: nameOf(a),
        first_step: 0,
        last_step: 0,
        requests: 1,
        error: null,
        model_id: 'microsoft/FrogNano-4B-2609',
        root: '/models/frognano-4b',
        max_model_len: 65536,
        owned_by: 'scripted',
        server_version: '0.11.0',
      },
    ]);
  });

  it('sends URL credentials as basic auth, never shows them, and names the endpoint without them', async () => {
    const a = await server({ onExhausted: finalAnswer('ok') });
    const url = a.baseUrl.replace('http://', 'http://proxy-user:s3cret-pass%21@');
    const [spec] = parseEndpoints([url]);
    expect(spec!.name).toBe(nameOf(a));
    expect(spec!.baseUrl).toBe(a.baseUrl);
    const fleet = new ModelFleet({ endpoints: [spec!], model: { maxRetries: 0 }, maxLoops: 1 });
    cleanups.push(() => fleet.close());
    await fleet.check();
    await fleet.loop().complete(history('t'), TOOL_SCHEMAS);
    const basic = `Basic ${Buffer.from('proxy-user:s3cret-pass!').toString('base64')}`;
    // GET /models, the version routes and the chat request alike.
    expect(a.requests.map((r) => r.path)).toContain('/v1/chat/completions');
    expect(new Set(a.requests.map((r) => r.headers.authorization))).toEqual(new Set([basic]));
    expect(a.requests.every((r) => !r.path.includes('s3cret'))).toBe(true);
    expect(redactSecrets(`failed: ${basic} s3cret-pass! ${url}`)).not.toMatch(/s3cret|cHJve/);
  });
});

describe('model fleet: failover', () => {
  it('moves a loop whose endpoint was killed to another one; every request as a single endpoint gets it', async () => {
    const script = (id: string) => [
      toolCall('Bash', { command: 'echo one > one.txt' }, { id: `${id}-1` }),
      toolCall('Bash', { command: 'echo two > two.txt' }, { id: `${id}-2` }),
      toolCall('Bash', { command: 'cat one.txt two.txt' }, { id: `${id}-3` }),
      finalAnswer('done'),
    ];
    // The reference: the same loop on one endpoint that never fails.
    const alone = await server({ script: script('c') });
    const reference = await leafRun(fleetOf([alone]).fleet);
    expect(reference.exitReason).toBe('agent');

    // a answers two steps, then dies while the third request is in flight.
    const holder: { a?: ScriptedModelServer } = {};
    const a = await server({
      script: script('c').slice(0, 2),
      onExhausted: () => {
        void holder.a!.close();
        return { kind: 'hang' };
      },
    });
    holder.a = a;
    const b = await server({ script: script('c').slice(2) });
    const { fleet, events } = fleetOf([a, b], { maxRetries: 1 });
    const moved = await leafRun(fleet);
    expect(moved.exitReason).toBe('agent');
    // The request a never answered went to b as it was, then the loop stayed on b.
    expect(a.chatRequests).toHaveLength(3);
    expect(b.chatRequests[0]!.rawBody).toBe(a.chatRequests[2]!.rawBody);
    const sent = [...a.chatRequests.slice(0, 2), ...b.chatRequests].map((r) => r.rawBody);
    // Byte for byte what the endpoint that never failed received, request by request.
    expect(sent).toEqual(alone.chatRequests.map((r) => r.rawBody));
    expect(events.down).toContain(nameOf(a));
    expect(events.failed).toContain(`${nameOf(a)} connection`);
    const served = moved.trajectory.model_endpoints!;
    expect(served.map((r) => [r.endpoint, r.first_step, r.last_step, r.requests])).toEqual([
      [nameOf(a), 0, 1, 2],
      [nameOf(b), 2, 3, 2],
    ]);
    expect(served[0]!.error).toMatch(/Connection error/);
    const marks = await fleet.downMarks();
    expect([...marks.keys()]).toEqual([nameOf(a)]);
  });

  it('moves on from an endpoint answering 500 after the retries, and marks it down', async () => {
    const a = await server({
      onExhausted: serverError(500, 'CUDA error: an illegal memory access'),
    });
    const b = await server({ onExhausted: finalAnswer('ok') });
    const { fleet, events } = fleetOf([a, b], { maxRetries: 1 });
    const loop = fleet.loop();
    const response = await loop.complete(history('t'), TOOL_SCHEMAS);
    expect(response.message.content).toBe('ok');
    // The client retried once on a; the same request then went to b.
    expect(a.chatRequests).toHaveLength(2);
    expect(b.chatRequests.map((r) => r.rawBody)).toEqual([a.chatRequests[0]!.rawBody]);
    expect(events.failed).toEqual([`${nameOf(a)} server_error`]);
    const marks = await fleet.downMarks();
    expect(marks.get(nameOf(a))?.reason).toMatch(/500.*illegal memory access/);
    // New loops keep away from it while it is marked down.
    const next = fleet.loop();
    await next.complete(history('next'), TOOL_SCHEMAS);
    expect(next.endpoint).toBe(nameOf(b));
    expect(a.chatRequests).toHaveLength(2);
  });

  it('moves on from an endpoint slower than the timeout', async () => {
    const slow = await server({ onExhausted: { ...finalAnswer('late'), delayMs: 5000 } });
    const quick = await server({ onExhausted: finalAnswer('ok') });
    const { fleet, events } = fleetOf([slow, quick], { timeoutMs: 300 });
    const response = await fleet.loop().complete(history('t'), TOOL_SCHEMAS);
    expect(response.message.content).toBe('ok');
    expect(events.failed).toEqual([`${nameOf(slow)} timeout`]);
  });

  it('moves a pinned loop at its next request once another loop found its endpoint down', async () => {
    const a = await server({ onExhausted: finalAnswer('a') });
    const b = await server({ onExhausted: finalAnswer('b') });
    const { fleet } = fleetOf([a, b]);
    const loop = fleet.loop();
    await loop.complete(history('t'), TOOL_SCHEMAS);
    const from = loop.endpoint!;
    await fleet.markDown(from, 'another loop: Connection error.');
    const second = await loop.complete(history('t'), TOOL_SCHEMAS);
    expect(loop.endpoint).not.toBe(from);
    expect(second.message.content).toBe(from === nameOf(a) ? 'b' : 'a');
    expect(loop.servedBy().map((r) => r.error)).toEqual([
      'marked down: another loop: Connection error.',
      null,
    ]);
  });

  it('fails only when no endpoint answers; with one endpoint, with its own error as before', async () => {
    const a = await server({ onExhausted: serverError(503, 'overloaded') });
    const b = await server({ onExhausted: serverError(502, 'bad gateway') });
    const both = fleetOf([a, b]).fleet;
    await expect(both.loop().complete(history('t'), TOOL_SCHEMAS)).rejects.toThrow(
      new RegExp(
        `^every model endpoint failed \\(${nameOf(a)}: 503 overloaded; ${nameOf(b)}: 502 bad gateway\\)$`,
      ),
    );
    const one = fleetOf([a]).fleet;
    await expect(one.loop().complete(history('t'), TOOL_SCHEMAS)).rejects.toThrow(
      /^503 overloaded$/,
    );
    // A request the server refuses is the same anywhere: no move, no mark.
    const c = await server({
      onExhausted: { kind: 'error', status: 400, body: { error: { message: 'bad' } } },
    });
    const d = await server({ onExhausted: finalAnswer('ok') });
    const { fleet, events } = fleetOf([c, d]);
    await expect(fleet.loop().complete(history('t'), TOOL_SCHEMAS)).rejects.toThrow(/400/);
    expect(d.chatRequests).toHaveLength(0);
    expect(events.down).toEqual([]);
  });
});

describe('model fleet: the cap', () => {
  it('makes a loop wait for a slot, says so, and its wait does not count against the time budget', async () => {
    const a = await server({ onExhausted: finalAnswer('ok') });
    const { fleet } = fleetOf([a], { maxLoops: 1 });
    const holder = fleet.loop();
    await holder.complete(history('holder'), TOOL_SCHEMAS);
    const waits: [boolean, number][] = [];
    let released: Promise<void> | undefined;
    // The holder lets go 1.3 s after the waiter starts waiting: longer than the whole budget.
    const waiter = fleet.loop({
      onWait: (waiting, ms) => {
        waits.push([waiting, ms]);
        if (waiting) {
          released = new Promise<void>((resolve) =>
            setTimeout(() => void holder.release().then(resolve), 1300),
          );
        }
      },
    });
    const result = await leafRun(fleet, { model: waiter, timeBudgetMs: 1000 });
    await released;
    expect(result.exitReason).toBe('agent');
    expect(waits[0]).toEqual([true, 0]);
    expect(waits[1]![0]).toBe(false);
    expect(waits[1]![1]).toBeGreaterThan(1000);
    expect(result.trajectory.model_wait_sec).toBeGreaterThan(1);
    // The waiter's request reached the server only once the holder's slot was free.
    expect(tasks(a)).toEqual(['holder', 'Fix it.']);
  });

  it('never lets more loops than the cap talk to one endpoint at once', async () => {
    const a = await server({ onExhausted: { ...finalAnswer('ok'), delayMs: 50 } });
    const { fleet } = fleetOf([a], { maxLoops: 3 });
    await Promise.all(
      Array.from({ length: 9 }, async (_, i) => {
        const loop = fleet.loop();
        for (let step = 0; step < 3; step++) await loop.complete(history(`l${i}`), TOOL_SCHEMAS);
        await loop.release();
      }),
    );
    expect(a.chatRequests).toHaveLength(27);
    expect(a.maxInFlight).toBe(3);
    expect((await fleet.status())[0]!.loops).toBe(0);
  });

  it('gives its slot to the next loop once it stops, before its patch is captured', async () => {
    const events: string[] = [];
    let nextAsked!: () => void;
    const asked = new Promise<void>((resolve) => (nextAsked = resolve));
    const a = await server({
      onExhausted: (request) => {
        const task = (request.body?.messages?.[1] as { content: string }).content;
        if (task === 'next') {
          events.push('the next loop asked');
          nextAsked();
        }
        return finalAnswer('ok');
      },
    });
    const { fleet } = fleetOf([a], { maxLoops: 1 });
    const stopping = fleet.loop();
    // The stopped loop's capture waits (up to 5 s) for the next loop's first request: it can
    // come only if the slot was given back when the loop stopped, not after its capture.
    const run = leafRun(fleet, {
      model: stopping,
      beforeCapture: async () => {
        await Promise.race([asked, new Promise((resolve) => setTimeout(resolve, 5000))]);
        events.push('the patch was captured');
      },
    });
    await until(() => a.chatRequests.length === 1);
    const next = fleet.loop();
    cleanups.push(() => next.release());
    const answer = next.complete(history('next'), TOOL_SCHEMAS);
    expect((await run).exitReason).toBe('agent');
    await answer;
    expect(events).toEqual(['the next loop asked', 'the patch was captured']);
  });

  it('stops waiting when the run is cancelled', async () => {
    const a = await server({ onExhausted: finalAnswer('ok') });
    const { fleet } = fleetOf([a], { maxLoops: 1 });
    await fleet.loop().complete(history('holder'), TOOL_SCHEMAS);
    const controller = new AbortController();
    const waiting = fleet.loop({ onWait: () => controller.abort() });
    await expect(waiting.complete(history('t'), TOOL_SCHEMAS, controller.signal)).rejects.toThrow();
    expect(a.chatRequests).toHaveLength(1);
  });
});

/** A short Leaf loop on a local sandbox: three Bash steps and an answer. */
async function leafRun(
  fleet: ModelFleet,
  options: {
    model?: ReturnType<ModelFleet['loop']>;
    timeBudgetMs?: number;
    /** Runs before the patch capture's first git command. */
    beforeCapture?: () => Promise<void>;
  } = {},
) {
  const dir = await mkdtemp(path.join(tmpdir(), 'fleet-loop-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  execFileSync('git', ['init', '-q', '-b', 'main', dir]);
  await writeFile(path.join(dir, 'README'), 'x\n');
  execFileSync('git', ['add', '-A'], { cwd: dir });
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@e', 'commit', '-qm', 'base'], {
    cwd: dir,
  });
  const local = await createLocalSandbox({ sourceDir: dir });
  cleanups.push(() => local.dispose());
  const { beforeCapture } = options;
  const sandbox: Sandbox = beforeCapture
    ? new Proxy(local, {
        get(target, key) {
          if (key === 'exec') {
            return async (command: string, execOptions?: ExecOptions) => {
              if (command.includes(' add -A')) await beforeCapture();
              return target.exec(command, execOptions);
            };
          }
          const value: unknown = Reflect.get(target, key, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      })
    : local;
  const model = options.model ?? fleet.loop();
  try {
    return await runLeaf({
      model,
      sandbox,
      task: 'Fix it.',
      instanceId: 'o/r#1',
      ...(options.timeBudgetMs !== undefined ? { timeBudgetMs: options.timeBudgetMs } : {}),
    });
  } finally {
    await model.release();
  }
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}
