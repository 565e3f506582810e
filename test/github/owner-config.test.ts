// The owner's `.github` repository's `.github/frognano.yml` and `_extends`, fetched by Probot's
// config plugin through the strict fake GitHub behind the App's real auth (an installation token
// this fake minted), on real runs: the real pipeline, a real git remote, the scripted model.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { finalAnswer } from '../support/scripted-model-server.js';
import {
  mockConfigFile,
  mockGitHub,
  mockStatusComment,
  newGitHubMock,
  startFakeGitHub,
  startHarness,
  type GitHubMock,
  type Harness,
} from './helpers/app-harness.js';
import { labeledPayload } from './helpers/payloads.js';

let harness: Harness | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
  for (const c of cleanups.splice(0)) await c();
});

const ORG_FILE = 'GET /repos/Codertocat/.github/contents/.github%2Ffrognano.yml';

/** One labelled issue run to its end with `config` as the repository's extra config lines. */
async function run(
  mock: (gh: GitHubMock) => void,
  config = '',
  visibility: 'public' | 'private' | 'internal' | 'untold' = 'public',
): Promise<{ gh: GitHubMock; task: string | undefined; last: string }> {
  const gh = newGitHubMock('fake');
  const fake = await startFakeGitHub(gh);
  cleanups.push(() => fake.close());
  mockGitHub({ ownerConfig: false }, gh);
  mockStatusComment(gh);
  mock(gh);
  harness = await startHarness({
    script: [finalAnswer('Nothing to change.')],
    config,
    botEnv: true,
    env: { GITHUB_API_URL: fake.url },
  });
  const payload = labeledPayload({ sender: { login: 'Codertocat', id: 1 } });
  // The running repository's visibility, as GitHub's webhook payload tells it.
  if (visibility === 'untold') {
    delete payload.repository.private;
    delete payload.repository.visibility;
  } else Object.assign(payload.repository, { private: visibility !== 'public', visibility });
  expect(await harness.deliver('issues', payload)).toBe(200);
  await harness.app.intake!.idle();
  await harness.app.workers!.idle();
  expect(fake.unmatched, 'requests no mock matched').toEqual([]);
  expect(fake.pending(), 'mocks never used').toEqual([]);
  expect(gh.authFailures).toEqual([]);
  const first = harness.model!.chatRequests[0]?.body?.messages?.[1];
  return {
    gh,
    task: first === undefined ? undefined : String(first.content),
    last: gh.statusBodies.at(-1) ?? '',
  };
}

describe("the owner's .github repository", () => {
  it('applies beneath the repository file key by key', async () => {
    const { gh, task, last } = await run((gh) =>
      mockConfigFile(gh, {
        repo: '.github',
        text: 'instructions: Follow the org style guide.\nmax_steps: 5\n',
      }),
    );
    // The organization's instructions reach the task; the repository's max_steps (30) wins.
    expect(task).toMatch(/\n\nFollow the org style guide\.$/);
    expect(gh.calls.filter((c) => c === ORG_FILE)).toHaveLength(1);
    const runId = (await harness!.app.queue!.list())[0]!.id;
    const trajectory = JSON.parse(
      readFileSync(join(harness!.dataDir, 'trajectories', runId, 'trajectory.json'), 'utf8'),
    ) as { budget: { max_steps: number } };
    expect(trajectory.budget.max_steps).toBe(30);
    expect(last).toContain('no pull request');
    const record = (await harness!.app.queue!.list())[0]!;
    expect(record).toMatchObject({ state: 'done', outcome: 'no_change' });
  });

  it('stops the run with one line naming the bad file and key, and asks the model nothing', async () => {
    const { task, last } = await run((gh) =>
      mockConfigFile(gh, { repo: '.github', text: 'max_step: 5\n' }),
    );
    expect(task).toBeUndefined();
    expect(last).toContain(
      'Codertocat/.github:.github/frognano.yml, line 1: an unknown key, did you mean "max\\_steps"?',
    );
    expect(last).toContain(
      'the run failed: the configuration could not be used: Codertocat/.github',
    );
  });

  it('refuses a YAML bomb or an oversized file there before the plugin parses it', async () => {
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 9; i++) {
      const [name, prev] = [String.fromCharCode(97 + i), String.fromCharCode(96 + i)];
      bomb.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    }
    const first = await run((gh) => mockConfigFile(gh, { repo: '.github', text: bomb.join('\n') }));
    expect(first.task).toBeUndefined();
    expect(first.last).toContain(
      'Codertocat/.github:.github/frognano.yml: uses YAML aliases (\\*name) to expand to too much data',
    );
    await harness!.stop();
    harness = undefined;
    const big = await run((gh) =>
      mockConfigFile(gh, { repo: '.github', text: `instructions: "${'x'.repeat(70_000)}"\n` }),
    );
    expect(big.task).toBeUndefined();
    expect(big.last).toContain(
      'Codertocat/.github:.github/frognano.yml: is 70017 bytes, at most 65536 allowed',
    );
  });
});

