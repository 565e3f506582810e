import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import nock from 'nock';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  gitEnvironment,
  mayPublishLater,
  noreplyDomainFor,
  publishPatch,
  resolveBotIdentity,
  runGit,
  type GitRunner,
} from '../../../src/github/publishing/publish.js';
import { createPythonRepo, FIXED_CALC, git } from '../../support/python-repo.js';
import { Probot } from 'probot';
import type { GitHubClient } from '../../../src/github/octokit.js';
import { API, AppTestOctokit, silentLog, testOctokit, testPrivateKey } from '../helpers/github.js';
import { useStrictNock } from '../helpers/strict-nock.js';
import { startGitHttpServer, type GitHttpServer } from '../helpers/git-http-server.js';

useStrictNock();

const TOKEN = 'ghs_publishTestToken0123456789abcdefABCD';
const BASIC = Buffer.from(`x-access-token:${TOKEN}`).toString('base64');
const bot = { name: 'frognano[bot]', email: '41898282+frognano[bot]@users.noreply.github.com' };

let tmp: string;
let projectRoot: string;
let bare: string;
let base: string;
let server: GitHttpServer;
let logs: string;
let log: pino.Logger;

function patchFor(content: string): string {
  const work = join(tmp, `patch-${Math.random().toString(36).slice(2)}`);
  execFileSync('git', ['clone', '-q', bare, work]);
  writeFileSync(join(work, 'calc.py'), content);
  return git(work, 'diff', '--binary');
}

beforeEach(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'frognano-publish-'));
  const repo = createPythonRepo(join(tmp, 'src'));
  base = repo.head;
  projectRoot = join(tmp, 'git');
  bare = join(projectRoot, 'octo', 'calc.git');
  mkdirSync(join(projectRoot, 'octo'), { recursive: true });
  execFileSync('git', ['clone', '-q', '--bare', repo.dir, bare]);
  server = await startGitHttpServer(projectRoot, TOKEN);
  logs = '';
  log = pino(
    { level: 'trace' },
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        logs += chunk.toString();
        cb();
      },
    }),
  );
});

afterEach(async () => {
  await server.close();
  rmSync(tmp, { recursive: true, force: true });
});

function recordingGit(calls: { args: string[]; env: NodeJS.ProcessEnv }[]): GitRunner {
  return async (args, options) => {
    calls.push({ args, env: options.env });
    return runGit(args, options);
  };
}

