// A follow-up's commit over smart HTTP with a token: fast-forward only, retried when the server
// fails, never over someone else's push; then the body's Revision section and the replies.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nock from 'nock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  publishRevision,
  type PublishRevisionParams,
} from '../../../src/github/publishing/publish-revision.js';
import { createPythonRepo, FIXED_CALC, git } from '../../support/python-repo.js';
import { API, silentLog, testOctokit } from '../helpers/github.js';
import { startGitHttpServer, type GitHttpServer } from '../helpers/git-http-server.js';
import { useStrictNock } from '../helpers/strict-nock.js';

useStrictNock();

const TOKEN = 'ghs_revisionTestToken0123456789abcdefAB';
const bot = { name: 'frognano[bot]', email: '41898282+frognano[bot]@users.noreply.github.com' };
const BRANCH = 'frognano/issue-1';
let tmp: string;
let bare: string;
let head: string;
let server: GitHttpServer;

beforeEach(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'frognano-revision-'));
  const repo = createPythonRepo(join(tmp, 'src'));
  writeFileSync(join(repo.dir, 'calc.py'), FIXED_CALC);
  git(repo.dir, '-c', 'user.name=b', '-c', 'user.email=b@x', 'commit', '-qam', 'first attempt');
  head = git(repo.dir, 'rev-parse', 'HEAD').trim();
  mkdirSync(join(tmp, 'git', 'octo'), { recursive: true });
  bare = join(tmp, 'git', 'octo', 'calc.git');
  execFileSync('git', ['clone', '-q', '--bare', repo.dir, bare]);
  execFileSync('git', ['update-ref', `refs/heads/${BRANCH}`, head], { cwd: bare });
  server = await startGitHttpServer(join(tmp, 'git'), TOKEN);
});
afterEach(async () => {
  await server.close();
  rmSync(tmp, { recursive: true, force: true });
});

function docPatch(): string {
  const work = join(tmp, `w-${Math.random().toString(36).slice(2)}`);
  execFileSync('git', ['clone', '-q', '--branch', BRANCH, bare, work]);
  writeFileSync(join(work, 'calc.py'), `"""Calculator."""\n${FIXED_CALC}`);
  return git(work, 'diff');
}

function params(overrides: Partial<PublishRevisionParams> = {}): PublishRevisionParams {
  return {
    octokit: testOctokit(),
    owner: 'octo',
    repo: 'calc',
    prNumber: 7,
    branch: BRANCH,
    issueNumber: 1,
    issueTitle: 'add() subtracts',
    revision: 2,
    head,
    patch: docPatch(),
    gitUrl: `${server.url}/octo/calc.git`,
    mintToken: () => Promise.resolve(TOKEN),
    workRoot: join(tmp, 'publish'),
    bot,
    coAuthor: { login: 'Codertocat', id: 21031067 },
    noreplyDomain: 'users.noreply.github.com',
    section: (commit) => `commit ${commit}`,
    replyTo: [901],
    canSpend: () => true,
    log: silentLog,
    retryDelaysMs: [20, 20],
    ...overrides,
  };
}

function mockPrEdits(bodies: string[], replies: string[]): void {
  nock(API)
    .get('/repos/octo/calc/pulls/7')
    .reply(200, { number: 7, body: 'first run' })
    .patch('/repos/octo/calc/pulls/7', (b: { body: string }) => {
      bodies.push(b.body);
      return true;
    })
    .reply(200, {})
    .post('/repos/octo/calc/pulls/7/comments/901/replies', (b: { body: string }) => {
      replies.push(b.body);
      return true;
    })
    .reply(201, { id: 1 });
}

function branchHead(): string {
  return execFileSync('git', ['rev-parse', `refs/heads/${BRANCH}`], {
    cwd: bare,
    encoding: 'utf8',
  }).trim();
}

describe('publishRevision', () => {
  it('pushes one commit on the head after a failed push, edits the body and replies', async () => {
    server.failPushes(1, 502);
    const bodies: string[] = [];
    const replies: string[] = [];
    mockPrEdits(bodies, replies);
    const result = await publishRevision(params());
    expect(result).toMatchObject({ kind: 'pushed', bodyUpdated: true, replies: 1 });
    const commit = branchHead();
    expect(result).toMatchObject({ commit });
    expect(git(bare, 'rev-parse', `${commit}^`).trim()).toBe(head);
    const body = bodies[0] ?? '';
    expect(body).toContain('### Revision 2 (latest)');
    expect(body).toContain(`commit ${commit}`);
    expect(body.startsWith('first run\n\n')).toBe(true);
    expect(replies).toEqual([`🐸 Addressed in ${commit} (revision 2); please review.`]);
    // Every git request carried the token as a header, never in the URL.
    expect(server.urls.some((u) => u.includes(TOKEN))).toBe(false);
    expect(readdirSync(join(tmp, 'publish'))).toEqual([]);
  });

  it('counts a push the server applied before losing its answer as done', async () => {
    server.failPushes(1, 502, { applied: true });
    mockPrEdits([], []);
    const result = await publishRevision(params());
    expect(result).toMatchObject({ kind: 'pushed', commit: branchHead() });
  });

  it('does not push over a commit someone pushed after the run started', async () => {
    const other = join(tmp, 'other');
    execFileSync('git', ['clone', '-q', '--branch', BRANCH, bare, other]);
    writeFileSync(join(other, 'NOTES.md'), 'human\n');
    git(other, 'add', 'NOTES.md');
    git(other, '-c', 'user.name=h', '-c', 'user.email=h@x', 'commit', '-qm', 'human');
    git(other, 'push', '-q', 'origin', `HEAD:${BRANCH}`);
    const human = branchHead();
    const result = await publishRevision(params({ patch: docPatch() }));
    expect(result).toEqual({ kind: 'moved', now: human });
    expect(branchHead()).toBe(human);
  });
});