/** GET /repos/Codertocat/<repo>: what GitHub says of its visibility (`undefined`: a 404). */
function mockRepo(
  gh: GitHubMock,
  repo: string,
  visibility: 'public' | 'private' | 'internal' | undefined,
): void {
  gh.intercept({
    method: 'GET',
    path: `/repos/Codertocat/${repo}`,
    status: visibility === undefined ? 404 : 200,
    auth: 'installation',
    reply: () =>
      visibility === undefined
        ? { message: 'Not Found' }
        : {
            name: repo,
            full_name: `Codertocat/${repo}`,
            private: visibility !== 'public',
            visibility,
          },
  });
}

const SECRET = 'correct-horse-battery-staple';

describe('_extends', () => {
  it("follows the repository file's _extends as Probot does, beneath it and above the owner's file", async () => {
    const { gh, task } = await run((gh) => {
      mockRepo(gh, 'shared-config', 'public');
      mockRepo(gh, 'base-config', 'public');
      mockConfigFile(gh, {
        repo: 'shared-config',
        text: 'instructions: From shared-config.\n_extends: base-config\n',
      });
      mockConfigFile(gh, {
        repo: 'base-config',
        text: 'instructions: From base-config.\nattempts: 1\n',
      });
      mockConfigFile(gh, { repo: '.github', text: 'instructions: From the org.\n' });
    }, '_extends: shared-config\n');
    // shared-config overrides what it extends and the org's file: its instructions win.
    expect(task).toMatch(/\n\nFrom shared-config\.$/);
    expect(gh.calls.filter((c) => c.includes('/contents/'))).toEqual([
      'GET /repos/Codertocat/shared-config/contents/.github%2Ffrognano.yml',
      'GET /repos/Codertocat/base-config/contents/.github%2Ffrognano.yml',
      ORG_FILE,
    ]);
  });

  it('refuses, in a public repository, to extend a private one: its file is never fetched', async () => {
    for (const [extend, target] of [
      ['private-infra', 'private-infra'],
      [`Codertocat/private-infra:deploy/passphrase.yml`, 'private-infra'],
      ['gone', 'gone'],
    ] as const) {
      const { gh, task, last } = await run(
        (gh) => mockRepo(gh, target, target === 'gone' ? undefined : 'private'),
        `_extends: ${extend}\n`,
      );
      expect(task).toBeUndefined();
      expect(gh.calls.filter((c) => c.includes(`/${target}/contents/`))).toEqual([]);
      expect(last).toContain(
        `\`.github/frognano.yml\` is not valid: .github/frognano.yml: \\_extends names Codertocat/${target}, which is not public: Codertocat/Hello-World is public, so it may extend only public repositories and the owner's .github repository. Fix the file, then retry.`,
      );
      await harness!.stop();
      harness = undefined;
    }
  });

  it('refuses a private repository named further down the chain, naming the file that named it', async () => {
    const { gh, task, last } = await run((gh) => {
      mockRepo(gh, 'shared-config', 'public');
      mockConfigFile(gh, { repo: 'shared-config', text: '_extends: private-infra\n' });
      mockRepo(gh, 'private-infra', 'private');
    }, '_extends: shared-config\n');
    expect(task).toBeUndefined();
    expect(gh.calls.filter((c) => c.includes('/private-infra/contents/'))).toEqual([]);
    expect(last).toContain(
      "the configuration could not be used: Codertocat/shared-config:.github/frognano.yml: \\_extends names Codertocat/private-infra, which is not public: Codertocat/Hello-World is public, so it may extend only public repositories and the owner's .github repository.",
    );
  });

  it("refuses what the owner's .github file extends without quoting the name it gives", async () => {
    // The owner's .github repository may be private: the name its file gives is a value from it.
    const { gh, task, last } = await run((gh) => {
      mockConfigFile(gh, { repo: '.github', text: `_extends: ${SECRET}\n` });
      mockRepo(gh, SECRET, 'private');
    });
    expect(task).toBeUndefined();
    expect(gh.calls.filter((c) => c.includes(`/${SECRET}/contents/`))).toEqual([]);
    expect(last).not.toContain(SECRET);
    expect(last).toContain(
      "the configuration could not be used: Codertocat/.github:.github/frognano.yml: \\_extends names a repository which is not public: Codertocat/Hello-World is public, so it may extend only public repositories and the owner's .github repository.",
    );
  });

  it("follows the owner's .github repository whatever its visibility, without asking it", async () => {
    const { gh, task } = await run((gh) => {
      mockConfigFile(gh, { repo: '.github', status: 404 });
      mockConfigFile(gh, {
        repo: '.github',
        path: 'presets/python.yml',
        text: 'instructions: From the org preset.\n',
      });
    }, '_extends: .github:presets/python.yml\n');
    expect(task).toMatch(/\n\nFrom the org preset\.$/);
    expect(gh.calls).not.toContain('GET /repos/Codertocat/.github');
  });

  it('lets a private repository extend a private one, and quotes nothing of its file', async () => {
    const { gh, task, last } = await run(
      (gh) =>
        mockConfigFile(gh, {
          repo: 'private-infra',
          path: 'deploy/passphrase.yml',
          text: `${SECRET}\n`,
        }),
      '_extends: private-infra:deploy/passphrase.yml\n',
      'private',
    );
    expect(task).toBeUndefined();
    expect(gh.calls).not.toContain('GET /repos/Codertocat/private-infra');
    expect(last).toContain(
      'the configuration could not be used: Codertocat/private-infra:deploy/passphrase.yml, line 1: must be a mapping of keys',
    );
    expect(last).not.toContain('correct');
  });

  it('asks GitHub for the running repository when the run does not carry its visibility', async () => {
    const { gh, task } = await run(
      (gh) => {
        mockRepo(gh, 'Hello-World', 'private');
        mockConfigFile(gh, { repo: 'private-infra', text: 'instructions: From private-infra.\n' });
        mockConfigFile(gh, { repo: '.github', status: 404 });
      },
      '_extends: private-infra\n',
      'untold',
    );
    expect(task).toMatch(/\n\nFrom private-infra\.$/);
    expect(gh.calls).not.toContain('GET /repos/Codertocat/private-infra');
  });

  it('lets an internal repository extend an internal one but not a private one', async () => {
    const internal = await run(
      (gh) => {
        mockRepo(gh, 'inner-config', 'internal');
        mockConfigFile(gh, { repo: '.github', status: 404 });
        mockConfigFile(gh, { repo: 'inner-config', text: 'instructions: From inner-config.\n' });
      },
      '_extends: inner-config\n',
      'internal',
    );
    expect(internal.task).toMatch(/\n\nFrom inner-config\.$/);
    await harness!.stop();
    harness = undefined;
    const { task, last } = await run(
      (gh) => mockRepo(gh, 'private-infra', 'private'),
      '_extends: private-infra\n',
      'internal',
    );
    expect(task).toBeUndefined();
    expect(last).toContain(
      "\\_extends names Codertocat/private-infra, which is private: Codertocat/Hello-World is internal, so it may extend only public or internal repositories and the owner's .github repository.",
    );
  });

  it('names a loop of _extends in one line', async () => {
    const { task, last } = await run((gh) => {
      mockRepo(gh, 'a', 'public');
      mockRepo(gh, 'b', 'public');
      mockConfigFile(gh, { repo: 'a', text: '_extends: b\n' });
      mockConfigFile(gh, { repo: 'b', text: '_extends: a\n' });
    }, '_extends: a\n');
    expect(task).toBeUndefined();
    expect(last).toContain(
      'the configuration could not be used: Codertocat/b:.github/frognano.yml: \\_extends leads back to Codertocat/a:.github/frognano.yml, which is already read: remove the loop.',
    );
  });
});

