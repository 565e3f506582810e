// The App's run page open while a scripted run is in progress: new steps appear without a
// reload, and the finished run's diff and evidence replace the live view. The steps arrive as
// markup rendered on the server, so hostile text in them must stay text here too.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { IssueJob } from '../../src/github/job.js';
import { runOutDir } from '../../src/data-dir.js';
import { SqliteStore } from '../../src/queue/sqlite-store.js';
import { SqliteQueue } from '../../src/queue/sqlite-queue.js';
import { runPipeline } from '../../src/runner/run.js';
import {
  filesIn,
  queueRunListing,
  recordingRunResults,
  runPageHandler,
} from '../../src/web/index.js';
import { createPythonRepo, ISSUE_TEXT } from '../support/python-repo.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';
import { describeBrowser, launchChromium, outputDir, watchPage } from './helpers/browser.js';

const HOSTILE = `<img src=x onerror="window.__pwned=1;alert(1)"></details><script>alert(2)</script>`;
const STEP_MS = 1500;

let work: string;
let queue: SqliteStore<IssueJob>;
let server: Server;
let model: ScriptedModelServer;
let browser: Browser;

describeBrowser('live run page (App handler, headless Chromium)', () => {
  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'frognano-live-'));
    queue = SqliteStore.open<IssueJob>({ dataDir: path.join(work, 'data'), concurrency: 1 });
    const listing = queueRunListing(new SqliteQueue(queue), {
      gitBaseUrl: 'https://github.com',
      files: (id) => filesIn(runOutDir(path.join(work, 'data'), id)),
    });
    const handle = runPageHandler({ listing, model: 'scripted-model' });
    server = createServer((req, res) => {
      void handle(req, res).then((handled) => {
        if (!handled) res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await model?.close();
    await new Promise((resolve) => server.close(resolve));
    queue.close();
    await rm(work, { recursive: true, force: true });
  });

  it('shows each new step without a reload, then the finished run', async () => {
    const repo = createPythonRepo(work);
    model = await startScriptedModelServer({
      script: [
        toolCall('Glob', { pattern: '**/*.py' }, { delayMs: STEP_MS }),
        toolCall('Read', { file_path: 'calc.py' }, { delayMs: STEP_MS, content: HOSTILE }),
        toolCall(
          'Edit',
          { file_path: 'calc.py', old_string: 'return a - b', new_string: 'return a + b' },
          { delayMs: STEP_MS },
        ),
        toolCall('Bash', { command: 'python3 -m pytest -q' }, { delayMs: STEP_MS }),
        finalAnswer(`Fixed add(). ${HOSTILE}`, { delayMs: STEP_MS }),
      ],
    });
    const job: IssueJob = {
      installationId: 1,
      owner: 'octo',
      repo: 'calc',
      issueNumber: 7,
      issueTitle: `add() subtracts ${HOSTILE}`,
      issueText: ISSUE_TEXT,
      sender: { login: 'maintainer', id: 2 },
      source: 'label',
      deliveryId: 'd-1',
    };
    queue.enqueue({ key: 'octo/calc#7', job });
    const run = queue.claim()!;
    const pipeline = recordingRunResults(
      (request: Parameters<typeof runPipeline>[0]) =>
        runPipeline(request, {
          modelConfig: { baseUrl: model.baseUrl },
          env: { PATH: process.env.PATH, HOME: process.env.HOME },
          dataDir: path.join(work, 'data'),
          logger: pino({ level: 'silent' }),
          handleSignals: false,
        }),
      'scripted-model',
      (error) => {
        throw error;
      },
    );
    let finished = false;
    const running = pipeline({
      runId: run.id,
      instanceId: 'octo/calc#7',
      repo: repo.dir,
      issueText: ISSUE_TEXT,
      sandbox: 'local',
      outDir: runOutDir(path.join(work, 'data'), run.id),
    }).then((result) => {
      finished = true;
      queue.finish(run.id, 'done', { outcome: 'pull_request' });
      return result;
    });

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const watch = await watchPage(page);
    const { port } = server.address() as AddressInfo;
    const url = `http://127.0.0.1:${port}/frognano/runs/${run.id}/trajectory`;
    const response = await page.goto(url);
    expect(response?.headers()['content-security-policy']).toContain("connect-src 'self'");
    // A mark in this document: a reload would lose it.
    await page.evaluate('window.__sameDocument = true');
    const steps = () => page.locator('article.step').count();
    const initial = await steps();
    expect(initial).toBeLessThan(5);
    expect(await page.textContent('dl.facts')).toContain('(live)');

    // New steps arrive while the run is still going.
    await expect.poll(steps, { timeout: 30_000, interval: 200 }).toBeGreaterThan(initial);
    await expect.poll(steps, { timeout: 30_000, interval: 200 }).toBeGreaterThanOrEqual(3);
    expect(finished).toBe(false);
    await page.screenshot({ path: path.join(outputDir('live'), 'running.png'), fullPage: true });

    await running;
    // Finished: the whole body (evidence, diff) is swapped in, polling stops.
    await expect
      .poll(() => page.locator('details.file .l.add').allTextContents(), { timeout: 30_000 })
      .toContain('+    return a + b');
    expect(await steps()).toBe(5);
    expect(await page.textContent('dl.facts')).not.toContain('(live)');
    expect(await page.locator('table.evidence').textContent()).toContain('pass');
    expect(await page.evaluate('window.__sameDocument')).toBe(true);
    await page.screenshot({ path: path.join(outputDir('live'), 'finished.png'), fullPage: true });

    // The hostile text in live-inserted steps and the header stayed text.
    expect(await page.locator('#step-2 .content pre').textContent()).toBe(HOSTILE);
    expect(await page.textContent('h1')).toContain(`add() subtracts ${HOSTILE}`);
    expect(await page.evaluate('document.images.length')).toBe(0);
    expect(await page.evaluate('document.scripts.length')).toBe(2);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(watch).toEqual({ dialogs: [], errors: [], consoleErrors: [] });
    expect(await page.evaluate('window.__cspViolations')).toEqual([]);
  }, 90_000);
});
