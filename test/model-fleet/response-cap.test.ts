// One huge answer must not exhaust memory: a gateway-like endpoint on a real socket streams a
// 450 MB body (a completion, an error, a model list) and the client stops reading at the cap,
// fails that request in one line and, in a fleet, moves the loop to another endpoint. What is
// asserted is what the server managed to send before the client closed the socket.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_MODEL_RESPONSE_BYTES } from '../../src/leaf/model-fetch.js';
import { createOpenAIModel, inspectModelEndpoint } from '../../src/leaf/openai-model.js';
import { SYSTEM_PROMPT, TOOL_SCHEMAS } from '../../src/leaf/protocol.js';
import { endpointFailureKind } from '../../src/model-fleet/endpoint-failure.js';
import { parseEndpoints } from '../../src/model-fleet/endpoint-url.js';
import { ModelFleet } from '../../src/model-fleet/fleet.js';
import { finalAnswer, startScriptedModelServer } from '../support/scripted-model-server.js';

const HUGE = 450 * 1024 * 1024;
const CHUNK = Buffer.alloc(256 * 1024, 'x');
// The cap plus what socket buffers on both sides hold: far below what the server would send.
const SENT_BOUND = MAX_MODEL_RESPONSE_BYTES + 32 * 1024 * 1024;
const CAP_MESSAGE = /exceeded the 8 MiB response cap/;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface HugeServer {
  baseUrl: string;
  name: string;
  /** Requests per path. */
  requests: string[];
  /** Resolves with the bytes written once the last streaming answer has ended. */
  sent(): Promise<number>;
}

/** Answers `path` with HUGE bytes of `status` (chunked, or with a content-length when asked). */
async function hugeServer(
  status: number,
  options: { path?: string; declareLength?: boolean } = {},
): Promise<HugeServer> {
  const requests: string[] = [];
  let streaming: Promise<number> = Promise.resolve(0);
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    requests.push(`${req.method} ${req.url}`);
    if (req.url !== (options.path ?? '/v1/chat/completions')) {
      res.writeHead(404).end();
      return;
    }
    streaming = stream(res, status, options.declareLength === true);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  cleanups.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  );
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    name: `127.0.0.1:${port}`,
    requests,
    sent: () => streaming,
  };
}

/** Writes until HUGE bytes or until the client goes away; the bytes the socket took. */
async function stream(
  res: ServerResponse,
  status: number,
  declareLength: boolean,
): Promise<number> {
  res.writeHead(status, {
    'content-type': 'application/json',
    ...(declareLength ? { 'content-length': String(HUGE) } : {}),
  });
  let sent = 0;
  let closed = false;
  let wake = () => undefined as void;
  const stop = () => {
    closed = true;
    wake();
  };
  res.on('close', stop);
  res.on('error', stop);
  res.on('drain', () => wake());
  res.write('{"error":{"message":"');
  while (sent < HUGE && !closed) {
    sent += CHUNK.length;
    if (!res.write(CHUNK)) await new Promise<void>((resolve) => (wake = resolve));
  }
  if (!closed) res.end('"}}');
  return sent;
}

const HISTORY = [
  { role: 'system' as const, content: SYSTEM_PROMPT },
  { role: 'user' as const, content: 'Fix the failing test.' },
];

describe('model endpoint response cap', () => {
  it('fails a 450 MB completion at the cap, and counts it as the endpoint failing', async () => {
    const huge = await hugeServer(200);
    const model = createOpenAIModel({ baseUrl: huge.baseUrl, maxRetries: 2 });
    const error = await model.complete(HISTORY, TOOL_SCHEMAS).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(error)).toMatch(CAP_MESSAGE);
    expect(endpointFailureKind(error)).toBe('too_large');
    expect(await huge.sent()).toBeLessThan(SENT_BOUND);
    expect(huge.requests).toEqual(['POST /v1/chat/completions']);
  });

  it('fails a declared 450 MB completion without reading it', async () => {
    const huge = await hugeServer(200, { declareLength: true });
    const model = createOpenAIModel({ baseUrl: huge.baseUrl, maxRetries: 0 });
    await expect(model.complete(HISTORY, TOOL_SCHEMAS)).rejects.toThrow(CAP_MESSAGE);
    expect(await huge.sent()).toBeLessThan(SENT_BOUND);
  });

  it('fails a 450 MB error body at the cap without asking again', async () => {
    const huge = await hugeServer(502);
    const model = createOpenAIModel({ baseUrl: huge.baseUrl, maxRetries: 2 });
    const error = await model.complete(HISTORY, TOOL_SCHEMAS).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(error)).toMatch(/502 the model endpoint's error body exceeded the 8 MiB/);
    expect(endpointFailureKind(error)).toBe('too_large');
    expect(await huge.sent()).toBeLessThan(SENT_BOUND);
    expect(huge.requests).toHaveLength(1);
  });

  it('moves a fleet loop to another endpoint when one answers past the cap', async () => {
    const huge = await hugeServer(200);
    const good = await startScriptedModelServer({ onExhausted: finalAnswer('ok') });
    cleanups.push(() => good.close());
    const failed: string[] = [];
    const fleet = new ModelFleet({
      endpoints: parseEndpoints([huge.baseUrl, good.baseUrl]),
      model: { maxRetries: 0, timeoutMs: 60_000 },
      maxLoops: 8,
      observer: {
        loopStarted: () => undefined,
        loopEnded: () => undefined,
        answered: () => undefined,
        failed: (endpoint, kind) => failed.push(`${endpoint} ${kind}`),
        markedDown: () => undefined,
      },
    });
    cleanups.push(() => fleet.close());
    const loop = fleet.loop();
    const response = await loop.complete(HISTORY, TOOL_SCHEMAS);
    expect(response.message.content).toBe('ok');
    expect(failed).toEqual([`${huge.name} too_large`]);
    expect(loop.servedBy()[0]?.error).toMatch(CAP_MESSAGE);
    expect(await huge.sent()).toBeLessThan(SENT_BOUND);
    await loop.release();
  });

  it("fails the doctor's GET /models at the cap", async () => {
    const huge = await hugeServer(200, { path: '/v1/models' });
    await expect(inspectModelEndpoint({ baseUrl: huge.baseUrl })).rejects.toThrow(
      /answered GET \/models with more than 8 MiB/,
    );
    expect(await huge.sent()).toBeLessThan(SENT_BOUND);
  });
});