describe('publishPatch (real git, real smart-HTTP server)', () => {
  it('pushes frognano/issue-N with the token only in an env header and opens a draft PR', async () => {
    const calls: { args: string[]; env: NodeJS.ProcessEnv }[] = [];
    let minted = 0;
    const scope = nock(API)
      .get('/repos/octo/calc/pulls')
      .query({ head: 'octo:frognano/issue-5', state: 'open', per_page: 1 })
      .reply(200, [])
      .post('/repos/octo/calc/pulls', (b: Record<string, unknown>) => {
        expect(b).toMatchObject({
          head: 'frognano/issue-5',
          base: 'main',
          draft: true,
          body: 'Fixes #5.',
        });
        expect(b.title).toBe('frognano: add() subtracts');
        return true;
      })
      .reply(201, { number: 12, html_url: 'https://github.com/octo/calc/pull/12' })
      .post('/repos/octo/calc/pulls/12/requested_reviewers', { reviewers: ['octocat'] })
      .reply(201, {});

    const workRoot = join(tmp, 'work');
    const result = await publishPatch({
      octokit: testOctokit(),
      owner: 'octo',
      repo: 'calc',
      issueNumber: 5,
      issueTitle: 'add() subtracts',
      baseBranch: 'main',
      baseCommit: base,
      patch: patchFor(FIXED_CALC),
      gitUrl: `${server.url}/octo/calc.git`,
      mintToken: async () => {
        minted++;
        return TOKEN;
      },
      workRoot,
      bot,
      coAuthor: { login: 'octocat', id: 583231 },
      noreplyDomain: 'users.noreply.github.com',
      body: 'Fixes #5.',
      log,
      git: recordingGit(calls),
    });
    scope.done();
    expect(result).toMatchObject({
      branch: 'frognano/issue-5',
      prNumber: 12,
      created: true,
      reviewRequested: true,
    });
    expect(minted).toBe(1);

    // The branch: one commit on top of the base, by the bot, co-authored, with the fix.
    const head = git(bare, 'rev-parse', 'refs/heads/frognano/issue-5').trim();
    expect(head).toBe(result.commit);
    expect(git(bare, 'rev-parse', `${head}^`).trim()).toBe(base);
    expect(git(bare, 'log', '-1', '--format=%an <%ae>', head).trim()).toBe(
      `${bot.name} <${bot.email}>`,
    );
    expect(git(bare, 'log', '-1', '--format=%B', head)).toContain(
      'Co-authored-by: octocat <583231+octocat@users.noreply.github.com>',
    );
    // Workflows must not run the unreviewed change with the repository's secrets.
    expect(git(bare, 'log', '-1', '--format=%B', head)).toMatch(/^\[skip ci\]$/m);
    expect(git(bare, 'diff', base, head)).toContain('-    return a - b\n+    return a + b');

    // The token travelled as the HTTP header git was given, and nowhere else.
    expect(server.authorizations).toContain(`Basic ${BASIC}`);
    expect(server.urls.join('\n')).not.toContain(TOKEN);
    for (const call of calls) {
      expect(call.args.join(' ')).not.toContain(TOKEN);
      expect(call.args.join(' ')).not.toContain(BASIC);
    }
    const headerValues = calls
      .flatMap((c) => Object.values(c.env))
      .filter((v) => v?.includes(BASIC));
    expect(headerValues.length).toBeGreaterThan(0);
    expect(logs).not.toContain(TOKEN);
    expect(logs).not.toContain(BASIC);
    expect(readFileSync(join(bare, 'config'), 'utf8')).not.toContain(BASIC);
    // The temporary clone is gone.
    expect(readdirSync(workRoot)).toEqual([]);
  });

  it('defuses closing keywords and mentions of the issue title in the PR title (a squash merge commits it)', async () => {
    let title = '';
    const scope = nock(API)
      .get('/repos/octo/calc/pulls')
      .query({ head: 'octo:frognano/issue-5', state: 'open', per_page: 1 })
      .reply(200, [])
      .post('/repos/octo/calc/pulls', (b: Record<string, unknown>) => {
        title = String(b.title);
        return true;
      })
      .reply(201, { number: 12, html_url: 'https://github.com/octo/calc/pull/12' })
      .post('/repos/octo/calc/pulls/12/requested_reviewers', { reviewers: ['octocat'] })
      .reply(201, {});
    await publishPatch({
      octokit: testOctokit(),
      owner: 'octo',
      repo: 'calc',
      issueNumber: 5,
      issueTitle: 'Fixes #12, closes octo/other#3 and GH-4, cc @admin',
      baseBranch: 'main',
      baseCommit: base,
      patch: patchFor(FIXED_CALC),
      gitUrl: `${server.url}/octo/calc.git`,
      mintToken: async () => TOKEN,
      workRoot: join(tmp, 'work'),
      bot,
      coAuthor: { login: 'octocat', id: 583231 },
      noreplyDomain: 'users.noreply.github.com',
      body: 'Fixes #5.',
      log,
    });
    scope.done();
    // GitHub's squash merge proposes the PR title as the commit subject: "fixes #12" there
    // would close issue 12 once merged.
    expect(title).toBe(
      'frognano: Fixes #\u200b12, closes octo/other#\u200b3 and GH-\u200b4, cc @\u200badmin',
    );
  });

  it('updates the branch with force-with-lease and the open PR on a retry', async () => {
    nock(API)
      .get('/repos/octo/calc/pulls')
      .query(true)
      .reply(200, [])
      .post('/repos/octo/calc/pulls')
      .reply(201, { number: 12, html_url: 'https://github.com/octo/calc/pull/12' })
      .post('/repos/octo/calc/pulls/12/requested_reviewers')
      .reply(201, {})
      .get('/repos/octo/calc/pulls')
      .query(true)
      .reply(200, [{ number: 12, html_url: 'https://github.com/octo/calc/pull/12' }])
      .patch('/repos/octo/calc/pulls/12', (b: Record<string, unknown>) => b.body === 'second')
      .reply(200, {})
      .post('/repos/octo/calc/pulls/12/requested_reviewers')
      .reply(422, { message: 'Review cannot be requested from pull request author.' });
    const params = {
      octokit: testOctokit(),
      owner: 'octo',
      repo: 'calc',
      issueNumber: 5,
      issueTitle: 't',
      baseBranch: 'main',
      baseCommit: base,
      gitUrl: `${server.url}/octo/calc.git`,
      mintToken: async () => TOKEN,
      workRoot: join(tmp, 'work'),
      bot,
      coAuthor: { login: 'octocat', id: 1 },
      noreplyDomain: 'users.noreply.github.com',
      log,
    };
    const first = await publishPatch({ ...params, patch: patchFor(FIXED_CALC), body: 'first' });
    const second = await publishPatch({
      ...params,
      patch: patchFor(FIXED_CALC.replace('return a * b', 'return b * a')),
      body: 'second',
    });
    expect(second).toMatchObject({ prNumber: 12, created: false, reviewRequested: false });
    expect(second.commit).not.toBe(first.commit);
    const head = git(bare, 'rev-parse', 'refs/heads/frognano/issue-5').trim();
    expect(head).toBe(second.commit);
    expect(git(bare, 'rev-parse', `${head}^`).trim()).toBe(base);
  });

  function prMocks(pr: number) {
    return nock(API)
      .get('/repos/octo/calc/pulls')
      .query(true)
      .reply(200, [])
      .post('/repos/octo/calc/pulls')
      .reply(201, { number: pr, html_url: `https://github.com/octo/calc/pull/${pr}` })
      .post(`/repos/octo/calc/pulls/${pr}/requested_reviewers`)
      .reply(201, {});
  }

  function baseParams(issueNumber: number) {
    return {
      octokit: testOctokit(),
      owner: 'octo',
      repo: 'calc',
      issueNumber,
      issueTitle: 'add() subtracts',
      baseBranch: 'main',
      baseCommit: base,
      patch: patchFor(FIXED_CALC),
      gitUrl: `${server.url}/octo/calc.git`,
      mintToken: async () => TOKEN,
      workRoot: join(tmp, 'work'),
      bot,
      coAuthor: { login: 'octocat', id: 1 },
      noreplyDomain: 'users.noreply.github.com',
      body: 'Fixes.',
      log,
      retryDelaysMs: [50, 50],
    };
  }

  it('tries a push the server answered 502 (unapplied) again, with backoff', async () => {
    prMocks(13);
    server.failPushes(1, 502);
    const pushed: string[] = [];
    const result = await publishPatch({ ...baseParams(7), onPushed: (c) => void pushed.push(c) });
    expect(result).toMatchObject({ prNumber: 13, created: true });
    expect(git(bare, 'rev-parse', 'refs/heads/frognano/issue-7').trim()).toBe(result.commit);
    expect(pushed).toEqual([result.commit]);
    expect(logs).toContain('git failed transiently; retrying');
    expect(readdirSync(join(tmp, 'work'))).toEqual([]);
  });

  it('takes a push that was applied but answered 502 as done (the lease would refuse a second)', async () => {
    prMocks(14);
    server.failPushes(1, 502, { applied: true });
    const result = await publishPatch(baseParams(8));
    expect(result).toMatchObject({ prNumber: 14 });
    expect(git(bare, 'rev-parse', 'refs/heads/frognano/issue-8').trim()).toBe(result.commit);
  });

  it('gives up on a push that keeps failing, and never retries a refusal', async () => {
    server.failPushes(3, 503);
    const outage = await publishPatch(baseParams(9)).catch((error: unknown) => error);
    expect(String(outage)).toMatch(/pushing frognano\/issue-9 failed/);
    expect(mayPublishLater(outage)).toBe(true); // worth keeping the change for a later retry
    expect(git(bare, 'branch', '--list', 'frognano/*').trim()).toBe('');
    // A 401 is not transient: one attempt, and nothing to gain from trying later.
    const calls: { args: string[]; env: NodeJS.ProcessEnv }[] = [];
    const refused = await publishPatch({
      ...baseParams(9),
      mintToken: async () => 'ghs_wrong',
      git: recordingGit(calls),
    }).catch((error: unknown) => error);
    expect(String(refused)).toMatch(/fetching the base commit failed/);
    expect(mayPublishLater(refused)).toBe(false);
    expect(calls.filter((c) => c.args[0] === 'fetch')).toHaveLength(1);
    expect(mayPublishLater(Object.assign(new Error('rate limited'), { status: 403 }))).toBe(true);
  });

  it('resumes at the pull request when the branch already holds the pushed commit', async () => {
    nock(API)
      .get('/repos/octo/calc/pulls')
      .query(true)
      .reply(200, [])
      .post('/repos/octo/calc/pulls')
      .reply(
        403,
        { message: 'You have exceeded a secondary rate limit.' },
        { 'retry-after': '60' },
      );
    prMocks(15);
    // First attempt: pushed, then the pull request failed (no retry on this client).
    let pushedCommit: string | undefined;
    await expect(
      publishPatch({ ...baseParams(10), onPushed: (c) => void (pushedCommit = c) }),
    ).rejects.toMatchObject({ status: 403 });
    expect(pushedCommit).toBe(git(bare, 'rev-parse', 'refs/heads/frognano/issue-10').trim());
    // Second attempt: nothing cloned, committed or pushed again; the same commit gets its PR.
    const calls: { args: string[]; env: NodeJS.ProcessEnv }[] = [];
    const result = await publishPatch({
      ...baseParams(10),
      pushedCommit,
      git: recordingGit(calls),
    });
    expect(result).toMatchObject({ prNumber: 15, commit: pushedCommit });
    expect(calls.map((c) => c.args[0])).toEqual(['ls-remote']);
  });

  it('works against a file:// remote, never runs hooks, and refuses a patch that does not apply', async () => {
    // A template with a hook: a git that honoured the caller's environment would install and run it.
    const template = join(tmp, 'template');
    mkdirSync(join(template, 'hooks'), { recursive: true });
    const marker = join(tmp, 'hook-ran');
    writeFileSync(join(template, 'hooks', 'post-checkout'), `#!/bin/sh\ntouch ${marker}\n`);
    chmodSync(join(template, 'hooks', 'post-checkout'), 0o755);
    const badPatch = patchFor(FIXED_CALC).replace('return a - b', 'return a ^ b');
    const saved = process.env.GIT_TEMPLATE_DIR;
    process.env.GIT_TEMPLATE_DIR = template;
    try {
      await expect(
        publishPatch({
          octokit: testOctokit(),
          owner: 'octo',
          repo: 'calc',
          issueNumber: 6,
          issueTitle: 't',
          baseBranch: 'main',
          baseCommit: base,
          patch: badPatch,
          gitUrl: `file://${bare}`,
          mintToken: async () => TOKEN,
          workRoot: join(tmp, 'work'),
          bot,
          coAuthor: { login: 'octocat', id: 1 },
          noreplyDomain: 'users.noreply.github.com',
          body: 'x',
          log,
        }),
      ).rejects.toThrow(/applying the patch failed: [\s\S]*patch does not apply/);
    } finally {
      if (saved === undefined) delete process.env.GIT_TEMPLATE_DIR;
      else process.env.GIT_TEMPLATE_DIR = saved;
    }
    expect(existsSync(marker)).toBe(false);
    expect(git(bare, 'branch', '--list', 'frognano/*').trim()).toBe('');
    expect(readdirSync(join(tmp, 'work'))).toEqual([]);
  });
});

