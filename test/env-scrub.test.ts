// Tests run the same whatever the shell that starts them has exported.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const probeName = 'sees none of the operator variables';

describe('the test environment', () => {
  it(probeName, () => {
    const leaked = Object.keys(process.env).filter(
      (key) =>
        (key.startsWith('FROGNANO_') && !key.startsWith('FROGNANO_TEST_')) ||
        ['APP_ID', 'PRIVATE_KEY', 'WEBHOOK_SECRET', 'WEBHOOK_PROXY_URL'].includes(key),
    );
    expect(leaked).toEqual([]);
  });

  it('drops FROGNANO_* and App variables exported by the user', () => {
    if (process.env.FROGNANO_TEST_NESTED) return; // the inner run only needs the probe
    const run = spawnSync(
      process.execPath,
      ['node_modules/vitest/vitest.mjs', 'run', 'test/env-scrub.test.ts', '-t', probeName],
      {
        encoding: 'utf8',
        env: {
          ...process.env,
          FROGNANO_TEST_NESTED: '1',
          FROGNANO_SANDBOX_IMAGE: 'example/not-an-image:nope',
          FROGNANO_MODEL_URL: 'http://127.0.0.1:9/v1',
          APP_ID: '12345',
        },
      },
    );
    expect(run.stdout + run.stderr).toMatch(/1 passed/);
    expect(run.status).toBe(0);
  }, 60_000);
});
