import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Docker-backed suites share one engine on a 2-core machine; keep parallelism modest.
    maxWorkers: 2,
  },
});
