// The run page `frognano solve` writes, opened from the file in headless Chromium: the step list,
// folding, permalinks, search and tool filter, the diff and the evidence.
import { rm } from 'node:fs/promises';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { finalAnswer, toolCall } from '../support/scripted-model-server.js';
import { ISSUE_TEXT } from '../support/python-repo.js';
import {
  describeBrowser,
  launchChromium,
  outputDir,
  watchPage,
  type PageWatch,
} from './helpers/browser.js';
import { solveScripted, type SolvedRun } from './helpers/solve-run.js';

// A token shape GitHub hands out: the page must never show it.
const LEAKED_TOKEN = `ghp_${'A1b2C3d4'.repeat(5)}`;

function script() {
  return [
    toolCall(
      'Glob',
      { pattern: '**/*.py' },
      { reasoningContent: 'First I look at the Python files in the repository.' },
    ),
    toolCall('Read', { file_path: 'calc.py' }),
    toolCall('Edit', {
      file_path: 'calc.py',
      old_string: 'return a - b',
      new_string: 'return a + b',
    }),
    toolCall('Bash', {
      command: `python3 -m pytest -q; seq 1 200; echo token=${LEAKED_TOKEN}`,
      description: 'run the tests',
    }),
    finalAnswer('Fixed add(): it subtracted instead of adding. The tests pass.'),
  ];
}

let run: SolvedRun;
let browser: Browser;
let page: Page;
let watch: PageWatch;
const shots = outputDir('run-page');

describeBrowser('run page written by frognano solve (headless Chromium)', () => {
  beforeAll(async () => {
    run = await solveScripted({ script: script(), issue: ISSUE_TEXT });
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    if (run) await rm(run.work, { recursive: true, force: true });
  });

  it('is written beside trajectory.json, self-contained, and shows the run', async () => {
    expect(run.code).toBe(0);
    const html = await readFile(run.html, 'utf8');
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i);
    expect(html).not.toContain(LEAKED_TOKEN);
    expect(html).toContain('[REDACTED]');

    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    watch = await watchPage(page);
    await page.goto(pathToFileURL(run.html).href);
    await page.screenshot({ path: path.join(shots, 'full.png'), fullPage: true });

    expect(await page.textContent('h1')).toContain('add() subtracts instead of adding');
    const facts = await page.textContent('dl.facts');
    expect(facts).toContain('microsoft/FrogNano-4B-2609');
    expect(facts).toContain('exit reasonagent');
    expect(facts).toContain('steps5/150');
    expect(facts).toContain('frognano solve by');

    // The step list: one line per step, each jumping to its step.
    const items = await page.locator('ol.summary li').allTextContents();
    expect(items).toHaveLength(5);
    expect(items[0]).toContain('Glob: **/*.py');
    expect(items[3]).toContain('Bash: python3 -m pytest -q');
    expect(items[4]).toContain('answer: Fixed add()');

    // Evidence before → after, and the diff of calc.py coloured by line kind.
    const evidence = page.locator('table.evidence');
    expect(await evidence.locator('tr').nth(0).textContent()).toContain('fail');
    expect(await evidence.locator('tr').nth(1).textContent()).toContain('pass');
    expect(await page.locator('details.file > summary').first().textContent()).toContain('calc.py');
    expect(await page.locator('details.file .l.del').allTextContents()).toContain(
      '-    return a - b',
    );
    expect(await page.locator('details.file .l.add').allTextContents()).toContain(
      '+    return a + b',
    );
    // Python highlighted: the keyword, not the rest.
    expect(await page.locator('details.file .l.add .tk-k').allTextContents()).toEqual(['return']);
    // The Edit step reads as a small diff, the reasoning is folded.
    expect(await page.locator('#step-3 pre.diff .l.add').textContent()).toBe('+return a + b');
    expect(await page.locator('#step-1 details.reasoning').getAttribute('open')).toBeNull();
    expect(await page.isVisible('#step-1 details.reasoning pre')).toBe(false);
    await page.click('#step-1 details.reasoning summary');
    expect(await page.isVisible('#step-1 details.reasoning pre')).toBe(true);
    expect(watch).toEqual({ dialogs: [], errors: [], consoleErrors: [] });
    expect(await page.evaluate('window.__cspViolations')).toEqual([]);
  });

  it('folds a long observation and shows all of it on click', async () => {
    const obs = page.locator('#step-4 pre.folded');
    expect(await obs.count()).toBe(1);
    const size = (sel: string) =>
      page.evaluate(
        `(() => { const el = document.querySelector(${JSON.stringify(sel)}); return [el.clientHeight, el.scrollHeight]; })()`,
      ) as Promise<[number, number]>;
    const [foldedHeight, fullHeight] = await size('#step-4 .call pre:not(.diff):last-of-type');
    expect(foldedHeight).toBeLessThan(fullHeight);
    const button = page.locator('#step-4 button.show-all');
    expect(await button.textContent()).toMatch(/^show all \(\d+ lines/);
    await button.click();
    expect(await page.locator('#step-4 pre.folded').count()).toBe(0);
    const [openHeight, openFull] = await size('#step-4 .call pre:not(.diff):last-of-type');
    expect(openHeight).toBe(openFull);
    expect(await button.textContent()).toBe('fold');
    await page.screenshot({ path: path.join(shots, 'step-4-unfolded.png') });
  });

  it('scrolls to a step from its permalink and from the step list', async () => {
    await page.goto(`${pathToFileURL(run.html).href}#step-4`);
    const top = async (id: string) =>
      (await page.evaluate(
        `document.getElementById(${JSON.stringify(id)}).getBoundingClientRect().top`,
      )) as number;
    expect(await page.evaluate('window.scrollY')).toBeGreaterThan(0);
    expect(Math.abs(await top('step-4'))).toBeLessThan(80);
    await page.screenshot({ path: path.join(shots, 'permalink-step-4.png') });

    await page.click('ol.summary li[data-step="step-2"] a');
    expect(await page.evaluate('location.hash')).toBe('#step-2');
    expect(Math.abs(await top('step-2'))).toBeLessThan(80);
  });

  it('filters the steps by text and by tool', async () => {
    const visible = async () =>
      (await page.evaluate(
        `Array.from(document.querySelectorAll('article.step')).filter((s) => !s.hidden).map((s) => s.id)`,
      )) as string[];
    await page.fill('input.search', 'PYTEST');
    // The page's CSP forbids eval, so waits poll from outside instead of waitForFunction.
    await expect.poll(() => page.textContent('.count')).toBe('1 of 5 steps');
    expect(await visible()).toEqual(['step-4']);
    expect(await page.locator('ol.summary li:not([hidden])').count()).toBe(1);
    await page.screenshot({ path: path.join(shots, 'search.png') });

    await page.fill('input.search', '');
    await page.selectOption('select.tool-filter', 'Edit');
    await expect.poll(visible).toEqual(['step-3']);
    await page.selectOption('select.tool-filter', '(answer)');
    await expect.poll(visible).toEqual(['step-5']);

    // A permalink to a filtered-out step clears the filter and shows it.
    await page.evaluate(`location.hash = '#step-1'`);
    await expect.poll(visible).toHaveLength(5);
    expect(await page.inputValue('select.tool-filter')).toBe('');
  });
});
