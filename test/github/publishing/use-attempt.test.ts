// `/frognano use K`: the branch moves forward by one commit to attempt K's tree, over a real
// smart-HTTP git server; GitHub mocked at the wire with strict scopes.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nock from 'nock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  useAttempt,
  withSelected,
  type PublishedRun,
} from '../../../src/github/publishing/use-attempt.js';
import type { AttemptSummary, RunResult } from '../../../src/runner/run-types.js';
import { createPythonRepo, FIXED_CALC, git } from '../../support/python-repo.js';
import { startGitHttpServer, type GitHttpServer } from '../helpers/git-http-server.js';
import { API, silentLog, testOctokit } from '../helpers/github.js';
import { attemptSummary, runResult } from '../helpers/run-result.js';
import { useStrictNock } from '../helpers/strict-nock.js';

useStrictNock();

const TOKEN = 'ghs_useAttemptTestToken0123456789abcdefAB';
const bot = { name: 'frognano[bot]', email: '41898282+frognano[bot]@users.noreply.github.com' };
const BRANCH = 'frognano/issue-7';

let tmp: string;
let bare: string;
let base: string;
let server: GitHttpServer;

function patchFor(content: string, extra: Record<string, string> = {}): string {
  const work = join(tmp, `patch-${Math.random().toString(36).slice(2)}`);
  execFileSync('git', ['clone', '-q', bare, work]);
  git(work, 'checkout', '-q', base);
  writeFileSync(join(work, 'calc.py'), content);
  for (const [name, text] of Object.entries(extra)) writeFileSync(join(work, name), text);
  git(work, 'add', '-A');
  return git(work, 'diff', '--cached', '--binary');
}

const ATTEMPT_2_CALC = FIXED_CALC.replace('def mul', '# multiplies\ndef mul');

function summary(
  attempt: number,
  patch: string,
  over: Partial<AttemptSummary> = {},
): AttemptSummary {
  return attemptSummary({
    attempt,
    patch,
    filesChanged: patch ? ['calc.py'] : [],
    finalMessage: `attempt ${attempt} says done`,
    steps: attempt + 1,
    promptTokens: 100,
    completionTokens: 10,
    contextTokens: 110,
    selected: attempt === 1,
    reason: attempt === 1 ? 'won: tests after pass' : 'lost: a larger change',
    ...over,
  });
}

beforeEach(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'frognano-use-'));
  const repo = createPythonRepo(join(tmp, 'src'));
  base = repo.head;
  mkdirSync(join(tmp, 'git', 'octo'), { recursive: true });
  bare = join(tmp, 'git', 'octo', 'calc.git');
  execFileSync('git', ['clone', '-q', '--bare', repo.dir, bare]);
  // The published branch: attempt 1's change on top of the base.
  const work = join(tmp, 'published');
  execFileSync('git', ['clone', '-q', bare, work]);
  writeFileSync(join(work, 'calc.py'), FIXED_CALC);
  git(work, '-c', 'user.name=b', '-c', 'user.email=b@x.invalid', 'commit', '-qam', 'attempt 1');
  git(work, 'push', '-q', 'origin', `HEAD:refs/heads/${BRANCH}`);
  server = await startGitHttpServer(join(tmp, 'git'), TOKEN);
});

afterEach(async () => {
  await server.close();
  rmSync(tmp, { recursive: true, force: true });
});

function published(result: RunResult, saved: RunResult[]): PublishedRun {
  return {
    runId: 'run-1',
    result,
    requestedBy: 'maintainer',
    save: async (r) => {
      saved.push(r);
    },
  };
}

function params(attempt: number | undefined, run: PublishedRun | undefined) {
  return {
    octokit: testOctokit(),
    owner: 'octo',
    repo: 'calc',
    pullNumber: 12,
    attempt,
    by: { login: 'octocat', id: 583231 },
    findRun: async (issue: number) => (issue === 7 ? run : undefined),
    gitUrl: `${server.url}/octo/calc.git`,
    mintToken: async () => TOKEN,
    workRoot: join(tmp, 'work'),
    bot,
    noreplyDomain: 'users.noreply.github.com',
    log: silentLog,
  };
}

const pr = (over: Record<string, unknown> = {}) => ({
  number: 12,
  state: 'open',
  user: { login: 'frognano[bot]' },
  head: {
    ref: BRANCH,
    sha: git(bare, 'rev-parse', `refs/heads/${BRANCH}`).trim(),
    repo: { full_name: 'octo/calc' },
  },
  ...over,
});

