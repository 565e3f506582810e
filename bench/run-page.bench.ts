// The run page of a long run: a generated 150-step, ~128K-token trajectory rendered to HTML
// (as `frognano solve` and the App do) and opened from the file in headless Chromium (Debian's,
// through playwright-core). Measured: render time on the server, page load (navigation start to
// the end of the load event), and responsiveness (a search over all steps until the count
// updates). Baseline in the same run: the same text as one plain <pre> page, the floor of
// parsing and laying out that much text here. Target: load under 2 s.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { escapeHtml } from '../src/web/html.js';
import { renderRunPage, runPageData } from '../src/web/index.js';
import { generateTrajectory } from '../test/web/helpers/generated-trajectory.js';
import { launchChromium } from '../test/web/helpers/browser.js';
import { runResult } from '../test/github/helpers/run-result.js';

const STEPS = 150;
const TOKENS = 128_000;
const ROUNDS = 5;
const TARGET_LOAD_MS = 2000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const fmt = (ms: number) => `${ms.toFixed(0)} ms`;

async function loadMs(page: Page, url: string): Promise<number> {
  await page.goto('about:blank');
  await page.goto(url, { waitUntil: 'load' });
  return (await page.evaluate(
    `(() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime; })()`,
  )) as number;
}

export default async function run(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'frognano-bench-page-'));
  try {
    const trajectory = generateTrajectory({ steps: STEPS, tokens: TOKENS });
    const renderStart = performance.now();
    const html = renderRunPage(
      runPageData({
        runId: 'bench',
        repo: 'octo/service',
        issue: {
          number: 42,
          title: 'Flaky retry logic',
          url: 'https://github.com/octo/service/issues/42',
        },
        model: 'microsoft/FrogNano-4B-2609',
        trigger: 'label by @maintainer',
        trajectory,
        result: runResult(),
      }),
    );
    const renderMs = performance.now() - renderStart;
    const pageFile = path.join(dir, 'trajectory.html');
    writeFileSync(pageFile, html);
    const allText = trajectory.steps
      .flatMap((s) => [
        s.assistant.reasoning_content ?? '',
        ...(s.assistant.tool_calls ?? []).map((c) => c.function.arguments),
        ...s.observations.map((o) => o.observation),
      ])
      .join('\n');
    const baselineFile = path.join(dir, 'baseline.html');
    writeFileSync(
      baselineFile,
      `<!doctype html><meta charset="utf-8"><title>baseline</title><pre>${escapeHtml(allText)}</pre>`,
    );

    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const pageLoads: number[] = [];
      const baselineLoads: number[] = [];
      const searches: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        baselineLoads.push(await loadMs(page, pathToFileURL(baselineFile).href));
        pageLoads.push(await loadMs(page, pathToFileURL(pageFile).href));
        // Responsiveness: a query that matches a few steps, typed into the search box; the page
        // debounces input by 120 ms, included here as a user would feel it.
        const start = performance.now();
        await page.fill('input.search', `case_${100 + i}`);
        await page.locator('.count').filter({ hasText: ' of 150 steps' }).waitFor();
        searches.push(performance.now() - start);
      }
      const load = median(pageLoads);
      const base = median(baselineLoads);
      const tokens = trajectory.context_tokens;
      console.log(
        `run page: ${STEPS} steps, ${Math.round(tokens / 1000)}K tokens of context, ${(html.length / 1e6).toFixed(2)} MB of HTML, rendered in ${fmt(renderMs)}`,
      );
      console.log(
        `  baseline (same text, one <pre>) load median ${fmt(base)} of [${baselineLoads.map(fmt).join(', ')}]`,
      );
      console.log(
        `  run page                        load median ${fmt(load)} of [${pageLoads.map(fmt).join(', ')}]`,
      );
      console.log(
        `  search over all steps           median ${fmt(median(searches))} (120 ms debounce included)`,
      );
      console.log(
        `  page/baseline ${(load / base).toFixed(2)}x  load target < ${TARGET_LOAD_MS} ms  ${load < TARGET_LOAD_MS ? 'MET' : 'MISSED'}`,
      );
    } finally {
      await browser.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
