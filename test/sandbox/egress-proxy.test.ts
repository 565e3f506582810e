import { createServer, request, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { log } from '../../src/log.js';
import { AllowList } from '../../src/sandbox/egress-allow.js';
import {
  startEgressProxy,
  type EgressProxy,
  type EgressProxyOptions,
} from '../../src/sandbox/egress-proxy.js';

/** Sends a raw request to the proxy, then `after` through the tunnel; everything it got back. */
function rawProxy(proxy: EgressProxy, head: string, after = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: proxy.port });
    let got = '';
    socket.on('data', (chunk: Buffer) => {
      got += chunk.toString('utf8');
      if (after && got.startsWith('HTTP/1.1 200 Connection Established\r\n\r\n') && !sent) {
        sent = true;
        socket.write(after);
      }
    });
    let sent = false;
    socket.once('error', reject);
    socket.once('close', () => resolve(got));
    socket.write(head);
  });
}

function viaProxy(proxy: EgressProxy, url: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: proxy.port, path: url, method: 'GET' },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: `${res.statusMessage}|${text}` }),
        );
      },
    );
    req.once('error', reject);
    req.end();
  });
}

describe('the egress proxy', () => {
  let upstream: Server;
  let port: number;
  const proxies: EgressProxy[] = [];
  const start = async (
    allow: AllowList,
    resolve?: (host: string) => Promise<string[]>,
    more: Partial<EgressProxyOptions> = {},
  ) => {
    const proxy = await startEgressProxy({
      allow,
      host: '127.0.0.1',
      log,
      ...(resolve ? { resolve } : {}),
      ...more,
    });
    proxies.push(proxy);
    return proxy;
  };

  beforeAll(async () => {
    upstream = createServer((req, res) =>
      res.end(`upstream saw ${req.method} ${req.url} host=${req.headers.host}`),
    );
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    port = (upstream.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const proxy of proxies) await proxy.close();
    upstream.close();
  });

  it("forwards plain http to an operator's exactly allowed host on the bot's own host", async () => {
    const proxy = await start(new AllowList([`127.0.0.1:${port}`]));
    const got = await viaProxy(proxy, `http://127.0.0.1:${port}/simple/?q=1`);
    expect(got.status).toBe(200);
    expect(got.text).toContain(`upstream saw GET /simple/?q=1 host=127.0.0.1:${port}`);
    expect(proxy.facts()).toEqual({
      mode: 'registries',
      allowedHosts: [`127.0.0.1:${port}`],
      blocked: [],
    });
  });

  it('tunnels CONNECT to an allowed host:port', async () => {
    const proxy = await start(new AllowList([`localhost:${port}`]));
    const got = await rawProxy(
      proxy,
      `CONNECT localhost:${port} HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`,
      `GET /tunnelled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    expect(got).toMatch(/^HTTP\/1.1 200 Connection Established\r\n\r\nHTTP\/1.1 200 OK/);
    expect(got).toContain('upstream saw GET /tunnelled');
  });

  it('refuses a host not on the list with a 403 that says what to do, and counts it', async () => {
    const proxy = await start(new AllowList([], ['pypi.org']));
    for (let i = 0; i < 2; i++) {
      const got = await rawProxy(
        proxy,
        'CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n',
      );
      expect(got.split('\r\n')[0]).toBe(
        'HTTP/1.1 403 example.org:443 refused by the setup network (not allowed); add it to network_allow',
      );
    }
    const plain = await viaProxy(proxy, 'http://example.org/');
    expect(plain.status).toBe(403);
    expect(proxy.facts().blocked).toEqual([
      { host: 'example.org', port: 80, count: 1, reason: 'not allowed' },
      { host: 'example.org', port: 443, count: 2, reason: 'not allowed' },
    ]);
    expect(proxy.refusals()).toBe(3);
  });

  it("refuses loopback, the metadata address and private addresses a repository's entry names", async () => {
    const proxy = await start(
      new AllowList(
        [],
        [`127.0.0.1:${port}`, '169.254.169.254:80', '10.0.0.1:80', `localhost:${port}`],
      ),
    );
    const loop = await viaProxy(proxy, `http://127.0.0.1:${port}/`);
    expect(loop.status).toBe(403);
    const named = await rawProxy(proxy, `CONNECT localhost:${port} HTTP/1.1\r\n\r\n`);
    expect(named).toMatch(
      /^HTTP\/1.1 403 localhost:\d+ refused by the setup network \(loopback address\)/,
    );
    const metadata = await viaProxy(proxy, 'http://169.254.169.254/latest/meta-data/');
    expect(metadata.status).toBe(403);
    expect(metadata.text).toContain(
      '169.254.169.254:80 refused by the setup network (link-local address)',
    );
    await viaProxy(proxy, 'http://10.0.0.1/');
    expect(
      proxy
        .facts()
        .blocked.map((b) => `${b.host}:${b.port} ${b.reason}`)
        .sort(),
    ).toEqual([
      '10.0.0.1:80 private address',
      `127.0.0.1:${port} loopback address`,
      '169.254.169.254:80 link-local address',
      `localhost:${port} loopback address`,
    ]);
  });

  it('refuses a wildcard-allowed name that resolves to a private address', async () => {
    const proxy = await start(new AllowList(['*.corp.test']), async () => [
      '203.0.113.9',
      '10.9.8.7',
    ]);
    const got = await rawProxy(proxy, 'CONNECT pypi.corp.test:443 HTTP/1.1\r\n\r\n');
    expect(got.split('\r\n')[0]).toContain(
      'pypi.corp.test:443 refused by the setup network (private address)',
    );
  });

  it('answers a name that does not resolve with a 502, not a refusal', async () => {
    const proxy = await start(new AllowList(['nowhere.invalid']));
    const got = await rawProxy(proxy, 'CONNECT nowhere.invalid:443 HTTP/1.1\r\n\r\n');
    expect(got).toMatch(/^HTTP\/1.1 502 nowhere.invalid: name not resolved/);
    expect(proxy.facts().blocked).toEqual([]);
  });

  it('cuts open tunnels when closed', async () => {
    const proxy = await start(new AllowList([`127.0.0.1:${port}`]));
    const closed = rawProxy(proxy, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`);
    await new Promise((r) => setTimeout(r, 100));
    await proxy.close();
    expect(await closed).toMatch(/^HTTP\/1.1 200/);
  });

  it("refuses the engine host's addresses and the bot's networks to a repository's entry", async () => {
    const names: Record<string, string> = {
      'engine.test': '198.51.100.9',
      'botnet.test': '198.51.100.77',
      'v6engine.test': '64:ff9b::198.51.100.9',
    };
    const proxy = await start(
      new AllowList(
        [],
        ['engine.test:22', 'botnet.test:80', 'v6engine.test:22', '198.51.100.9:22'],
      ),
      async (host) => [names[host]!],
      { engineHost: { addresses: ['198.51.100.9'], subnets: ['198.51.100.0/24'] } },
    );
    for (const target of ['engine.test:22', 'v6engine.test:22', '198.51.100.9:22'])
      expect((await rawProxy(proxy, `CONNECT ${target} HTTP/1.1\r\n\r\n`)).split('\r\n')[0]).toBe(
        `HTTP/1.1 403 ${target} refused by the setup network (address of this host); add it to network_allow`,
      );
    const net = await rawProxy(proxy, 'CONNECT botnet.test:80 HTTP/1.1\r\n\r\n');
    expect(net.split('\r\n')[0]).toContain("(address of the bot's network)");
  });

  it("lets an operator's exact host reach an engine host address", async () => {
    const local = Object.values(networkInterfaces())
      .flat()
      .find((info) => info && info.family === 'IPv4' && !info.internal)?.address;
    if (!local) return;
    const wide = createServer((_req, res) => res.end('engine host service'));
    await new Promise<void>((r) => wide.listen(0, '0.0.0.0', r));
    const widePort = (wide.address() as AddressInfo).port;
    try {
      const proxy = await start(new AllowList([`${local}:${widePort}`]), undefined, {
        engineHost: { addresses: [local], subnets: [`${local}/32`] },
      });
      const got = await viaProxy(proxy, `http://${local}:${widePort}/`);
      expect(got.text).toContain('engine host service');
      const repo = await start(new AllowList([], [`${local}:${widePort}`]), undefined, {
        engineHost: { addresses: [local], subnets: [] },
      });
      expect((await viaProxy(repo, `http://${local}:${widePort}/`)).status).toBe(403);
    } finally {
      wide.close();
    }
  });

  it('answers connections past its cap with a 503 and counts them', async () => {
    const proxy = await start(new AllowList([`127.0.0.1:${port}`]), undefined, {
      maxConnections: 2,
    });
    const open = [0, 1].map(() => connect({ host: '127.0.0.1', port: proxy.port }));
    await Promise.all(open.map((s) => new Promise((r) => s.once('connect', r))));
    await new Promise((r) => setTimeout(r, 50));
    const third = await rawProxy(proxy, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`);
    expect(third.split('\r\n')[0]).toBe(
      'HTTP/1.1 503 too many connections through the setup network (at most 2 at once)',
    );
    expect(proxy.refusals()).toBe(1);
    expect(proxy.facts().blocked).toEqual([
      { host: '*', port: proxy.port, count: 1, reason: 'too many connections' },
    ]);
    for (const socket of open) socket.destroy();
    await new Promise((r) => setTimeout(r, 50));
    const again = await rawProxy(
      proxy,
      `CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`,
      'GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    expect(again).toContain('upstream saw GET /after');
  });

  it('cuts a tunnel that carries no bytes either way for its idle time', async () => {
    const proxy = await start(new AllowList([`127.0.0.1:${port}`]), undefined, {
      idleTimeoutMs: 300,
    });
    const started = Date.now();
    const got = await rawProxy(proxy, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`);
    expect(got).toMatch(/^HTTP\/1.1 200/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
