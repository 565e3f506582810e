// The shared write pace on real Redis: two clients with a connection each (two processes, as
// far as Redis can tell) against a loopback server that records when each request arrived.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { ProbotOctokit } from 'probot';
import { afterEach, describe, expect, it } from 'vitest';
import {
  NOTIFYING_WRITE_GAP_MS,
  WRITE_GAP_MS,
  paceWrites,
  sharedThrottle,
  type SharedThrottle,
} from '../../src/github/shared-throttle.js';
import { silentLog } from './helpers/github.js';

const REDIS = process.env.FROGNANO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function recorder(): Promise<{ url: string; arrivals: { what: string; at: number }[] }> {
  const arrivals: { what: string; at: number }[] = [];
  const server: Server = createServer((req, res) => {
    arrivals.push({
      what: `${req.method} ${req.url}`,
      at: performance.timeOrigin + performance.now(),
    });
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, arrivals };
}

const Paced = ProbotOctokit.plugin(paceWrites as never) as typeof ProbotOctokit;

function client(url: string, throttle: SharedThrottle | undefined) {
  return new Paced({
    auth: { token: 'ghs_test' },
    baseUrl: url,
    log: silentLog,
    retry: { enabled: false },
    throttle: {
      ...(throttle?.options ?? {}),
      onRateLimit: () => false,
      onSecondaryRateLimit: () => false,
    },
  } as never);
}

describe('sharedThrottle', () => {
  it("spaces two processes' writes 1 s apart as GitHub sees them (3 s for notifying ones); reads and token mints go at once", async () => {
    const { url, arrivals } = await recorder();
    const prefix = `fntest:${randomUUID()}`;
    const [one, two] = [0, 1].map(() => sharedThrottle(REDIS, prefix, silentLog));
    cleanups.push(
      () => one!.close(),
      () => two!.close(),
    );
    const a = client(url, one);
    const b = client(url, two);
    const patch = (o: typeof a, n: number) =>
      o.request('PATCH /repos/o/r/issues/comments/{id}', { id: n, body: 'x' });
    const comment = (o: typeof a, n: number) =>
      o.request('POST /repos/o/r/issues/{n}/comments', { n, body: 'x' });
    await Promise.all([
      patch(a, 1),
      patch(b, 2),
      comment(a, 3),
      comment(b, 4),
      patch(a, 5),
      b.request('GET /repos/o/r'),
      b.request('POST /app/installations/1/access_tokens'),
    ]);
    const at = (what: string) => arrivals.find((r) => r.what.startsWith(what))!.at;
    const writes = arrivals
      .filter((r) => !r.what.startsWith('GET') && !r.what.includes('access_tokens'))
      .map((r) => r.at)
      .sort((x, y) => x - y);
    expect(writes).toHaveLength(5);
    const gaps = writes.slice(1).map((t, i) => t - writes[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(WRITE_GAP_MS);
    expect(
      Math.abs(at('POST /repos/o/r/issues/4') - at('POST /repos/o/r/issues/3')),
    ).toBeGreaterThanOrEqual(NOTIFYING_WRITE_GAP_MS);
    // Neither waited for a write.
    expect(at('GET /repos/o/r')).toBeLessThan(writes[1]!);
    expect(at('POST /app/installations/1/access_tokens')).toBeLessThan(writes[1]!);
  }, 60_000);

  it('paces nothing without a shared throttle (the plugin alone, here turned off)', async () => {
    const { url, arrivals } = await recorder();
    const plain = new Paced({
      auth: { token: 'ghs_test' },
      baseUrl: url,
      log: silentLog,
      retry: { enabled: false },
      throttle: { enabled: false },
    } as never);
    await Promise.all(
      [1, 2, 3].map((id) =>
        plain.request('PATCH /repos/o/r/issues/comments/{id}', { id, body: 'x' }),
      ),
    );
    const times = arrivals.map((r) => r.at).sort((x, y) => x - y);
    expect(times.at(-1)! - times[0]!).toBeLessThan(WRITE_GAP_MS);
  });
});
