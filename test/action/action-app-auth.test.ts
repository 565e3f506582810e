// `frognano action` with the App's credentials (APP_ID, PRIVATE_KEY) beside the workflow token:
// Probot's real App authentication against the strict fake GitHub (an RS256 JWT signed with the
// App's key, the repository's installation looked up, its token minted), and the pull request
// opened as the App's bot, so the repository's workflows run on it. The workflow token is not
// accepted by the fake here: any use of it would fail.
import { afterEach, describe, expect, it } from 'vitest';
import {
  mockBotIdentity,
  mockGitHub,
  mockPullRequest,
  PYTHON,
  REPO_PATH,
} from '../github/helpers/app-harness.js';
import { testPrivateKey } from '../github/helpers/github.js';
import {
  startActionHarness,
  WORKFLOW_TOKEN,
  type ActionHarness,
} from './helpers/action-harness.js';
import { mockStatusThread } from './helpers/action-github.js';
import { expectStrictGitHub, fixScript, git, labeled } from './helpers/label-run.js';

let harness: ActionHarness | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

describe('frognano action with APP_ID and PRIVATE_KEY', () => {
  it("mints the App's installation token through the real App auth and opens the PR as the App", async () => {
    harness = await startActionHarness({ script: fixScript(PYTHON) });
    const h = harness;
    h.gh.tokens.delete(WORKFLOW_TOKEN);
    mockGitHub({}, h.gh);
    mockBotIdentity(h.gh);
    h.gh.intercept({
      method: 'GET',
      path: `${REPO_PATH}/installation`,
      status: 200,
      auth: 'app',
      reply: () => ({ id: 1, app_id: 1, account: { login: 'Codertocat' } }),
    });
    const thread = mockStatusThread(h.gh, 1, 'frognano[bot]');
    let created: Record<string, unknown> | undefined;
    mockPullRequest(h.gh, 1, 7, (body) => (created = body));

    const run = await h.run('issues', labeled(), {
      APP_ID: '1',
      PRIVATE_KEY: testPrivateKey(),
    });

    expect(run.code, run.stderr).toBe(0);
    expect(run.outputs).toMatchObject({ outcome: 'pull_request', 'pr-number': '7' });
    expect(created).toMatchObject({ head: 'frognano/issue-1', draft: true });
    const head = git(h, 'rev-parse', 'refs/heads/frognano/issue-1').trim();
    expect(git(h, 'log', '-1', '--format=%an <%ae>', head).trim()).toBe(
      'frognano[bot] <41898282+frognano[bot]@users.noreply.127.0.0.1>',
    );
    expect(thread.comment?.body).toContain('opened draft pull request #7');
    // The installation was looked up and its token minted with the App's JWT; the API and git
    // saw only minted tokens.
    expect(h.gh.calls).toContain(`GET ${REPO_PATH}/installation`);
    expect(h.gh.calls).toContain('POST /app/installations/1/access_tokens');
    const passwords = h.git.authorizations.filter(Boolean).map(
      (a) =>
        Buffer.from(String(a).replace(/^Basic /, ''), 'base64')
          .toString()
          .split(':')[1],
    );
    expect(passwords.length).toBeGreaterThan(0);
    for (const password of passwords) {
      expect(password).not.toBe(WORKFLOW_TOKEN);
      expect(h.gh.tokens.has(password ?? '')).toBe(true);
    }
    expectStrictGitHub(h);
  }, 120_000);
});
