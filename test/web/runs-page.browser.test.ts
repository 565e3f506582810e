// `/runs` behind GitHub sign-in, against a local fake of github.com's OAuth endpoints and API:
// the sign-in round trip in Chromium, runs only of repositories the user can push to, nothing
// without a session, and the CSRF and state checks.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { IssueJob } from '../../src/github/job.js';
import { runOutDir } from '../../src/data-dir.js';
import { SqliteStore } from '../../src/queue/sqlite-store.js';
import { SqliteQueue } from '../../src/queue/sqlite-queue.js';
import {
  filesIn,
  queueRunListing,
  runPageHandler,
  runsPageConfig,
  runsPageHandler,
} from '../../src/web/index.js';
import { describeBrowser, launchChromium, outputDir, watchPage } from './helpers/browser.js';
import { startFakeGitHubOAuth, type FakeGitHubOAuth } from './helpers/fake-github-oauth.js';

const CLIENT_ID = 'Iv1.fakeclient0001';
const CLIENT_SECRET = 'fake-client-secret-0123456789abcdef';

let work: string;
let queue: SqliteStore<IssueJob>;
let server: Server;
let base: string;
let fake: FakeGitHubOAuth;
let browser: Browser;
const runIds: Record<string, string> = {};

function job(owner: string, repo: string, issueNumber: number, title: string): IssueJob {
  return {
    installationId: 1,
    owner,
    repo,
    issueNumber,
    issueTitle: title,
    issueText: title,
    sender: { login: 'maintainer', id: 2 },
    source: 'label',
    deliveryId: `d-${owner}-${repo}-${issueNumber}`,
  };
}

