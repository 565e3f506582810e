// `/frognano ci` on the bot's draft pull request, on real parts: the App's HTTP server with
// Probot's real auth, the queue, the pipeline (local sandbox), the scripted model, a real git
// remote over smart HTTP. GitHub's REST API is mocked strictly. A label publishes PR #7 for
// issue #1 (its commit says `[skip ci]`); a maintainer's `/frognano ci` pushes one empty commit
// on top, naming who asked and without `[skip ci]`. Readers and foreign pull requests get the
// polite lines and nothing is pushed.
import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { finalAnswer, toolCall } from '../support/scripted-model-server.js';
import {
  mockBotIdentity,
  mockGitHub,
  mockPlainComments,
  mockPullRequest,
  mockStatusComment,
  newGitHubMock,
  OWNER,
  PYTHON,
  REPO,
  REPO_PATH,
  startHarness,
  type GitHubMock,
  type Harness,
} from './helpers/app-harness.js';
import { commentPayload, labeledPayload, pullCommentPayload } from './helpers/payloads.js';
import { useStrictNock } from './helpers/strict-nock.js';

useStrictNock();

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

const maintainer = { login: 'Codertocat', id: 21031067 };
const reader = { login: 'outsider', id: 99 };

function git(...args: string[]): string {
  return execFileSync('git', args, { cwd: harness!.bare, encoding: 'utf8' });
}

function branchHead(): string {
  return git('rev-parse', 'refs/heads/frognano/issue-1').trim();
}

/** Who may write: the maintainer; the reader may only read. */
function mockPermissions(gh: GitHubMock, logins: string[]): void {
  const permissions: Record<string, string> = {
    [maintainer.login]: 'admin',
    [reader.login]: 'read',
  };
  for (const login of logins) {
    const permission = permissions[login]!;
    gh.intercept({
      method: 'GET',
      path: `${REPO_PATH}/collaborators/${login}/permission`,
      status: 200,
      auth: 'installation',
      persist: true,
      reply: () => ({ permission, role_name: permission }),
    });
  }
}

/** PR #N as GitHub shows it: the bot's on `frognano/issue-1`, or a human's on `feature`. */
function mockPull(gh: GitHubMock, number: number, head: string, ours: boolean): void {
  gh.intercept({
    method: 'GET',
    path: `${REPO_PATH}/pulls/${number}`,
    status: 200,
    persist: true,
    auth: 'installation',
    reply: () => ({
      number,
      title: ours ? 'frognano: add() subtracts instead of adding' : 'A human change',
      state: 'open',
      draft: ours,
      body: '',
      head: {
        ref: ours ? 'frognano/issue-1' : 'feature',
        sha: head,
        repo: { full_name: `${OWNER}/${REPO}` },
      },
      base: { ref: 'master' },
      user: ours ? { login: 'frognano[bot]', type: 'Bot' } : { login: 'Codertocat', type: 'User' },
    }),
  });
}

describe('/frognano ci on the draft pull request', () => {
  it('pushes one empty commit without [skip ci], naming who asked, and says which', async () => {
    const gh = newGitHubMock();
    mockGitHub({ permission: false }, gh);
    mockPermissions(gh, [maintainer.login, reader.login]);
    // Probot's real App auth: the App asks GitHub who it is, git wants minted tokens.
    mockBotIdentity(gh);
    mockStatusComment(gh, 1);
    mockPullRequest(gh, 1, 7, () => undefined);
    harness = await startHarness({
      script: [
        toolCall('Edit', {
          file_path: 'calc.py',
          old_string: 'return a - b',
          new_string: 'return a + b',
        }),
        finalAnswer('Fixed add().'),
      ],
      python: PYTHON,
      gitHttp: gh,
    });
    const label = labeledPayload({
      sender: maintainer,
      issueTitle: 'add() subtracts instead of adding',
      issueBody: '`add(2, 3)` returns -1; it should return 5.',
    });
    expect(await harness.deliver('issues', label)).toBe(200);
    await harness.app.intake!.idle();
    await harness.app.workers!.idle();
    expect((await harness.app.queue!.list())[0]).toMatchObject({ outcome: 'pull_request' });
    const published = branchHead();
    // The bot's own commit skips CI: that is why the command exists.
    expect(git('log', '-1', '--format=%B', published)).toContain('[skip ci]');

    // The ci handler asks who the App is once, as `use` does.
    mockBotIdentity(gh);
    mockPull(gh, 7, published, true);
    mockPlainComments(gh, 7, 2);
    const ci = pullCommentPayload({ sender: maintainer, body: '/frognano ci' });
    expect(await harness.deliver('issue_comment', ci, 'ci-1')).toBe(200);
    await harness.app.intake!.idle();

    const head = branchHead();
    expect(head).not.toBe(published);
    expect(git('rev-list', '--parents', '-n', '1', head).trim()).toBe(`${head} ${published}`);
    expect(git('rev-parse', `${head}^{tree}`)).toBe(git('rev-parse', `${published}^{tree}`));
    const message = git('log', '-1', '--format=%B', head);
    expect(message).toMatch(/^frognano: run CI \(requested by @Codertocat\)\n/);
    expect(message).not.toMatch(/skip ci|ci skip/i);
    expect(git('log', '-1', '--format=%an', head).trim()).toBe('frognano[bot]');
    expect(gh.comments.at(-1)).toBe(
      `@Codertocat, pushed commit ${head.slice(0, 12)} (empty, without \`[skip ci]\`): the repository's workflows now run on this pull request.`,
    );

    // A reader's `/frognano ci` is refused with the usual line; nothing is pushed.
    const byReader = pullCommentPayload({ sender: reader, body: '/frognano ci' });
    expect(await harness.deliver('issue_comment', byReader, 'ci-reader')).toBe(200);
    await harness.app.intake!.idle();
    expect(gh.comments.at(-1)).toBe(
      'Sorry @outsider, only people with write access to this repository can start or cancel frognano runs.',
    );
    expect(branchHead()).toBe(head);
    // No run came of any of it.
    expect(await harness.app.queue!.list()).toHaveLength(1);
  }, 180_000);

  it('on a pull request the App did not open: the polite line, nothing pushed; on an issue: ignored', async () => {
    const gh = newGitHubMock();
    mockGitHub({ permission: false, reactions: false }, gh);
    mockPermissions(gh, [maintainer.login]);
    mockPull(gh, 9, 'a'.repeat(40), false);
    mockPlainComments(gh, 9);
    harness = await startHarness({ script: [] });

    const foreign = pullCommentPayload({ sender: maintainer, body: '/frognano ci', prNumber: 9 });
    expect(await harness.deliver('issue_comment', foreign)).toBe(200);
    const onIssue = commentPayload({ body: '/frognano ci', sender: maintainer });
    expect(await harness.deliver('issue_comment', onIssue)).toBe(200);
    await harness.app.intake!.idle();
    await harness.app.workers!.idle();

    expect(gh.comments).toEqual([
      'Sorry @Codertocat, frognano only revises the draft pull requests it opened for an issue, and this pull request is not one of them.',
    ]);
    expect(await harness.app.queue!.list()).toEqual([]);
    expect(harness.model!.chatRequests).toEqual([]);
  }, 60_000);
});
