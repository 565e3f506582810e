// The browser tests' Chromium can be pointed elsewhere from the shell that runs `npm test`, and
// a missing one is a loud skip outside CI (README, "The two commands").
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('the browser tests without Chromium', () => {
  it('skip with a notice naming the path from FROGNANO_TEST_CHROMIUM', () => {
    const { CI: _ci, ...env } = process.env;
    const run = spawnSync(
      process.execPath,
      ['node_modules/vitest/vitest.mjs', 'run', 'test/web/attempts.browser.test.ts'],
      { encoding: 'utf8', env: { ...env, FROGNANO_TEST_CHROMIUM: '/nonexistent/chromium' } },
    );
    const output = run.stdout + run.stderr;
    expect(output).toContain('no Chromium at /nonexistent/chromium');
    expect(output).toMatch(/1 skipped/);
    expect(run.status, output).toBe(0);
  }, 60_000);
});
