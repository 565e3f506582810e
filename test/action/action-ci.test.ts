// `/frognano ci` in a workflow run. With the workflow token GitHub starts no workflow for what it
// pushes, so the bot answers in one comment how to pass the App's credentials and pushes nothing;
// a reader is refused as for any other command. Real `frognano action` child process, the strict
// fake GitHub, a real git remote.
import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { WORKFLOW_TOKEN_STARTS_NO_CI } from '../../src/action/action-ci.js';
import { commentPayload } from '../github/helpers/payloads.js';
import { startActionHarness, type ActionHarness } from './helpers/action-harness.js';
import {
  MAINTAINER,
  READER,
  mockPermissions,
  mockStatusThread,
  mockTriggerReactions,
} from './helpers/action-github.js';
import { mockBotPullRequest } from './helpers/bot-pull-request.js';
import { ISSUE } from './helpers/label-run.js';

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

async function botPullRequest(): Promise<ActionHarness> {
  harness = await startActionHarness();
  const h = harness;
  mockPermissions(h.gh);
  mockTriggerReactions(h.gh);
  mockStatusThread(h.gh, 7);
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
  }, 60_000);

  it("a reader's /frognano ci is refused with the usual line", async () => {
    const h = await botPullRequest();
    const before = refs(h);

    const run = await h.run('issue_comment', ciComment(READER));

    expect(run.code, run.stderr).toBe(0);
    expect(run.outputs).toMatchObject({ outcome: 'refused', 'run-id': '' });
    expect(h.gh.comments).toEqual([
      `Sorry @${READER.login}, only people with write access to this repository can start or cancel frognano runs.`,
    ]);
    expect(refs(h)).toBe(before);
  }, 60_000);
});
