// `/frognano ci` in a workflow run. With the workflow token GitHub starts no workflow for what it
// pushes, so the bot answers in one comment how to pass the App's credentials and pushes nothing;
// a reader is refused as for any other command. Real `frognano action` child process, the strict
// fake GitHub, a real git remote.
import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { WORKFLOW_TOKEN_STARTS_NO_CI } from '../../src/action/action-replies.js';
import { mockBotIdentity, mockGitHub, REPO_PATH } from '../github/helpers/app-harness.js';
import { testPrivateKey } from '../github/helpers/github.js';
import { commentPayload } from '../github/helpers/payloads.js';
import {
  startActionHarness,
  WORKFLOW_TOKEN,
  type ActionHarness,
} from './helpers/action-harness.js';
import {
  MAINTAINER,
  READER,
  mockPermissions,
  mockStatusThread,
  mockTriggerReactions,
} from './helpers/action-github.js';
import { mockBotPullRequest } from './helpers/bot-pull-request.js';
import { expectStrictGitHub, git, ISSUE } from './helpers/label-run.js';

let harness: ActionHarness | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

/** `/frognano ci` as a comment on PR #7 (GitHub sends it as an issue comment). */
function ciComment(sender: { login: string; id: number }) {
  const payload = commentPayload({
    body: '/frognano ci',
    issueNumber: 7,
    issueTitle: 'frognano: add() subtracts instead of adding',
    pullRequest: true,
    sender,
    commenter: sender,
    installationId: null,
  });
  (payload.comment as Record<string, unknown>).created_at = new Date().toISOString();
  return payload;
}

/** PR #7, the bot's; `asked`: whether GitHub is asked about it (a reader's command is not). */
async function botPullRequest(asked = true): Promise<ActionHarness> {
  harness = await startActionHarness();
  const h = harness;
  mockPermissions(h.gh);
  mockTriggerReactions(h.gh);
  mockStatusThread(h.gh, 7);
  if (!asked) return h;
  mockBotPullRequest(
    h.gh,
    { number: 7, head: h.base, base: h.base, body: '', createdAt: new Date().toISOString() },
    { title: ISSUE.issueTitle, body: ISSUE.issueBody },
  );
  return h;
}

function refs(h: ActionHarness): string {
  return execFileSync('git', ['for-each-ref'], { cwd: h.bare, encoding: 'utf8' });
}

describe('frognano action: /frognano ci', () => {
  it('with the workflow token: one comment on how to pass app-id/private-key, nothing pushed', async () => {
    const h = await botPullRequest();
    const before = refs(h);

    const run = await h.run('issue_comment', ciComment(MAINTAINER));

    expect(run.code, run.stderr).toBe(0);
    expect(run.outputs).toMatchObject({ outcome: 'ci_answered', 'run-id': '' });
    expect(h.gh.comments).toEqual([`@${MAINTAINER.login}, ${WORKFLOW_TOKEN_STARTS_NO_CI}`]);
    expect(WORKFLOW_TOKEN_STARTS_NO_CI).toContain('app-id');
    expect(WORKFLOW_TOKEN_STARTS_NO_CI).toContain('private-key');
    expect(h.gh.reactions).toEqual(['eyes']);
    expect(refs(h)).toBe(before);
    expect(h.model.chatRequests).toEqual([]);
    expectStrictGitHub(h);
  }, 60_000);

  it("a reader's /frognano ci is refused with the usual line", async () => {
    const h = await botPullRequest(false);
    const before = refs(h);

    const run = await h.run('issue_comment', ciComment(READER));

    expect(run.code, run.stderr).toBe(0);
    expect(run.outputs).toMatchObject({ outcome: 'refused', 'run-id': '' });
    expect(h.gh.comments).toEqual([
      `Sorry @${READER.login}, only people with write access to this repository can start or cancel frognano runs.`,
    ]);
    expect(refs(h)).toBe(before);
    expectStrictGitHub(h);
  }, 60_000);

  it('with app-id/private-key: pushes the empty commit as the App, naming who asked', async () => {
    harness = await startActionHarness();
    const h = harness;
    h.gh.tokens.delete(WORKFLOW_TOKEN);
    // The bot's branch for issue #1, as a first run left it.
    git(h, 'update-ref', 'refs/heads/frognano/issue-1', h.base);
    mockGitHub({}, h.gh);
    mockBotIdentity(h.gh);
    h.gh.intercept({
      method: 'GET',
      path: `${REPO_PATH}/installation`,
      status: 200,
      auth: 'app',
      reply: () => ({ id: 1, app_id: 1, account: { login: 'Codertocat' } }),
    });
    mockStatusThread(h.gh, 7, 'frognano[bot]');
    mockBotPullRequest(
      h.gh,
      {
        number: 7,
        head: h.base,
        base: h.base,
        body: '',
        createdAt: new Date().toISOString(),
        author: 'frognano[bot]',
      },
      { title: ISSUE.issueTitle, body: ISSUE.issueBody },
    );

    const run = await h.run('issue_comment', ciComment(MAINTAINER), {
      APP_ID: '1',
      PRIVATE_KEY: testPrivateKey(),
    });

    expect(run.code, run.stderr).toBe(0);
    expect(run.outputs).toMatchObject({ outcome: 'ci_answered', 'run-id': '' });
    const head = git(h, 'rev-parse', 'refs/heads/frognano/issue-1').trim();
    expect(git(h, 'rev-list', '--parents', '-n', '1', head).trim()).toBe(`${head} ${h.base}`);
    expect(git(h, 'log', '-1', '--format=%an%n%B', head)).toMatch(
      /^frognano\[bot\]\nfrognano: run CI \(requested by @Codertocat\)\n/,
    );
    expect(git(h, 'log', '-1', '--format=%B', head)).not.toContain('skip ci');
    expect(h.gh.comments).toEqual([
      `@${MAINTAINER.login}, pushed commit ${head.slice(0, 12)} (empty, without \`[skip ci]\`): the repository's workflows now run on this pull request.`,
    ]);
    expect(h.model.chatRequests).toEqual([]);
    expectStrictGitHub(h);
  }, 60_000);
});
