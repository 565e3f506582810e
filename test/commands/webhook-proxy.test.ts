// WEBHOOK_PROXY_URL: Probot forwards deliveries from a smee.io-style channel to the webhook
// path through smee-client (a dependency, so Probot finds it). The channel here is a local
// server-sent-events stream on a real socket, shaped like smee.io's.
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../../src/app.js';
import { newPrivateKey } from './helpers/fake-github-app.js';

const SECRET = 'proxy-secret';
let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

describe('WEBHOOK_PROXY_URL', () => {
  it('receives signed deliveries from the channel at the webhook path', async () => {
    let stream: ServerResponse | undefined;
    const channel = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(': connected\n\n');
      stream = res;
    });
    await new Promise<void>((resolve) => channel.listen(0, '127.0.0.1', resolve));
    cleanup.push(
      () =>
        new Promise<void>((resolve) => {
          channel.closeAllConnections();
          channel.close(() => resolve());
        }),
    );
    const channelUrl = `http://127.0.0.1:${(channel.address() as AddressInfo).port}/frognano-test`;

    const work = await mkdtemp(path.join(tmpdir(), 'frognano-proxy-'));
    cleanup.push(() => rm(work, { recursive: true, force: true }));
    const app: RunningApp = await startApp({
      mode: 'serve',
      log: pino({ level: 'silent' }),
      env: {
        PATH: process.env.PATH,
        APP_ID: '1',
        PRIVATE_KEY: newPrivateKey(),
        WEBHOOK_SECRET: SECRET,
        WEBHOOK_PROXY_URL: channelUrl,
        PORT: '0',
        HOST: '127.0.0.1',
        FROGNANO_SANDBOX: 'local',
        FROGNANO_DATA_DIR: path.join(work, 'data'),
      },
    });
    cleanup.push(() => app.stop());
    const received: string[] = [];
    app.probot!.onAny((context) => {
      received.push(`${context.name} ${context.id}`);
    });

    expect(stream, 'the App connected to the channel').toBeDefined();
    const body = { zen: 'Keep it logically awesome.', hook_id: 1 };
    const signature = `sha256=${createHmac('sha256', SECRET).update(JSON.stringify(body)).digest('hex')}`;
    const event = {
      'x-github-event': 'ping',
      'x-github-delivery': 'proxy-delivery-1',
      'x-hub-signature-256': signature,
      body,
      timestamp: Date.now(),
    };
    stream!.write(`data: ${JSON.stringify(event)}\n\n`);

    const deadline = Date.now() + 10_000;
    while (received.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(received).toEqual(['ping proxy-delivery-1']);
  });
});
