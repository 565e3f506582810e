// The follow-up every workflow test of it makes: a maintainer's review with `/frognano` on the
// bot's PR #7, handled by a workflow run on a fresh runner, that adds one commit to the branch.
import { expect } from 'vitest';
import { finalAnswer, toolCall, type ScriptStep } from '../../support/scripted-model-server.js';
import { REPO_PATH } from '../../github/helpers/app-harness.js';
import { reviewPayload } from '../../github/helpers/payloads.js';
import type { ActionHarness } from './action-harness.js';
import { ACTIONS_BOT, MAINTAINER, mockStatusThread } from './action-github.js';
import { mockBotPullRequest } from './bot-pull-request.js';
import { expectStrictGitHub, git, ISSUE, type FirstRun } from './label-run.js';

/** What the model does in the follow-up: document add(). */
export const DOCSTRING: ScriptStep[] = [
  toolCall('Edit', {
    file_path: 'calc.py',
    old_string: 'def add(a, b):\n',
    new_string: 'def add(a, b):\n    """Return a + b."""\n',
  }),
  finalAnswer('Documented add().'),
];

/** The review a maintainer submits on PR #7, as the runner hands it to the workflow. */
export function review(first: FirstRun, body = '/frognano Please document add().') {
  const payload = reviewPayload({
    sender: MAINTAINER,
    headSha: first.head,
    body,
    state: 'changes_requested',
  });
  delete payload.installation;
  return payload;
}

/** The follow-up's first request to the model: its task text. */
export function followUpTask(h: ActionHarness): string {
  const request = h.model.chatRequests.find((r) =>
    String(r.body?.messages?.[1]?.content).includes('previous attempt'),
  );
  return String(request?.body?.messages?.[1]?.content);
}

/** The review on PR #7 adds one commit on top of the first run's, briefed from GitHub alone. */
export async function reviewAddsOneCommit(h: ActionHarness, first: FirstRun): Promise<void> {
  const thread = mockStatusThread(h.gh, 7);
  const writes = mockBotPullRequest(
    h.gh,
    { number: 7, head: first.head, base: h.base, body: first.prBody, createdAt: first.createdAt },
    { title: ISSUE.issueTitle, body: ISSUE.issueBody },
  );
  const calls = h.gh.calls.length;

  const run = await h.run('pull_request_review', review(first));

  expect(run.code, run.stderr).toBe(0);
  expect(run.outputs).toMatchObject({
    outcome: 'revision',
    'pr-number': '7',
    'pr-url': `${h.git.url}/Codertocat/Hello-World/pull/7`,
  });
  // One new commit on top of the first, by the bot, with the docstring.
  const head = git(h, 'rev-parse', 'refs/heads/frognano/issue-1').trim();
  expect(git(h, 'rev-parse', `${head}^`).trim()).toBe(first.head);
  expect(git(h, 'rev-list', '--count', `${h.base}..${head}`).trim()).toBe('2');
  expect(git(h, 'show', `${head}:calc.py`)).toContain('"""Return a + b."""');
  expect(git(h, 'log', '-1', '--format=%an%n%s', head)).toContain(
    `${ACTIONS_BOT}\nfrognano: revision 2: add() subtracts instead of adding (#1)`,
  );
  // Briefed from GitHub: the issue (sanitized), the previous diff against the base, the feedback.
  const task = followUpTask(h);
  expect(task.startsWith('add() subtracts instead of adding\n\n`add(2, 3)` returns -1')).toBe(true);
  expect(task).not.toContain('SYSTEM');
  expect(task).toContain('-    return a - b\n+    return a + b');
  expect(task).toContain('Please document add().');
  // The PR body gained the revision; the status comment on the PR says so.
  expect(writes.bodies.at(-1)).toContain('### Revision 2 (latest)');
  expect(thread.comment?.body).toContain(`pushed revision 2 to this pull request: ${head}.`);
  expect(run.summary).toContain('pushed revision 2');
  const followUpCalls = h.gh.calls.slice(calls);
  expect(followUpCalls).toContain(`GET ${REPO_PATH}/compare/${h.base}...${first.head}`);
  expectStrictGitHub(h);
}
