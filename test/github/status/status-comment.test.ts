import nock from 'nock';
import { describe, expect, it } from 'vitest';
import { RestBudget } from '../../../src/github/rest-budget.js';
import {
  describeResult,
  ensureStatusComment,
  renderStatus,
  STATUS_MARKER,
  StatusReporter,
  verificationLine,
} from '../../../src/github/status/status-comment.js';
import { Probot } from 'probot';
import type { GitHubClient } from '../../../src/github/octokit.js';
import {
  API,
  AppTestOctokit,
  retryingTestOctokit,
  silentLog,
  testOctokit,
  testPrivateKey,
} from '../helpers/github.js';
import { useStrictNock } from '../helpers/strict-nock.js';
import { runResult } from '../helpers/run-result.js';
import { renderPrBody } from '../../../src/github/publishing/pr-body.js';
import { registerSecret } from '../../../src/redact.js';
import { FORGED_MESSAGE, markdownTree, nodeTypes, plainText } from '../helpers/markdown-tree.js';

useStrictNock();
const issue = { owner: 'o', repo: 'r', issueNumber: 5 };

describe('renderStatus', () => {
  it('links the workflow run and names its artifact in Actions mode', () => {
    const url = 'https://github.com/o/r/actions/runs/42';
    const body = renderStatus(
      { kind: 'running', phase: 'agent', step: 2, maxSteps: 9 },
      { runId: 'r1', workflowRun: { url, artifact: 'frognano-run-r1' } },
    );
    expect(body).toContain(`[workflow run](${url}), artifact \`frognano-run-r1\``);
  });

  it('links the run page while the run is active and after it', () => {
    const runPageUrl =
      'https://bot.example.com/frognano/runs/0f4c1b2a-1111-4222-8333-444455556666/trajectory';
    const meta = { runId: 'r1', trigger: 'requested by @a', runPageUrl };
    for (const state of [
      { kind: 'running', phase: 'agent', step: 2, maxSteps: 9 },
      { kind: 'done', prNumber: 8, prUrl: 'https://x/pull/8', partial: false },
    ] as const) {
      expect(renderStatus(state, meta)).toContain(`[run page](${runPageUrl})`);
    }
    expect(renderStatus({ kind: 'queued', position: 1 }, { runId: 'r1' })).not.toContain(
      'run page',
    );
  });

  it('starts with the hidden marker and says each state in plain words', () => {
    expect(renderStatus({ kind: 'queued', position: 3 })).toMatch(
      new RegExp(`^${STATUS_MARKER}\n.*queued \\(position 3\\)`),
    );
    expect(renderStatus({ kind: 'running', phase: 'agent', step: 4, maxSteps: 150 })).toContain(
      'running: the model is working (step 4/150).',
    );
    const parallel = renderStatus({
      kind: 'running',
      phase: 'agent',
      step: 2,
      maxSteps: 30,
      attempts: { 2: 5, 1: 2, 3: 0 },
    });
    expect(parallel).toContain('running: the model is working.');
    expect(parallel).toContain(
      'Parallel attempts: attempt 1: step 2/30 · attempt 2: step 5/30 · attempt 3: step 0/30.',
    );
    expect(
      renderStatus({ kind: 'done', prNumber: 8, prUrl: 'https://x/pull/8', partial: false }),
    ).toContain('opened draft pull request #8 (https://x/pull/8)');
    const failed = renderStatus({
      kind: 'failed',
      reason: 'setup failed.',
      detail: 'pip: error ``` x',
    });
    expect(failed).toContain('the run failed: setup failed.');
    expect(failed).toContain('````\npip: error ``` x\n````');
    expect(failed).toContain('/frognano retry');
  });
});

describe('renderStatus: a full repository queue', () => {
  it('says in one line how many runs wait and what to do, on an issue and on a pull request', () => {
    const line = (followUp: boolean, limit: number) =>
      renderStatus({ kind: 'full', repo: 'octo/calc', limit, followUp }).split('\n');
    expect(line(false, 10)).toEqual([
      STATUS_MARKER,
      '🐸 **frognano**: not queued: octo/calc already has 10 runs waiting, the most this server queues per repository (`FROGNANO_MAX_QUEUED_PER_REPO`). Comment `/frognano retry` once some have started.',
    ]);
    expect(line(true, 1)[1]).toBe(
      '🐸 **frognano**: not queued: octo/calc already has 1 run waiting, the most this server queues per repository (`FROGNANO_MAX_QUEUED_PER_REPO`). Comment `/frognano <what to change>` again once some have started.',
    );
  });
});

