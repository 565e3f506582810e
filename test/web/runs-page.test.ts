// The /runs sign-in's OAuth code exchange (@octokit/oauth-methods) against the local fake of
// github.com on a socket: a code GitHub accepts signs the user in, one it refuses says so with
// a 502, and a GitHub that does not answer fails the request without the client secret in it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runsPageHandler, type RunListing } from '../../src/web/index.js';
import { startFakeGitHubOAuth, type FakeGitHubOAuth } from './helpers/fake-github-oauth.js';

const CLIENT_ID = 'Iv1.fakeclient0002';
const CLIENT_SECRET = 'fake-client-secret-fedcba9876543210';
const listing = { listRuns: () => Promise.resolve([]) } as unknown as RunListing;

let fake: FakeGitHubOAuth;
const servers: Server[] = [];

/** A server with the runs page against `webBaseUrl`; its base URL and what its handler threw. */
async function serve(webBaseUrl: string): Promise<{ base: string; thrown: unknown[] }> {
  const thrown: unknown[] = [];
  const handler = runsPageHandler({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    listing,
    webBaseUrl,
    apiBaseUrl: `${webBaseUrl}/api`,
    log: pino({ level: 'silent' }),
  });
  const server = createServer((req, res) => {
    handler(req, res).catch((error: unknown) => {
      thrown.push(error);
      res.writeHead(500).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, thrown };
}

/** `/runs/login`: GitHub's authorize URL and the state cookie. */
async function login(base: string): Promise<{ authorize: URL; cookie: string }> {
  const res = await fetch(`${base}/runs/login`, { redirect: 'manual' });
  expect(res.status).toBe(303);
  const cookie = res.headers.getSetCookie()[0]!.split(';')[0]!;
  return { authorize: new URL(res.headers.get('location')!), cookie };
}

beforeAll(async () => {
  fake = await startFakeGitHubOAuth({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    users: [{ login: 'octo', id: 7, repos: {} }],
  });
});

afterAll(async () => {
  await fake.close();
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
});

describe('the /runs OAuth code exchange', () => {
  it('trades a code GitHub issued for a session, at the configured web base', async () => {
    const { base } = await serve(fake.url);
    const { authorize, cookie } = await login(base);
    expect(authorize.origin).toBe(fake.url);
    const granted = await fetch(authorize, { redirect: 'manual' });
    const callback = granted.headers.get('location')!;
    const res = await fetch(callback, { redirect: 'manual', headers: { cookie } });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/runs');
    expect(res.headers.getSetCookie().join('\n')).toMatch(/frognano_session=[^;]+/);
  });

  it('says GitHub did not accept a code it refuses', async () => {
    const { base, thrown } = await serve(fake.url);
    const { authorize, cookie } = await login(base);
    const state = authorize.searchParams.get('state')!;
    const res = await fetch(`${base}/runs/callback?code=forged&state=${state}`, {
      redirect: 'manual',
      headers: { cookie },
    });
    expect(res.status).toBe(502);
    expect(await res.text()).toContain('GitHub did not accept the sign-in.');
    expect(thrown).toEqual([]);
  });

  it('fails the request when GitHub does not answer, without the client secret', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const gone = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const { base, thrown } = await serve(gone);
    const { authorize, cookie } = await login(base);
    const state = authorize.searchParams.get('state')!;
    const res = await fetch(`${base}/runs/callback?code=any&state=${state}`, {
      redirect: 'manual',
      headers: { cookie },
    });
    expect(res.status).toBe(500);
    expect(thrown).toHaveLength(1);
    expect(String(thrown[0])).toMatch(
      /OAuth code exchange at http:\/\/127\.0\.0\.1:\d+ did not answer/,
    );
    expect(JSON.stringify(thrown[0], Object.getOwnPropertyNames(thrown[0]))).not.toContain(
      CLIENT_SECRET,
    );
  });
});
