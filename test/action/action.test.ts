// `frognano action` end to end, as a workflow runs it: the CLI in a child process with a runner's
// environment and event file (payloads from @octokit/webhooks-examples), the workflow token,
// the strict fake GitHub, a real git remote behind smart HTTP, the scripted model, the real
// pipeline. Every workflow run gets a fresh RUNNER_TEMP.
import examples from '@octokit/webhooks-examples';
import { afterEach, describe, expect, it } from 'vitest';
import { PYTHON, REPO_PATH } from '../github/helpers/app-harness.js';
import { commentPayload, labeledPayload } from '../github/helpers/payloads.js';
import { startActionHarness, type ActionHarness } from './helpers/action-harness.js';
import {
  MAINTAINER,
  mockNoOwnerConfig,
  mockPermissions,
  mockStatusThread,
  mockTriggerReactions,
  READER,
} from './helpers/action-github.js';
import {
  expectStrictGitHub,
  fixScript,
  git,
  labeled,
  labelOpensOnePullRequest,
} from './helpers/label-run.js';

let harness: ActionHarness | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

describe('frognano action', () => {
  it('a label opens exactly one draft pull request, and the outputs name it', async () => {
    harness = await startActionHarness({ script: fixScript(PYTHON) });
    await labelOpensOnePullRequest(harness, PYTHON);
  }, 120_000);

  it("a reader's /frognano retry gets the polite line and no run", async () => {
    harness = await startActionHarness();
    mockPermissions(harness.gh);
    mockStatusThread(harness.gh, 1);
    const payload = commentPayload({
      body: '/frognano retry',
      sender: READER,
      commenter: READER,
      installationId: null,
    });
    const run = await harness.run('issue_comment', payload);
    expect(run.code, run.stderr).toBe(0);
    expect(run.outputs).toEqual({
      outcome: 'refused',
      'run-id': '',
      'pr-number': '',
      'pr-url': '',
    });
    expect(harness.gh.comments).toEqual([
      `Sorry @${READER.login}, only people with write access to this repository can start or cancel frognano runs.`,
    ]);
    expect(run.summary).toContain('only people with write access');
    expect(harness.gh.statusBodies).toEqual([]);
    expect(harness.model.chatRequests).toEqual([]);
    expect(git(harness, 'branch', '--list', 'frognano/*').trim()).toBe('');
    expectStrictGitHub(harness);
  }, 60_000);

  it('an unrelated event exits 0 and does nothing: no GitHub call, no model call', async () => {
    harness = await startActionHarness();
    const events: [string, unknown][] = [
      ['issues', labeledPayload({ label: 'bug', sender: MAINTAINER, installationId: null })],
      ['issue_comment', commentPayload({ body: 'Thanks!', installationId: null })],
      ['push', pushPayload()],
    ];
    for (const [event, payload] of events) {
      const run = await harness.run(event, payload);
      expect(run.code, run.stderr).toBe(0);
      expect(run.outputs).toEqual({
        outcome: 'ignored',
        'run-id': '',
        'pr-number': '',
        'pr-url': '',
      });
      expect(run.summary).toContain(`Nothing to do for this \`${event}\` event`);
    }
    expect(harness.fake.arrivals).toEqual([]);
    expect(harness.model.requests).toEqual([]);
  }, 60_000);

  it('a model that answers 500 exits 1 with the reason in the step summary', async () => {
    harness = await startActionHarness({
      onExhausted: { kind: 'error', status: 500, body: { error: { message: 'GPU on fire' } } },
    });
    mockPermissions(harness.gh);
    mockTriggerReactions(harness.gh);
    mockNoOwnerConfig(harness.gh);
    const thread = mockStatusThread(harness.gh, 1);
    const run = await harness.run('issues', labeled(), { LOG_FORMAT: 'json' });
    expect(run.code, run.stderr).toBe(1);
    // LOG_FORMAT=json: the log lines are JSON for a collector; the last line is the one reason.
    const logLines = run.stderr.trim().split('\n').slice(0, -1);
    expect(logLines.length).toBeGreaterThan(0);
    for (const line of logLines) expect(() => JSON.parse(line), line).not.toThrow();
    const reason = 'the run failed: the model endpoint stopped answering during the run';
    expect(thread.comment?.body).toContain(reason);
    expect(run.summary).toContain(reason);
    expect(run.outputs).toMatchObject({
      outcome: 'llm_query_error',
      'pr-number': '',
      'pr-url': '',
    });
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(
      /^frognano: the run failed: the model endpoint stopped answering/,
    );
    expect(git(harness, 'branch', '--list', 'frognano/*').trim()).toBe('');
    expectStrictGitHub(harness);
  }, 90_000);

  it('a permission check GitHub refuses exits 1 and says so, with no run', async () => {
    harness = await startActionHarness();
    harness.gh.intercept({
      method: 'GET',
      path: `${REPO_PATH}/collaborators/Codertocat/permission`,
      status: 403,
      auth: 'installation',
      reply: () => ({ message: 'Resource not accessible by integration' }),
    });
    const run = await harness.run('issues', labeled());
    expect(run.code, run.stderr).toBe(1);
    expect(run.outputs.outcome).toBe('intake_failed');
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(
      /^frognano: GitHub could not be asked whether the sender may start runs/,
    );
    expect(run.summary).toContain('GitHub could not be asked whether the sender may start runs');
    expect(harness.model.requests).toEqual([]);
    expectStrictGitHub(harness);
  }, 60_000);

  it('a missing GITHUB_EVENT_PATH exits 2 with one line naming it', async () => {
    harness = await startActionHarness();
    const run = await harness.run('issues', labeled(), { GITHUB_EVENT_PATH: undefined });
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toEqual([
      'frognano: GITHUB_EVENT_PATH is not set: run `frognano action` as a step of a GitHub Actions workflow, which sets it',
    ]);
    expect(run.outputs).toEqual({});
    expect(harness.fake.arrivals).toEqual([]);
  }, 60_000);

  it.each([
    [{ GITHUB_TOKEN: undefined }, 'GITHUB_TOKEN (or APP_ID and PRIVATE_KEY) is not set'],
    [
      { GITHUB_REPOSITORY: 'Hello-World' },
      'GITHUB_REPOSITORY must be owner/name (got "Hello-World")',
    ],
    [{ APP_ID: '1' }, 'PRIVATE_KEY is not set, but APP_ID is'],
    [{ FROGNANO_SANDBOX: 'vm' }, 'FROGNANO_SANDBOX must be docker or local (got "vm")'],
    [{ GITHUB_API_URL: 'api.github.com' }, 'GITHUB_API_URL must be an http(s) URL'],
    [
      { GITHUB_REPOSITORY: 'someone/else' },
      "GITHUB_REPOSITORY (someone/else) is not the event's repository (Codertocat/Hello-World)",
    ],
  ])(
    'a bad environment (%o) exits 2 with one line',
    async (env, line) => {
      harness = await startActionHarness();
      const run = await harness.run('issues', labeled(), env);
      expect(run.code).toBe(2);
      const lines = run.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(line);
      expect(harness.fake.arrivals).toEqual([]);
    },
    60_000,
  );
});

/** A `push` event from @octokit/webhooks-examples: nothing frognano listens to. */
function pushPayload(): unknown {
  type Definition = { name: string; examples: unknown[] };
  const all = (
    Array.isArray(examples) ? examples : (examples as { default: unknown }).default
  ) as Definition[];
  const push = all.find((d) => d.name === 'push')?.examples[0];
  if (!push) throw new Error('no push example');
  return structuredClone(push);
}