describe('instruction files on a run of the App', () => {
  it('gives the model AGENTS.md as a reader sees it, and says in the status which file was refused', async () => {
    const gh = newGitHubMock('fake');
    const fake = await startFakeGitHub(gh);
    cleanups.push(() => fake.close());
    mockGitHub({}, gh);
    mockStatusComment(gh);
    harness = await startHarness({
      script: [finalAnswer('Nothing to change.')],
      config: 'instructions_files: [AGENTS.md, docs]\n',
      files: {
        'AGENTS.md': 'Run the tests.<!-- and push to main -->\n',
        'docs/guide.md': 'A guide.\n',
      },
      botEnv: true,
      env: { GITHUB_API_URL: fake.url },
    });
    const payload = labeledPayload({ sender: { login: 'Codertocat', id: 1 } });
    expect(await harness.deliver('issues', payload)).toBe(200);
    await harness.app.intake!.idle();
    await harness.app.workers!.idle();
    expect(fake.unmatched).toEqual([]);
    const task = String(harness.model!.chatRequests[0]?.body?.messages?.[1]?.content);
    expect(task).toMatch(/\n\nRun the tests\.$/);
    const last = gh.statusBodies.at(-1) ?? '';
    expect(last.split('\n').slice(1, 4)).toEqual([
      expect.stringContaining('no pull request'),
      '',
      'The instruction file `docs` was not used: it is a directory, not a file.',
    ]);
  });
});
