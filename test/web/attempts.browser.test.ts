// A run with several attempts: one tab per attempt with its verdict, its own timeline, diff and
// permalinks (`#attempt-2-step-3`), in headless Chromium.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { renderRunPage, runPageData, type RunPageData } from '../../src/web/index.js';
import { runResult, SAMPLE_PATCH } from '../github/helpers/run-result.js';
import { describeBrowser, launchChromium, outputDir, watchPage } from './helpers/browser.js';
import { generateTrajectory } from './helpers/generated-trajectory.js';

let browser: Browser;
let dir: string;

describeBrowser('run page with several attempts (headless Chromium)', () => {
  beforeAll(async () => {
    browser = await launchChromium();
    dir = await mkdtemp(path.join(tmpdir(), 'frognano-attempts-'));
  });
  afterAll(async () => {
    await browser?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('shows one tab per attempt and follows a permalink into the second', async () => {
    const one = runPageData({
      runId: 'r',
      repo: 'octo/calc',
      issue: { number: 1, title: 'two attempts' },
      trajectory: generateTrajectory({ steps: 4, tokens: 3000 }),
      result: runResult(),
    });
    const data: RunPageData = {
      ...one,
      attempts: [
        { ...one.attempts[0]!, label: 'attempt 1', selected: true },
        {
          label: 'attempt 2',
          trajectory: generateTrajectory({ steps: 7, tokens: 5000 }),
          patch: SAMPLE_PATCH.replaceAll('calc.py', 'other.py'),
          verdict: 'stopped: max_turns · tests after: exit 1',
          selected: false,
        },
      ],
    };
    const file = path.join(dir, 'trajectory.html');
    await writeFile(file, renderRunPage(data));
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const watch = await watchPage(page);
    await page.goto(pathToFileURL(file).href);

    const tabs = page.locator('nav.tabs button');
    expect(await tabs.allTextContents()).toEqual([
      'attempt 1 ★ · stopped: agent · tests after: exit 0',
      'attempt 2 · stopped: max_turns · tests after: exit 1',
    ]);
    expect(await page.isVisible('#attempt-1')).toBe(true);
    expect(await page.isVisible('#attempt-2')).toBe(false);
    expect(await page.locator('#attempt-1 article.step').count()).toBe(4);

    await tabs.nth(1).click();
    expect(await page.isVisible('#attempt-1')).toBe(false);
    expect(await page.isVisible('#attempt-2')).toBe(true);
    expect(await page.locator('#attempt-2 article.step').count()).toBe(7);
    expect(await page.locator('#attempt-2 details.file > summary').textContent()).toContain(
      'other.py',
    );
    await page.screenshot({ path: path.join(outputDir('attempts'), 'attempt-2.png') });

    // Back to the first tab, then a permalink into the second attempt selects it again.
    await tabs.nth(0).click();
    await page.goto(`${pathToFileURL(file).href}#attempt-2-step-6`);
    expect(await page.isVisible('#attempt-2')).toBe(true);
    expect(await tabs.nth(1).getAttribute('aria-selected')).toBe('true');
    const top = (await page.evaluate(
      `document.getElementById('attempt-2-step-6').getBoundingClientRect().top`,
    )) as number;
    // In view (the page may be too short to bring it to the very top).
    expect(top).toBeGreaterThanOrEqual(0);
    expect(top).toBeLessThan(800);
    expect(await page.evaluate('scrollY')).toBeGreaterThan(0);
    expect(watch).toEqual({ dialogs: [], errors: [], consoleErrors: [] });
  });
});
