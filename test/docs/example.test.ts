// docs/example/: what a maintainer gets, from a real run. The App takes a labelled issue from the
// fake GitHub to a draft pull request (Docker sandbox, scripted model on a socket); with
// FROGNANO_TEST_WRITE_EXAMPLES=1 (`npm run examples`) this test writes the pull request's body, the
// final status comment and a screenshot of the run page into docs/example/. Without it, it checks
// that the committed example still has the sections a pull request has today.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { describeDocker, ensureSandboxImage } from '../support/docker-engine.js';
import { finalAnswer, toolCall } from '../support/scripted-model-server.js';
import {
  mockBotIdentity,
  mockGitHub,
  mockPullRequest,
  mockStatusComment,
  newGitHubMock,
  startFakeGitHub,
  startHarness,
  type Harness,
} from '../github/helpers/app-harness.js';
import { labeledPayload } from '../github/helpers/payloads.js';
import { useStrictNock } from '../github/helpers/strict-nock.js';
import { launchChromium } from '../web/helpers/browser.js';

useStrictNock();

const EXAMPLE_DIR = path.resolve(import.meta.dirname, '../../docs/example');
const WRITE = process.env.FROGNANO_TEST_WRITE_EXAMPLES === '1';

let harness: Harness | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const PYTEST = 'PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q';

/** The `## ` and `### ` headings of a Markdown text, in order. */
const headingsOf = (text: string): string[] =>
  text.split('\n').filter((line) => /^#{2,3} /.test(line));

describeDocker('docs/example: a real draft pull request', () => {
  // nock wraps every http request of the process, the Docker engine's hijacked exec streams
  // included, and breaks them: GitHub is the strict loopback fake here (as in journey.test.ts).
  beforeAll(() => nock.restore());
  afterAll(() => nock.activate());
  it('is what a labelled issue gets', async () => {
    await ensureSandboxImage();
    const gh = newGitHubMock('fake');
    const fake = await startFakeGitHub(gh);
    cleanups.push(() => fake.close());
    mockGitHub({}, gh);
    mockBotIdentity(gh);
    mockStatusComment(gh, 1);
    let prRequest: Record<string, unknown> | undefined;
    mockPullRequest(gh, 1, 7, (body) => (prRequest = body));
    harness = await startHarness({
      sandbox: 'docker',
      python: 'python3',
      throttleMs: 0,
      gitHttp: gh,
      env: { GITHUB_API_URL: fake.url },
      script: [
        toolCall('Glob', { pattern: '**/*.py' }),
        toolCall('Read', { file_path: 'calc.py' }),
        toolCall('Bash', { command: PYTEST, description: 'run the tests' }),
        toolCall('Edit', {
          file_path: 'calc.py',
          old_string: 'return a - b',
          new_string: 'return a + b',
        }),
        toolCall('Bash', { command: PYTEST, description: 'run the tests again' }),
        finalAnswer('Fixed `add()` in calc.py: it subtracted its arguments. The tests pass now.'),
      ],
    });
    const payload = labeledPayload({
      sender: { login: 'Codertocat', id: 21031067 },
      issueTitle: 'add() subtracts instead of adding',
      issueBody: '`add(2, 3)` returns -1; it should return 5.',
    });
    expect(await harness.deliver('issues', payload, 'docs-example')).toBe(200);
    await harness.app.intake!.idle();
    await harness.app.workers!.idle();
    const [run] = await harness.app.queue!.list();
    expect(run).toMatchObject({ state: 'done', outcome: 'pull_request' });
    const body = String(prRequest?.body);
    const status = gh.statusBodies.at(-1) ?? '';

    if (WRITE) {
      mkdirSync(EXAMPLE_DIR, { recursive: true });
      writeFileSync(path.join(EXAMPLE_DIR, 'pull-request.md'), `${body}\n`);
      writeFileSync(path.join(EXAMPLE_DIR, 'status-comment.md'), `${status}\n`);
      const browser = await launchChromium();
      try {
        const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
        await page.goto(`${harness.url}/frognano/runs/${run!.id}/trajectory`);
        await page.screenshot({ path: path.join(EXAMPLE_DIR, 'run-page.png') });
      } finally {
        await browser.close();
      }
    }
    const example = readFileSync(path.join(EXAMPLE_DIR, 'pull-request.md'), 'utf8');
    expect(headingsOf(example), 'run `npm run examples` to regenerate docs/example/').toEqual(
      headingsOf(body),
    );
  }, 180_000);
});
