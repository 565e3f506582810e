// GitHub misbehaving while the App publishes, on real parts (the App's server, the queue, the
// local sandbox pipeline, git behind smart HTTP) and behind Probot's real App auth: a secondary
// rate limit on creating the pull request, a comment POST that GitHub applied but answered 502,
// a push answered 502, a limit that outlasts the retries (resumed without the model), a crash
// mid-publish (resumed by the requeued run), and the clones such a crash leaves behind.
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  pendingPublishDir,
  type PendingPublish,
} from '../../../src/github/publishing/pending-publish.js';
import { SqliteStore } from '../../../src/queue/sqlite-store.js';
import type { IssueJob } from '../../../src/github/job.js';
import { finalAnswer, toolCall, type ScriptStep } from '../../support/scripted-model-server.js';
import {
  mockBotIdentity,
  mockGitHub,
  mockStatusComment,
  newGitHubMock,
  OWNER,
  REPO,
  REPO_PATH,
  startHarness,
  type GitHubMock,
  type Harness,
} from '../helpers/app-harness.js';
import { commentPayload, labeledPayload } from '../helpers/payloads.js';
import { useStrictNock } from '../helpers/strict-nock.js';

useStrictNock();

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

const maintainer = { login: 'Codertocat', id: 21031067 };
const SECONDARY = {
  message:
    'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
};

/** Fixes calc.py in two steps; a model request beyond these fails the run (script exhausted). */
function fixScript(): ScriptStep[] {
  return [
    toolCall('Edit', {
      file_path: 'calc.py',
      old_string: 'return a - b',
      new_string: 'return a + b',
    }),
    finalAnswer('Fixed add().'),
  ];
}

function prUrl(n: number): string {
  return `https://github.com/${OWNER}/${REPO}/pull/${n}`;
}

/** `GET /pulls` for the branch (none open), then the given answers to `POST /pulls`. */
function mockPullCreate(
  gh: GitHubMock,
  answers: { status: number; headers?: Record<string, string>; times?: number }[],
  prNumber: number,
): void {
  gh.intercept({
    method: 'GET',
    path: `${REPO_PATH}/pulls`,
    query: { head: `${OWNER}:frognano/issue-1`, state: 'open', per_page: 1 },
    status: 200,
    auth: 'installation',
    reply: () => [],
  });
  for (const answer of answers) {
    gh.intercept({
      method: 'POST',
      path: `${REPO_PATH}/pulls`,
      status: answer.status,
      headers: answer.headers,
      times: answer.times,
      auth: 'installation',
      reply: () =>
        answer.status === 201 ? { number: prNumber, html_url: prUrl(prNumber) } : SECONDARY,
    });
  }
}

function mockReviewRequest(gh: GitHubMock, prNumber: number): void {
  gh.intercept({
    method: 'POST',
    path: `${REPO_PATH}/pulls/${prNumber}/requested_reviewers`,
    status: 201,
    auth: 'installation',
    reply: () => ({}),
  });
}

function branchHead(h: Harness): string {
  return execFileSync('git', ['rev-parse', 'refs/heads/frognano/issue-1'], {
    cwd: h.bare,
    encoding: 'utf8',
  }).trim();
}

async function settle(h: Harness): Promise<void> {
  await h.app.intake!.idle();
  await h.app.workers!.idle();
}