describe('useAttempt', () => {
  it("moves the branch forward to attempt K's change and re-renders the body with K published", async () => {
    const p1 = patchFor(FIXED_CALC);
    const p2 = patchFor(ATTEMPT_2_CALC);
    const result = runResult({
      baseCommit: base,
      patch: p1,
      selectedAttempt: 1,
      attempts: [summary(1, p1), summary(2, p2), summary(3, '')],
    });
    const saved: RunResult[] = [];
    const before = git(bare, 'rev-parse', `refs/heads/${BRANCH}`).trim();
    let body = '';
    const scope = nock(API)
      .get('/repos/octo/calc/pulls/12')
      .reply(200, pr())
      .patch('/repos/octo/calc/pulls/12', (b: { body: string }) => {
        body = b.body;
        return true;
      })
      .reply(200, {});

    const outcome = await useAttempt(params(2, published(result, saved)));
    scope.done();

    expect(outcome).toMatchObject({ kind: 'switched', attempt: 2 });
    const after = git(bare, 'rev-parse', `refs/heads/${BRANCH}`).trim();
    expect(after).toBe((outcome as { commit: string }).commit);
    // A fast-forward: one new commit whose parent is the old head, with attempt 2's tree.
    expect(git(bare, 'rev-parse', `${after}^`).trim()).toBe(before);
    expect(git(bare, 'show', `${after}:calc.py`)).toBe(ATTEMPT_2_CALC);
    const message = git(bare, 'log', '-1', '--format=%an%n%B', after);
    expect(message).toContain('frognano[bot]\nfrognano: use attempt 2 for #7');
    expect(message).toContain('Co-authored-by: octocat <583231+octocat@users.noreply.github.com>');

    expect(body).toContain('| 2 (published) |');
    expect(body).toContain('chosen by @&#8203;octocat with /frognano use 2');
    expect(body).toContain('> attempt 2 says done');
    expect(saved[0]!.selectedAttempt).toBe(2);
    expect(saved[0]!.patch).toBe(p2);
  });

  it('refuses, changing nothing, what it cannot do', async () => {
    const p1 = patchFor(FIXED_CALC);
    const result = runResult({
      baseCommit: base,
      selectedAttempt: 1,
      attempts: [
        summary(1, p1),
        summary(2, ''),
        summary(3, p1, { violations: [{ rule: 'blocked_path', detail: '.github/x' }] }),
      ],
    });
    const run = published(result, []);
    const before = git(bare, 'rev-parse', `refs/heads/${BRANCH}`).trim();
    const cases: [number | undefined, Record<string, unknown>, PublishedRun | undefined, RegExp][] =
      [
        [2, {}, run, /attempt 2 changed nothing/],
        [3, {}, run, /breaks the repository policy \(blocked_path\)/],
        [1, {}, run, /already the change/],
        [5, {}, run, /pick one from 1 to 3/],
        [0, {}, run, /^the run had 3 attempts; pick one from 1 to 3\.$/],
        [-1, {}, run, /^the run had 3 attempts; pick one from 1 to 3\.$/],
        [9, {}, run, /^the run had 3 attempts; pick one from 1 to 3\.$/],
        // Not a number at all (`use 1e3`, `use 1 2`): the same range, and what `use` takes.
        [undefined, {}, run, /takes one attempt number.*pick one from 1 to 3/],
        [2, { user: { login: 'someone' } }, run, /only on pull requests frognano opened/],
        [
          2,
          { head: { ref: 'feature', sha: before, repo: { full_name: 'octo/calc' } } },
          run,
          /frognano opened/,
        ],
        [2, {}, published(runResult({ baseCommit: base }), []), /had one attempt/],
      ];
    for (const [k, over, r, reason] of cases) {
      const scope = nock(API).get('/repos/octo/calc/pulls/12').reply(200, pr(over));
      const outcome = await useAttempt(params(k, r));
      scope.done();
      expect(outcome.kind).toBe('refused');
      expect((outcome as { reason: string }).reason).toMatch(reason);
    }
    expect(git(bare, 'rev-parse', `refs/heads/${BRANCH}`).trim()).toBe(before);
  });
});

describe('withSelected', () => {
  it("makes the result attempt K's: its error, or none, not the attempt it replaces", () => {
    const result = runResult({
      error: 'attempt 1 hit its step limit',
      attempts: [summary(1, 'p1', { error: 'attempt 1 hit its step limit' }), summary(2, 'p2')],
      selectedAttempt: 1,
    });
    const two = withSelected(result, 2, 'maint');
    expect(two.error).toBeUndefined();
    expect(two.patch).toBe('p2');
    expect(withSelected(two, 1, 'maint').error).toBe('attempt 1 hit its step limit');
  });
});