describeBrowser('runs page behind GitHub sign-in (fake OAuth, headless Chromium)', () => {
  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'frognano-runs-page-'));
    const dataDir = path.join(work, 'data');
    queue = SqliteStore.open<IssueJob>({ dataDir, concurrency: 5 });
    for (const [owner, repo, n, title] of [
      ['octo', 'pushable', 1, 'Visible finished run'],
      ['octo', 'readonly', 2, 'Secret title of a read-only repo'],
      ['elsewhere', 'hidden', 3, 'Secret title of an invisible repo'],
      ['octo', 'pushable', 4, 'Visible running run'],
    ] as const) {
      const r = queue.enqueue({ key: `${owner}/${repo}#${n}`, job: job(owner, repo, n, title) });
      if (r.status === 'queued') runIds[`${repo}#${n}`] = r.run.id;
    }
    // One finished, three running (claimed in order).
    queue.claim();
    queue.finish(runIds['pushable#1']!, 'done', { outcome: 'pull_request' });
    queue.claim();
    queue.claim();
    queue.claim();

    fake = await startFakeGitHubOAuth({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      users: [
        {
          login: 'alice',
          id: 10,
          repos: { 'octo/pushable': { push: true }, 'octo/readonly': { push: false } },
        },
        { login: 'bob', id: 11, repos: { 'octo/pushable': { push: false } } },
      ],
    });
    const listing = queueRunListing(new SqliteQueue(queue), {
      gitBaseUrl: 'https://github.example',
      files: (id) => filesIn(runOutDir(dataDir, id)),
    });
    const handlers = [
      runsPageHandler({
        ...runsPageConfig({ GITHUB_CLIENT_ID: CLIENT_ID, GITHUB_CLIENT_SECRET: CLIENT_SECRET })!,
        listing,
        webBaseUrl: fake.url,
        apiBaseUrl: `${fake.url}/api`,
        log: pino({ level: 'silent' }),
      }),
      runPageHandler({ listing }),
    ];
    server = createServer((req, res) => {
      void (async () => {
        for (const handle of handlers) if (await handle(req, res)) return;
        res.writeHead(404).end();
      })();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await fake?.close();
    await new Promise((resolve) => server.close(resolve));
    queue.close();
    await rm(work, { recursive: true, force: true });
  });

  it('is off without GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET', () => {
    expect(runsPageConfig({})).toBeUndefined();
    expect(runsPageConfig({ GITHUB_CLIENT_ID: CLIENT_ID })).toBeUndefined();
    expect(
      runsPageConfig({ GITHUB_CLIENT_ID: CLIENT_ID, GITHUB_CLIENT_SECRET: ' ' }),
    ).toBeUndefined();
  });

  it('shows no data without a session, whatever the query or cookie', async () => {
    for (const query of ['', '?repo=octo/readonly', '?state=running']) {
      for (const cookie of [undefined, 'frognano_session=forged', 'frognano_session=']) {
        const res = await fetch(`${base}/runs${query}`, {
          headers: cookie ? { cookie } : {},
        });
        expect(res.status).toBe(200);
        expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
        const html = await res.text();
        expect(html).toContain('Sign in with GitHub');
        for (const secret of [
          'pushable',
          'readonly',
          'hidden',
          'Secret title',
          ...Object.values(runIds),
        ]) {
          expect(html).not.toContain(secret);
        }
      }
    }
  });

  it('signs in through GitHub and lists only runs of repositories the user can push to', async () => {
    const context = await browser.newContext();
    context.setDefaultTimeout(5000);
    const page = await context.newPage();
    const watch = await watchPage(page);
    fake.signInAs('alice');
    await page.goto(`${base}/runs`);
    await page.click('a[href="/runs/login"]');
    await page.waitForSelector('text=signed in as');
    expect(page.url()).toBe(`${base}/runs`);
    await page.screenshot({ path: path.join(outputDir('runs-page'), 'alice.png'), fullPage: true });

    expect(await page.textContent('body')).toContain('signed in as @alice');
    const rows = await page.locator('tbody tr').allTextContents();
    expect(rows).toHaveLength(2);
    // Newest first: #4 (running) then #1 (done, with its pull request).
    expect(rows[0]).toContain('octo/pushable#4');
    expect(rows[0]).toMatch(/^running/);
    expect(rows[0]).toContain('label by @maintainer');
    expect(rows[1]).toContain('octo/pushable#1');
    expect(rows[1]).toContain('pull_request');
    const html = await page.content();
    expect(html).not.toContain('Secret title');
    expect(html).not.toContain('readonly#');
    expect(html).not.toContain('elsewhere');
    expect(await page.getAttribute('tbody tr:nth-child(2) a:text("pull request")', 'href')).toBe(
      'https://github.example/octo/pushable/pulls?q=is%3Apr%20head%3Afrognano%2Fissue-1',
    );
    // Checked with alice's own token, once per repository.
    expect(fake.repoChecks.filter((c) => c.startsWith('alice ')).sort()).toEqual([
      'alice elsewhere/hidden',
      'alice octo/pushable',
      'alice octo/readonly',
    ]);

    // The session cookie: HttpOnly, SameSite=Lax, scoped to /runs; the OAuth state cookie is gone.
    const cookies = await context.cookies();
    expect(cookies.map((c) => c.name)).toEqual(['frognano_session']);
    expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/runs' });
    expect(cookies[0]!.value).not.toContain('gho_');

    // Filters by state and repository (GET: they change nothing).
    await page.selectOption('select[name=state]', 'done');
    await page.click('button:text("filter")');
    expect(await page.locator('tbody tr').allTextContents()).toHaveLength(1);
    await page.goto(`${base}/runs?repo=octo/readonly`);
    expect(await page.locator('tbody tr').count()).toBe(0);
    expect(await page.content()).not.toContain('Secret title');

    // The run page link opens the run's page.
    await page.goto(`${base}/runs`);
    await page.click('tbody tr:nth-child(1) a:text("run page")');
    expect(page.url()).toBe(`${base}/frognano/runs/${runIds['pushable#4']}/trajectory`);

    // Sign out is a POST with a CSRF token: a bare cross-site POST is refused.
    const forged = await fetch(`${base}/runs/logout`, {
      method: 'POST',
      headers: {
        cookie: `frognano_session=${cookies[0]!.value}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'csrf=guess',
    });
    expect(forged.status).toBe(403);
    await page.goto(`${base}/runs`);
    await page.click('button:text("sign out")');
    await page.waitForSelector('a[href="/runs/login"]');
    expect(page.url()).toBe(`${base}/runs`);
    expect(await page.textContent('body')).toContain('Sign in with GitHub');
    expect(await context.cookies()).toEqual([]);
    expect(watch).toEqual({ dialogs: [], errors: [], consoleErrors: [] });
    await context.close();
  });

  it('shows a user without push access none of the runs', async () => {
    const context = await browser.newContext();
    context.setDefaultTimeout(5000);
    const page = await context.newPage();
    fake.signInAs('bob');
    await page.goto(`${base}/runs/login`);
    await page.waitForSelector('text=signed in as');
    expect(await page.textContent('body')).toContain('signed in as @bob');
    expect(await page.locator('tbody tr').count()).toBe(0);
    expect(await page.textContent('body')).toContain('No runs in repositories you can push to');
    await context.close();
  });

  it('refuses a callback whose state does not match the one it issued', async () => {
    fake.signInAs('alice');
    // A login started by an attacker, completed in the victim's browser (login CSRF): the
    // victim's state cookie, if any, is another one, so the code is refused, no session made.
    const attacker = await fetch(`${base}/runs/login`, { redirect: 'manual' });
    const toCallback = await fetch(attacker.headers.get('location')!, { redirect: 'manual' });
    const callback = toCallback.headers.get('location')!;
    expect(callback).toMatch(/\/runs\/callback\?code=.+&state=.+/);

    const victim = await fetch(`${base}/runs/login`, { redirect: 'manual' });
    const victimState = victim.headers.get('set-cookie')!.split(';')[0]!;
    expect(victimState).toMatch(/^frognano_oauth=./);
    const refused = await fetch(callback, { redirect: 'manual', headers: { cookie: victimState } });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('set-cookie')).toBeNull();

    const context = await browser.newContext();
    context.setDefaultTimeout(5000);
    const page = await context.newPage();
    const res = await page.goto(callback);
    expect(res?.status()).toBe(400);
    expect(await page.textContent('body')).toContain('Sign-in failed');
    expect(await context.cookies()).toEqual([]);
    await context.close();

    // The attacker's own cookie still works once (the code was not used): the check is the state.
    const attackerState = attacker.headers.get('set-cookie')!.split(';')[0]!;
    const accepted = await fetch(callback, {
      redirect: 'manual',
      headers: { cookie: attackerState },
    });
    expect(accepted.status).toBe(303);
    expect(accepted.headers.get('set-cookie')).toContain('frognano_session=');
  });
});
