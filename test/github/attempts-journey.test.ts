// `attempts: 3` on a repository, through the App: one draft pull request from the verified
// winner with the Attempts table, then `/frognano use 3` on that pull request switches its
// branch to attempt 3's change. Real App, queue, pipeline (local sandbox), scripted model,
// git remote; GitHub's REST API mocked strictly.
import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTEMPT_HEADER } from '../../src/runner/phases/connect-model.js';
import { FIXED_CALC } from '../support/python-repo.js';
import {
  finalAnswer,
  toolCall,
  type RecordedRequest,
  type ResponseSpec,
} from '../support/scripted-model-server.js';
import {
  mockBotIdentity,
  mockGitHub,
  mockPlainComments,
  mockPullRequest,
  mockStatusComment,
  PYTHON,
  REPO_PATH,
  startHarness,
  type Harness,
} from './helpers/app-harness.js';
import { commentPayload, labeledPayload, reviewPayload } from './helpers/payloads.js';
import { useStrictNock } from './helpers/strict-nock.js';

useStrictNock();

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

const REPRO = 'from calc import add\n\n\ndef test_add_negative():\n    assert add(-1, 1) == 0\n';

function perAttempt(): (r: RecordedRequest) => ResponseSpec {
  const scripts: Record<string, ResponseSpec[]> = {
    '1': [
      toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC }),
      toolCall('Write', { file_path: 'test_repro.py', content: REPRO }),
      finalAnswer('Fixed, with a reproduction.'),
    ],
    '2': [
      toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC.replace('a * b', 'a ** b') }),
      finalAnswer('Rewrote calc.py.'),
    ],
    '3': [
      toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC }),
      finalAnswer('Fixed add().'),
    ],
  };
  return (r) =>
    scripts[String(r.headers[ATTEMPT_HEADER])]?.shift() ?? {
      kind: 'error',
      status: 400,
      body: { error: { message: 'script exhausted' } },
    };
}

describe('attempts through the App', () => {
  it('opens one draft PR from the verified winner with the Attempts table; /frognano use 3 switches it', async () => {
    const gh = mockGitHub();
    mockBotIdentity(gh);
    mockStatusComment(gh, 1);
    let prRequest: Record<string, unknown> | undefined;
    mockPullRequest(gh, 1, 7, (body) => (prRequest = body));
    harness = await startHarness({
      python: PYTHON,
      onExhausted: perAttempt(),
      config: 'attempts: 3\n',
      throttleMs: 0,
      gitHttp: gh,
    });

    expect(await harness.deliver('issues', labeledPayload(), 'attempts-label')).toBe(200);
    await harness.app.intake!.idle();
    await harness.app.workers!.idle();
    const [run] = await harness.app.queue!.list();
    expect(run).toMatchObject({ state: 'done', outcome: 'pull_request' });

    const body = String(prRequest?.body);
    expect(body).toContain('## Attempts');
    expect(body).toMatch(/\| 1 \(published\) \| `agent` \| 3 \|.*\| pass \| yes \|/);
    expect(body).toContain('lost: tests after: 1 failing (attempt 1: pass)');
    expect(body).toContain(
      "lost: its own tests do not fail before and pass after (attempt 1's do)",
    );
    expect(body).toContain('<details><summary>Attempt 2: what it changed</summary>');

    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd: harness!.bare, encoding: 'utf8' });
    const published = git('rev-parse', 'refs/heads/frognano/issue-1').trim();
    expect(git('show', `${published}:test_repro.py`)).toBe(REPRO);

    // `/frognano use 3` on the pull request (intake asks who the App is, once per process).
    mockBotIdentity(gh);
    gh.intercept({
      method: 'GET',
      path: `${REPO_PATH}/pulls/7`,
      status: 200,
      reply: () => ({
        number: 7,
        state: 'open',
        user: { login: 'frognano[bot]' },
        head: {
          ref: 'frognano/issue-1',
          sha: published,
          repo: { full_name: 'Codertocat/Hello-World' },
        },
      }),
    });
    let switchedBody = '';
    gh.intercept({
      method: 'PATCH',
      path: `${REPO_PATH}/pulls/7`,
      status: 200,
      reply: (b) => {
        switchedBody = String(b.body);
        return { number: 7 };
      },
    });
    mockPlainComments(gh, 7);
    const use = commentPayload({ body: '/frognano use 3', pullRequest: true, issueNumber: 7 });
    expect(await harness.deliver('issue_comment', use, 'attempts-use')).toBe(200);
    await harness.app.intake!.idle();

    const head = git('rev-parse', 'refs/heads/frognano/issue-1').trim();
    expect(git('rev-parse', `${head}^`).trim()).toBe(published);
    expect(git('ls-tree', '--name-only', head)).not.toContain('test_repro.py');
    expect(git('show', `${head}:calc.py`)).toBe(FIXED_CALC);
    expect(gh.comments.at(-1)).toMatch(
      /switched this pull request to attempt 3 \(commit [0-9a-f]{12}\)/,
    );
    expect(switchedBody).toMatch(/\| 3 \(published\) \|/);
    expect(switchedBody).toContain('> Fixed add().');
    expect(gh.reactions.length).toBeGreaterThanOrEqual(2);

    // A bad K, in a PR comment or a review body, is `use` refused with the range: no run.
    gh.intercept({
      method: 'GET',
      path: `${REPO_PATH}/pulls/7`,
      status: 200,
      times: 2,
      reply: () => ({
        number: 7,
        state: 'open',
        user: { login: 'frognano[bot]' },
        head: { ref: 'frognano/issue-1', sha: head, repo: { full_name: 'Codertocat/Hello-World' } },
      }),
    });
    mockPlainComments(gh, 7, 2);
    const badComment = commentPayload({
      body: '/frognano use 1 2',
      pullRequest: true,
      issueNumber: 7,
    });
    expect(await harness.deliver('issue_comment', badComment, 'attempts-use-bad')).toBe(200);
    const badReview = reviewPayload({ body: '/frognano use 9' });
    expect(await harness.deliver('pull_request_review', badReview, 'attempts-use-9')).toBe(200);
    await harness.app.intake!.idle();
    expect(gh.comments.slice(-2)).toEqual([
      expect.stringMatching(
        /^@\S+, nothing changed: .*the run had 3 attempts; pick one from 1 to 3\./,
      ),
      expect.stringMatching(
        /^@\S+, nothing changed: the run had 3 attempts; pick one from 1 to 3\.$/,
      ),
    ]);
    expect(git('rev-parse', 'refs/heads/frognano/issue-1').trim()).toBe(head);
    expect(await harness.app.queue!.list()).toHaveLength(1);
  }, 180_000);
});