describe('describeResult', () => {
  it.each([
    [
      { outcome: 'model_unreachable', error: 'ECONNREFUSED 127.0.0.1:8000' },
      /model endpoint could not be reached: ECONNREFUSED/,
    ],
    [{ outcome: 'setup_failed', setupTail: 'E: pip failed' }, /setup commands failed/],
    [
      { outcome: 'config_error', error: 'max_steps must be a number' },
      // Shown literally: `_` is escaped.
      /frognano\.yml` is not valid: max\\_steps/,
    ],
    [{ outcome: 'clone_failed', error: 'repository not found' }, /cloning the repository failed/],
    [
      { outcome: 'sandbox_failed', error: 'image missing' },
      /sandbox could not be started: image missing/,
    ],
    [
      { violations: [{ rule: 'blocked_path', detail: '.github/workflows/ci.yml' }] },
      /paths the bot may not change.*\.github\/workflows\/ci\.yml/,
    ],
  ] as const)('explains %j', (overrides, expected) => {
    const state = describeResult(runResult(overrides as never));
    expect(state?.kind).toBe('failed');
    expect(renderStatus(state!)).toMatch(expected);
  });

  it('reports an empty patch with the final message, and a missing test command', () => {
    const state = describeResult(
      runResult({
        patch: '',
        testCommand: undefined,
        finalMessage: 'I could not find the bug, @someone.',
      }),
    );
    const text = renderStatus(state!);
    expect(text).toContain('no pull request: the model finished without changing any file.');
    expect(text).toContain('No test command was configured or detected either.');
    expect(text).toContain('> I could not find the bug, @&#8203;someone.');
  });

  it('shows a forged final message as inert quoted text: no alert, heading, link or table', () => {
    const state = describeResult(runResult({ patch: '', finalMessage: FORGED_MESSAGE }));
    const text = renderStatus(state!);
    const tree = markdownTree(text);
    expect(tree.children.filter((n) => n.type === 'heading')).toEqual([]);
    const quotes = tree.children.filter((n) => n.type === 'blockquote');
    expect(quotes).toHaveLength(1);
    expect(new Set(nodeTypes(quotes[0]!))).toEqual(new Set(['paragraph', 'text']));
    expect(plainText(quotes[0]!)).toContain('# ✅ Security review: APPROVED');
    expect(text).not.toMatch(/^> \[!IMPORTANT\]/m);
    // Nothing after the quote comes from the model: the quote ends before our retry hint.
    const after = tree.children.slice(tree.children.indexOf(quotes[0]!) + 1);
    expect(after.map((n) => plainText(n)).join('\n')).not.toMatch(/APPROVED|carriage/);
  });

  it('keeps a multi-line error text on the failure line: no heading, no alert', () => {
    const state = describeResult(
      runResult({
        outcome: 'sandbox_failed',
        error: 'boom\n\n> [!IMPORTANT]\n# ✅ Security review: APPROVED\r## more',
      }),
    );
    const tree = markdownTree(renderStatus(state!));
    expect(nodeTypes(tree)).not.toContain('heading');
    expect(nodeTypes(tree)).not.toContain('blockquote');
  });

  it('shows terminal escapes and other control characters in model text as visible escapes', () => {
    // summary.md carries the same text, and people `cat` it in a terminal.
    const state = describeResult(
      runResult({ patch: '', finalMessage: 'done \u001b[2J\u001b]0;pwned\u0007 \u009b31m ok\tx' }),
    );
    const text = renderStatus(state!);
    // eslint-disable-next-line no-control-regex -- asserting their absence
    expect(text).not.toMatch(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/);
    expect(plainText(markdownTree(text))).toContain('done \\x1b[2J\\x1b]0;pwned\\x07 \\x9b31m ok');
  });

  it('keeps a policy violation on its line when the file name holds carriage returns', () => {
    // git allows \r in file names; a lone \r ends a Markdown line, and block structure is
    // read before code spans: "\r\r# …" inside inline code would start a heading.
    const name = '.github/workflows/x\r\r# ✅ Security review: APPROVED\r\r> [!IMPORTANT]\r> ok';
    const state = describeResult(
      runResult({
        violations: [{ rule: 'blocked_path', detail: `${name} matches blocked path .github/**` }],
      }),
    );
    const tree = markdownTree(renderStatus(state!));
    expect(nodeTypes(tree)).not.toContain('heading');
    expect(nodeTypes(tree)).not.toContain('blockquote');
  });

  it('defuses mentions, references, images and HTML in error texts shown as prose', () => {
    for (const outcome of [
      'sandbox_failed',
      'model_unreachable',
      'clone_failed',
      'setup_failed',
    ] as const) {
      const state = describeResult(
        runResult({
          outcome,
          error: 'tool helper died: @everyone see #1 ![x](https://evil.example/p.png) <img src=x>',
        }),
      );
      const text = renderStatus(state!);
      expect(text).toContain('tool helper died');
      expect(text).not.toMatch(/@everyone|#1\b|!\[x\]\(|<img/);
    }
  });

  it('fails a run whose patch could not be captured, with the reason', () => {
    const state = describeResult(
      runResult({
        outcome: 'capture_failed',
        patch: '',
        error:
          "the patch could not be captured: patch capture: `git add` did not finish before the run's deadline",
      }),
    );
    expect(state).toMatchObject({ kind: 'failed' });
    expect(renderStatus(state!)).toContain(
      "its change could not be read out of the sandbox: the patch could not be captured: patch capture: \\`git add\\` did not finish before the run's deadline.",
    );
  });

  it("says a pytest run without its report failed, and shows the report's counts", () => {
    const line = verificationLine(
      runResult({
        verifyBefore: {
          ...runResult().verifyBefore!,
          report: { present: true, tests: 2, failures: 1, errors: 0, skipped: 0, problem: 'x' },
        },
        verifyAfter: {
          ...runResult().verifyAfter!,
          report: {
            present: false,
            tests: 0,
            failures: 0,
            errors: 0,
            skipped: 0,
            problem: 'no test report: the test process exited before pytest wrote its report',
          },
        },
      }),
    );
    expect(line).toBe(
      'Tests `python -m pytest -q`: before failed (exit 1, pytest report: 2 tests, 1 failure, 0 errors) → after failed (exit 0, no test report: the test process exited before pytest wrote its report).',
    );
  });

  it('never shows a registered secret, whichever error text carries it', () => {
    const secret = 'model-api-key-0123456789abcdef';
    registerSecret(secret);
    for (const outcome of ['model_unreachable', 'sandbox_failed', 'clone_failed'] as const) {
      const state = describeResult(
        runResult({ outcome, error: `POST https://llm.example/v1 with key ${secret} failed` }),
      );
      expect(renderStatus(state!)).not.toContain(secret);
    }
    const body = renderPrBody({
      result: runResult({
        error: secret,
        testCommand: { command: `pytest --key=${secret}`, source: 'config' },
      }),
      issueNumber: 1,
      triggeredBy: 'a',
      model: `m ${secret}`,
    });
    expect(body).not.toContain(secret);
  });

  it('lets a good result through to publishing and maps cancel', () => {
    expect(describeResult(runResult())).toBeUndefined();
    expect(describeResult(runResult({ outcome: 'cancelled' }))).toEqual({ kind: 'cancelled' });
  });
});

describe('ensureStatusComment', () => {
  it('finds our comment by the marker (bots only) and edits it in place', async () => {
    nock(API)
      .get('/repos/o/r/issues/5/comments')
      .query({ per_page: 100 })
      .reply(200, [
        {
          id: 1,
          body: `${STATUS_MARKER} quoted by a human`,
          user: { login: 'mallory', type: 'User' },
        },
        { id: 2, body: `${STATUS_MARKER}\nold`, user: { login: 'frognano[bot]', type: 'Bot' } },
      ])
      .patch('/repos/o/r/issues/comments/2', { body: 'new' })
      .reply(200, { id: 2 });
    expect(await ensureStatusComment(testOctokit(), issue, 'new')).toBe(2);
  });

  it('looks at the last page of long threads, then creates one when none exists', async () => {
    nock(API)
      .get('/repos/o/r/issues/5/comments')
      .query({ per_page: 100 })
      .reply(200, [], {
        link: `<${API}/repositories/1/issues/5/comments?per_page=100&page=3>; rel="last"`,
      })
      .get('/repos/o/r/issues/5/comments')
      .query({ per_page: 100, page: 3 })
      .reply(200, [])
      .post('/repos/o/r/issues/5/comments', { body: 'hello' })
      .reply(201, { id: 99 });
    expect(await ensureStatusComment(testOctokit(), issue, 'hello')).toBe(99);
  });

  it('starts its own comment when the marked one belongs to another App', async () => {
    nock(API)
      .get('/repos/o/r/issues/5/comments')
      .query({ per_page: 100 })
      .reply(200, [
        { id: 4, body: `${STATUS_MARKER}\nspoof`, user: { login: 'other[bot]', type: 'Bot' } },
      ])
      .patch('/repos/o/r/issues/comments/4', { body: 'ours' })
      .reply(403, { message: 'Resource not accessible by integration' })
      .post('/repos/o/r/issues/5/comments', { body: 'ours' })
      .reply(201, { id: 12 });
    expect(await ensureStatusComment(testOctokit(), issue, 'ours')).toBe(12);
  });

  it('does not post a second comment when GitHub applied the POST but answered 502', async () => {
    // GitHub's side: the comments that exist. The first POST is applied, then answered 502.
    const stored: { id: number; body: string; user: object; performed_via_github_app: object }[] =
      [];
    let posts = 0;
    nock(API)
      .get('/repos/o/r/issues/5/comments')
      .query({ per_page: 100 })
      .times(2)
      .reply(200, () => stored)
      .post('/repos/o/r/issues/5/comments')
      .times(2)
      .reply((_uri, body) => {
        posts++;
        const id = 70 + stored.length;
        stored.push({
          id,
          body: (body as { body: string }).body,
          user: { login: 'frognano[bot]', type: 'Bot' },
          performed_via_github_app: { id: 1 },
        });
        return posts === 1 ? [502, { message: 'Bad Gateway' }] : [201, { id }];
      })
      .patch('/repos/o/r/issues/comments/70', { body: `${STATUS_MARKER}\nqueued` })
      .reply(200, { id: 70 });
    const budget = new RestBudget();
    const octokit = budget.attach(retryingTestOctokit());
    expect(await ensureStatusComment(octokit, issue, `${STATUS_MARKER}\nqueued`)).toBe(70);
    expect(stored.map((c) => c.id)).toEqual([70]);
    expect(posts).toBe(1);
    expect(budget.spent).toBe(4); // list, POST (502), list, PATCH
    // The second POST mock stays unused on purpose: drop it before the strict check.
    nock.cleanAll();
  });

  it("edits this App's marked comment, not another App's that comes first (real App auth)", async () => {
    const probot = new Probot({
      appId: 1,
      privateKey: testPrivateKey(),
      Octokit: AppTestOctokit,
      log: silentLog,
    });
    nock(API)
      .post('/app/installations/1/access_tokens')
      .reply(201, {
        token: 'ghs_statusCommentTest0000000000000000',
        expires_at: '2999-01-01T00:00:00Z',
      })
      .get('/repos/o/r/issues/5/comments')
      .query({ per_page: 100 })
      .reply(200, [
        {
          id: 4,
          body: `${STATUS_MARKER}\nspoof`,
          user: { login: 'other[bot]', type: 'Bot' },
          performed_via_github_app: { id: 99, slug: 'other' },
        },
        {
          id: 6,
          body: `${STATUS_MARKER}\nours`,
          user: { login: 'frognano[bot]', type: 'Bot' },
          performed_via_github_app: { id: 1, slug: 'frognano' },
        },
      ])
      .patch('/repos/o/r/issues/comments/6', { body: 'new' })
      .reply(200, { id: 6 });
    const octokit = (await probot.auth(1)) as GitHubClient;
    expect(await ensureStatusComment(octokit, issue, 'new')).toBe(6);
  });

  it('recreates the comment when the known one was deleted', async () => {
    nock(API)
      .patch('/repos/o/r/issues/comments/7')
      .reply(404, { message: 'Not Found' })
      .post('/repos/o/r/issues/5/comments')
      .reply(201, { id: 8 });
    expect(await ensureStatusComment(testOctokit(), issue, 'x', 7)).toBe(8);
  });
});

describe('StatusReporter', () => {
  it('coalesces updates within the throttle window and always sends the final state', async () => {
    const bodies: string[] = [];
    nock(API)
      .patch('/repos/o/r/issues/comments/3', (b: { body: string }) => bodies.push(b.body) > 0)
      .times(2)
      .reply(200, { id: 3 });
    const budget = new RestBudget();
    const octokit = budget.attach(testOctokit());
    const reporter = new StatusReporter({
      octokit,
      issue,
      commentId: () => 3,
      throttleMs: 60_000,
      budget,
      reserve: 2,
      log: silentLog,
    });
    reporter.update({ kind: 'running', phase: 'clone' });
    await new Promise((r) => setTimeout(r, 20));
    await reporter.flush();
    for (let step = 1; step <= 50; step++)
      reporter.update({ kind: 'running', phase: 'agent', step, maxSteps: 150 });
    await reporter.finish({ kind: 'done', prNumber: 1, prUrl: 'https://x/pull/1', partial: false });
    expect(bodies).toHaveLength(2);
    expect(bodies[0]).toContain('cloning the repository');
    expect(bodies[1]).toContain('opened draft pull request #1');
    expect(budget.used).toBe(2);
  });

  it('drops intermediate updates when only the reserve of the REST budget is left', async () => {
    nock(API).patch('/repos/o/r/issues/comments/3').reply(200, { id: 3 });
    const budget = new RestBudget(20, 18);
    const reporter = new StatusReporter({
      octokit: budget.attach(testOctokit()),
      issue,
      commentId: () => 3,
      throttleMs: 0,
      budget,
      reserve: 2,
      log: silentLog,
    });
    reporter.update({ kind: 'running', phase: 'setup' });
    await new Promise((r) => setTimeout(r, 20));
    await reporter.finish({ kind: 'cancelled' });
    expect(budget.used).toBe(19);
  });
});
