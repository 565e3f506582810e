// Real-browser tests: Debian's Chromium driven by playwright-core (never a downloaded browser).
// Without /usr/bin/chromium they fail with a line saying what to install (never a skip).
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { beforeAll, describe } from 'vitest';

export const CHROMIUM_PATH = process.env.FROGNANO_TEST_CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];

const ready = existsSync(CHROMIUM_PATH);

/** A describe whose tests fail (never skip) with one line saying what to install. */
export function describeBrowser(name: string, body: () => void): void {
  describe(name, () => {
    beforeAll(() => {
      if (!ready) {
        throw new Error(
          `no Chromium at ${CHROMIUM_PATH}: apt-get install chromium, or set FROGNANO_TEST_CHROMIUM to one`,
        );
      }
    });
    body();
  });
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
}

/** test-output/web/<name>/ (gitignored): screenshots for a person to look at. */
export function outputDir(name: string): string {
  const dir = path.resolve('test-output', 'web', name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export interface PageWatch {
  dialogs: string[];
  errors: string[];
  /** Console messages of type error (CSP violations are reported there too). */
  consoleErrors: string[];
}

/**
 * Records every dialog (dismissed), page error and console error, and (through an init script,
 * which runs outside the page's CSP) every CSP violation and any `window.__pwned` write.
 */
export async function watchPage(page: Page): Promise<PageWatch> {
  const watch: PageWatch = { dialogs: [], errors: [], consoleErrors: [] };
  page.on('dialog', (dialog) => {
    watch.dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('pageerror', (error) => watch.errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') watch.consoleErrors.push(message.text());
  });
  // A string, not a function: this project's TypeScript has no DOM types.
  await page.addInitScript({
    content: `window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ': ' + e.blockedURI);
});`,
  });
  return watch;
}
