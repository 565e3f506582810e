// The model is hostile, and so may be an issue author: a run whose model output, tool output,
// file names and issue title carry markup renders all of it as text. Asserted in Chromium:
// no dialog, no script run, no element injected, every string shown verbatim.
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { finalAnswer, toolCall } from '../support/scripted-model-server.js';
import { describeBrowser, launchChromium, outputDir, watchPage } from './helpers/browser.js';
import { solveScripted, type SolvedRun } from './helpers/solve-run.js';

export const HOSTILE =
  `<script>window.__pwned='script';alert('script')</script>` +
  `<img src=x onerror="window.__pwned='img';alert('img')">` +
  `</details></pre></code><a href="javascript:alert('link')">click</a> ` +
  `[md](javascript:alert('md')) <svg onload=alert('svg')></svg>`;
const EVIL_FILE = `evil<img src=x onerror=alert(7)>.py`;
const TITLE = `Title <script>alert('title')</script><img src=x onerror=alert('title')>`;

let run: SolvedRun;
let browser: Browser;

describeBrowser('run page with hostile text (headless Chromium)', () => {
  beforeAll(async () => {
    run = await solveScripted({
      issue: `${TITLE}\n\n${HOSTILE}`,
      script: [
        toolCall(
          'Write',
          { file_path: EVIL_FILE, content: `# ${HOSTILE}\n` },
          { reasoningContent: HOSTILE, content: HOSTILE },
        ),
        toolCall('Bash', { command: `cat '${EVIL_FILE}'; echo "</script><b>bold</b>"` }),
        toolCall('Glob', { pattern: '*.py' }, { reasoningContent: `</details>${HOSTILE}` }),
        toolCall('Read', { file_path: HOSTILE }),
        finalAnswer(HOSTILE),
      ],
    });
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    if (run) await rm(run.work, { recursive: true, force: true });
  });

  it('renders every hostile string as text and runs nothing', async () => {
    expect(run.code).toBe(0);
    const html = await readFile(run.html, 'utf8');
    expect(html).not.toContain('<img src=x');
    expect(html).not.toContain('<script>window.__pwned');

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const watch = await watchPage(page);
    await page.goto(pathToFileURL(run.html).href);
    // Give anything that would run (onerror, onload) a chance to.
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(outputDir('xss'), 'hostile.png'), fullPage: true });

    expect(watch.dialogs).toEqual([]);
    expect(watch.errors).toEqual([]);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(await page.evaluate('window.__cspViolations')).toEqual([]);
    // No element that the text describes exists: only the page's own script, no image, no
    // svg, no bold, no javascript: link.
    expect(await page.evaluate('document.scripts.length')).toBe(1);
    expect(await page.evaluate('document.images.length')).toBe(0);
    expect(
      await page.locator('svg, b, a[href^="javascript:" i], [onerror], [onload]').count(),
    ).toBe(0);
    expect(await page.locator('article.step').count()).toBe(5);
    expect(await page.locator('ol.summary li').count()).toBe(5);

    // Verbatim, as text: the issue title, the model's reasoning and content, the tool output,
    // the file name in the diff, a tool argument, the final message.
    const textOf = (selector: string) => page.locator(selector).first().textContent();
    expect(await textOf('h1')).toContain(TITLE);
    expect(await page.title()).toContain(TITLE);
    expect(await textOf('#step-1 details.reasoning pre')).toBe(HOSTILE);
    expect(await textOf('#step-1 .content pre')).toBe(HOSTILE);
    expect(await textOf('#step-3 details.reasoning pre')).toBe(`</details>${HOSTILE}`);
    const bash = (await page.locator('#step-2 .call pre').allTextContents()).join('\n');
    expect(bash).toContain(`# ${HOSTILE}`);
    expect(bash).toContain('</script><b>bold</b>');
    expect(await textOf('#step-3 .call pre')).toContain(EVIL_FILE);
    expect(await textOf('#step-4 .call-head code')).toBe(HOSTILE);
    expect(await textOf('#step-5 .content pre')).toBe(HOSTILE);
    expect(await textOf('details.file > summary')).toContain(EVIL_FILE);
    expect(await page.locator('details.file .l.add').allTextContents()).toContain(`+# ${HOSTILE}`);
  });
});