describe('publishing through GitHub faults (real App auth)', () => {
  it('survives a 502 on an applied status comment, a 502 on the push and a secondary rate limit on the PR', async () => {
    const gh = newGitHubMock();
    mockGitHub({}, gh);
    mockBotIdentity(gh);
    // The status comment: GitHub creates it, then answers 502. What GitHub holds is listed.
    const stored: object[] = [];
    gh.intercept({
      method: 'GET',
      path: `${REPO_PATH}/issues/1/comments`,
      status: 200,
      times: 2,
      auth: 'installation',
      reply: () => stored,
    });
    gh.intercept({
      method: 'POST',
      path: `${REPO_PATH}/issues/1/comments`,
      status: 502,
      auth: 'installation',
      reply: (body) => {
        stored.push({
          id: 1001,
          body: body.body,
          user: { login: 'frognano[bot]', type: 'Bot' },
          performed_via_github_app: { id: 1, slug: 'frognano' },
        });
        gh.statusBodies.push(String(body.body));
        return { message: 'Server Error' };
      },
    });
    mockStatusComment(gh, 1, { known: true });
    // The pull request: a secondary rate limit asking for one second, then created.
    let created: Record<string, unknown> | undefined;
    mockPullCreate(gh, [{ status: 403, headers: { 'retry-after': '1' } }], 7);
    gh.intercept({
      method: 'POST',
      path: `${REPO_PATH}/pulls`,
      status: 201,
      auth: 'installation',
      reply: (body) => {
        created = body;
        return { number: 7, html_url: prUrl(7) };
      },
    });
    mockReviewRequest(gh, 7);

    harness = await startHarness({ script: fixScript(), gitHttp: gh });
    harness.git!.failPushes(1, 502);
    expect(await harness.deliver('issues', labeledPayload({ sender: maintainer }), 'f-1')).toBe(
      200,
    );
    await settle(harness);

    const [run] = await harness.app.queue!.list();
    expect(run).toMatchObject({ state: 'done', outcome: 'pull_request' });
    expect(created).toMatchObject({ head: 'frognano/issue-1', draft: true });
    // One status comment, edited to the end; the PR asked for twice, one second apart.
    expect(gh.calls.filter((c) => c === `POST ${REPO_PATH}/issues/1/comments`)).toHaveLength(1);
    expect(gh.statusBodies.at(-1)).toContain(`opened draft pull request #7 (${prUrl(7)})`);
    expect(gh.calls.filter((c) => c === `POST ${REPO_PATH}/pulls`)).toHaveLength(2);
    // The push went through on its second attempt.
    const pushes = harness.git!.urls.filter((u) => u.endsWith('/git-receive-pack'));
    expect(pushes.length).toBeGreaterThanOrEqual(2);
    expect(branchHead(harness)).toMatch(/^[0-9a-f]{40}$/);
    // Retries are counted: the run's record is never below what GitHub saw.
    expect((await harness.app.queue!.get(run!.id))!.restCalls).toBeGreaterThanOrEqual(
      gh.calls.length,
    );
    expect(gh.authFailures).toEqual([]);
    expect(readdirSync(pendingPublishDir(harness.dataDir))).toEqual([]);
    expect(readdirSync(join(harness.dataDir, 'publish'))).toEqual([]);
  }, 60_000);

  it('keeps a change whose PR a rate limit kept refusing, and a plain retry publishes it without the model', async () => {
    const gh = newGitHubMock();
    mockGitHub({}, gh);
    mockBotIdentity(gh);
    mockStatusComment(gh, 1);
    // Four refusals: the first try and its three retries.
    mockPullCreate(gh, [{ status: 403, headers: { 'retry-after': '1' }, times: 4 }], 8);

    harness = await startHarness({ script: fixScript(), gitHttp: gh });
    await harness.deliver('issues', labeledPayload({ sender: maintainer }), 'r-1');
    await settle(harness);
    const [first] = await harness.app.queue!.list();
    expect(first).toMatchObject({ state: 'failed', outcome: 'publish_failed' });
    const failed = gh.statusBodies.at(-1) ?? '';
    expect(failed).toContain('pushing the branch or opening the draft pull request failed');
    expect(failed).toContain(
      'The change is kept: comment `/frognano retry` with nothing after it to publish it without running the model again.',
    );
    expect(failed).toContain('secondary rate limit');
    const pushed = branchHead(harness);
    const kept = JSON.parse(
      readFileSync(join(pendingPublishDir(harness.dataDir), `${first!.id}.json`), 'utf8'),
    ) as PendingPublish;
    expect(kept).toMatchObject({ runId: first!.id, pushedCommit: pushed, issueNumber: 1 });
    const modelCalls = harness.model!.chatRequests.length;
    expect(modelCalls).toBe(2);

    // `/frognano retry`: the branch is there, so only the pull request is made.
    mockPullCreate(gh, [{ status: 201 }], 8);
    mockReviewRequest(gh, 8);
    const pushesBefore = harness.git!.urls.filter((u) => u.endsWith('/git-receive-pack')).length;
    await harness.deliver(
      'issue_comment',
      commentPayload({ sender: maintainer, body: '/frognano retry' }),
      'r-2',
    );
    await settle(harness);
    const second = (await harness.app.queue!.list()).find((r) => r.id !== first!.id);
    expect(second).toMatchObject({ state: 'done', outcome: 'pull_request' });
    expect(harness.model!.chatRequests).toHaveLength(modelCalls);
    expect(harness.model!.exhaustedRequests).toBe(0);
    expect(harness.git!.urls.filter((u) => u.endsWith('/git-receive-pack'))).toHaveLength(
      pushesBefore,
    );
    expect(branchHead(harness)).toBe(pushed);
    expect(gh.statusBodies.at(-1)).toContain(`opened draft pull request #8 (${prUrl(8)})`);
    expect(readdirSync(pendingPublishDir(harness.dataDir))).toEqual([]);
    expect(gh.authFailures).toEqual([]);
  }, 60_000);

  it('finishes the publish of a run interrupted mid-publish when it is requeued, and removes dead clones', async () => {
    // A first life: the run's change is made and pushed, then the PR is refused to the end.
    const gh = newGitHubMock();
    mockGitHub({}, gh);
    mockBotIdentity(gh);
    mockStatusComment(gh, 1);
    mockPullCreate(gh, [{ status: 403, headers: { 'retry-after': '1' }, times: 4 }], 9);
    const first = await startHarness({ script: fixScript(), gitHttp: gh });
    await first.deliver('issues', labeledPayload({ sender: maintainer }), 'c-1');
    await settle(first);
    const [done] = await first.app.queue!.list();
    const kept = JSON.parse(
      readFileSync(join(pendingPublishDir(first.dataDir), `${done!.id}.json`), 'utf8'),
    ) as PendingPublish;
    await first.app.stop();
    await first.git!.close();

    // What a kill mid-publish leaves: a run still `running` with its change on disk, and the
    // publish clone; next to it, the clone of a process that is still alive.
    const queue = SqliteStore.open<IssueJob>({ dataDir: first.dataDir, concurrency: 1 });
    const job = queue.get(done!.id)!.job;
    const interrupted = { id: randomUUID() };
    expect(queue.enqueue({ key: 'codertocat/hello-world#1', job, id: interrupted.id }).status).toBe(
      'queued',
    );
    expect(queue.claim()?.id).toBe(interrupted.id);
    queue.close();
    writeFileSync(
      join(pendingPublishDir(first.dataDir), `${interrupted.id}.json`),
      JSON.stringify({ ...kept, runId: interrupted.id }),
    );
    const publishRoot = join(first.dataDir, 'publish');
    const dead = await deadPid();
    const alive = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      for (const name of [`publish-${dead}-crash`, `publish-${alive.pid}-live`]) {
        mkdirSync(join(publishRoot, name, 'tree'), { recursive: true });
        writeFileSync(join(publishRoot, name, 'change.patch'), 'diff --git a/x b/x\n');
      }

      // The second life: the clone of the dead process goes, the live one's stays, and the
      // requeued run only opens the pull request.
      // A new process: it asks GitHub who it is again.
      const gh2 = gh;
      mockBotIdentity(gh2);
      mockPullCreate(gh2, [{ status: 201 }], 9);
      mockReviewRequest(gh2, 9);
      const modelCalls = first.model!.chatRequests.length;
      harness = await startHarness({
        root: first.root,
        dataDir: first.dataDir,
        model: first.model,
        gitHttp: gh2,
      });
      expect(readdirSync(publishRoot).sort()).toEqual([`publish-${alive.pid}-live`]);
      await settle(harness);
      expect(await harness.app.queue!.get(interrupted.id)).toMatchObject({
        state: 'done',
        outcome: 'pull_request',
        attempts: 2,
      });
      expect(first.model!.chatRequests).toHaveLength(modelCalls);
      expect(gh.statusBodies.at(-1)).toContain(`opened draft pull request #9 (${prUrl(9)})`);
      expect(existsSync(join(pendingPublishDir(first.dataDir), `${done!.id}.json`))).toBe(false);
      expect(gh.authFailures).toEqual([]);
    } finally {
      alive.kill('SIGKILL');
      await harness?.stop();
      harness = undefined;
      await first.model?.close();
      rmSync(first.root, { recursive: true, force: true });
    }
  }, 90_000);
});

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn('true', { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid as number;
}