describe('gitEnvironment', () => {
  it('carries the header only for http(s) remotes, scoped to the origin, and no inherited git state', () => {
    const env = gitEnvironment('/tmp/h', 'https://ghe.example.com/o/r.git', TOKEN);
    const pairs = Object.fromEntries(
      Array.from({ length: Number(env.GIT_CONFIG_COUNT) }, (_, i) => [
        env[`GIT_CONFIG_KEY_${i}`],
        env[`GIT_CONFIG_VALUE_${i}`],
      ]),
    );
    expect(pairs['http.https://ghe.example.com/.extraHeader']).toBe(
      `Authorization: Basic ${BASIC}`,
    );
    expect(pairs['core.hooksPath']).toBe('/dev/null');
    expect(env.GIT_CONFIG_GLOBAL).toBe('/dev/null');
    expect(env).toMatchObject({
      GIT_CONFIG_NOSYSTEM: '1',
      HOME: '/tmp/h',
      XDG_CONFIG_HOME: '/tmp/h',
    });
    expect(env.GIT_DIR).toBeUndefined();
    const fileEnv = gitEnvironment('/tmp/h', 'file:///srv/o/r.git', TOKEN);
    expect(JSON.stringify(fileEnv)).not.toContain(BASIC);
  });
});

describe('resolveBotIdentity and noreplyDomainFor', () => {
  it('builds <slug>[bot] from GET /app (App JWT) and GET /users (installation token), on real App auth', async () => {
    const probot = new Probot({
      appId: 1,
      privateKey: testPrivateKey(),
      Octokit: AppTestOctokit,
      log: silentLog,
    });
    const seen: Record<string, string> = {};
    const record = (what: string) =>
      function (this: { req: { headers: Record<string, string> } }) {
        seen[what] = this.req.headers.authorization ?? '';
        return what === 'token'
          ? [
              201,
              {
                token: 'ghs_identityTestToken000000000000000000',
                expires_at: '2999-01-01T00:00:00Z',
              },
            ]
          : what === 'app'
            ? [200, { slug: 'frognano-test', id: 1 }]
            : [200, { login: 'frognano-test[bot]', id: 99 }];
      };
    nock(API)
      .get('/app')
      .reply(record('app'))
      .post('/app/installations/1/access_tokens')
      .reply(record('token'))
      .get('/users/frognano-test%5Bbot%5D')
      .reply(record('user'));
    const clients = {
      app: (await probot.auth()) as GitHubClient,
      installation: (await probot.auth(1)) as GitHubClient,
    };
    await expect(resolveBotIdentity(clients, 'users.noreply.github.com')).resolves.toEqual({
      name: 'frognano-test[bot]',
      email: '99+frognano-test[bot]@users.noreply.github.com',
    });
    expect(seen.app).toMatch(/^bearer [\w-]+\.[\w-]+\.[\w-]+$/i);
    expect(seen.token).toMatch(/^bearer /i);
    expect(seen.user).toBe('token ghs_identityTestToken000000000000000000');
    // The route that broke every real publish: the App's JWT client cannot call it at all.
    await expect(clients.app.rest.users.getByUsername({ username: 'x' })).rejects.toThrow(
      'installationId option is required',
    );
  });

  it('uses the Enterprise host for no-reply addresses', () => {
    expect(noreplyDomainFor('https://github.com')).toBe('users.noreply.github.com');
    expect(noreplyDomainFor('https://ghe.example.com')).toBe('users.noreply.ghe.example.com');
    expect(noreplyDomainFor('file:///srv/git')).toBe('users.noreply.github.com');
  });
});
