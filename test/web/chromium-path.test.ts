// The browser tests' Chromium can be pointed elsewhere from the shell that runs `npm test`, and
// a missing one fails the browser tests with a line naming it (docs/development.md, "The two commands").
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('the browser tests without Chromium', () => {
  it('fail with a line naming the path from FROGNANO_TEST_CHROMIUM', () => {
    const { CI: _ci, ...env } = process.env;
    const run = spawnSync(
      process.execPath,
      ['node_modules/vitest/vitest.mjs', 'run', 'test/web/attempts.browser.test.ts'],
      { encoding: 'utf8', env: { ...env, FROGNANO_TEST_CHROMIUM: '/nonexistent/chromium' } },
    );
    const output = run.stdout + run.stderr;
    expect(output).toContain('no Chromium at /nonexistent/chromium');
    expect(output).toMatch(/failed/);
    expect(run.status, output).not.toBe(0);
  }, 60_000);
});
