import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Generous: Docker and multi-sandbox runs share 2 cores; a hang still ends, just later.
    testTimeout: 90_000,
    hookTimeout: 60_000,
    // CI shares 2 cores among Docker, Redis, Chromium and child processes; a test that fails
    // twice in a row still fails the run, a one-off scheduling hiccup does not.
    retry: process.env.CI ? 1 : 0,
    // Docker-backed suites share one engine on a 2-core machine; keep parallelism modest.
    maxWorkers: 2,
    // Builds the default sandbox image when it is missing (once, before any test file).
    globalSetup: ['test/support/global-setup.ts'],
    // The operator's FROGNANO_* (and App) variables never reach the tests.
    setupFiles: ['test/support/scrub-env.ts'],
  },
});
