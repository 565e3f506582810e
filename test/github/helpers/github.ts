// GitHub clients and keys for tests (no vitest imports: the restart test loads this in a child process).
import { generateKeyPairSync } from 'node:crypto';
import pino from 'pino';
import { ProbotOctokit } from 'probot';
import { appOctokit, type GitHubClient } from '../../../src/github/octokit.js';

export const API = 'https://api.github.com';
export const silentLog = pino({ level: 'silent' });

/** The installation token of `testOctokit()`. */
export const TEST_INSTALLATION_TOKEN = 'ghs_testtoken000000000000000000000000';

/** An installation-token client without retries or throttling delays (tests only). */
export function testOctokit(): GitHubClient {
  return new ProbotOctokit({
    auth: { token: TEST_INSTALLATION_TOKEN },
    retry: { enabled: false },
    throttle: { enabled: false },
    log: silentLog,
  }) as GitHubClient;
}

/** A Bottleneck group that never spaces requests (the plugin's write/notification groups do). */
const unspaced = {
  key: () => ({
    schedule: <T>(_options: unknown, job: (...args: unknown[]) => Promise<T>, ...args: unknown[]) =>
      job(...args),
  }),
};

/**
 * The App's production client (src/github/octokit.ts: real auth strategy, rate limits retried
 * after the wait GitHub asks for, 5xx retried) with two timings shortened for tests: writes are
 * not spaced 1 s / comments 3 s apart, and a 5xx is retried after 10/40/90 ms instead of
 * 1/4/9 s. A `retry-after` is still honoured to the second.
 */
export const AppTestOctokit = appOctokit(silentLog).defaults(
  (options: Record<string, unknown>) => ({
    ...options,
    retry: { ...(options.retry as object), retryAfterBaseValue: 10 },
    throttle: {
      ...(options.throttle as object),
      write: unspaced,
      notifications: unspaced,
      // Nor where they leave, with a Redis queue (src/github/shared-throttle.ts).
      writeTurn: undefined,
    },
  }),
);

/** AppTestOctokit with the production pacing of writes (1 s apart, 3 s for notifying ones). */
export const PacedTestOctokit = appOctokit(silentLog).defaults(
  (options: Record<string, unknown>) => ({
    ...options,
    retry: { ...(options.retry as object), retryAfterBaseValue: 10 },
  }),
);

/** testOctokit() with the production retry behaviour (AppTestOctokit's timings). */
export function retryingTestOctokit(): GitHubClient {
  return new AppTestOctokit({
    auth: { token: TEST_INSTALLATION_TOKEN },
    log: silentLog,
  }) as GitHubClient;
}

let key: string | undefined;
/**
 * A real RSA key so Probot can sign App JWTs (and the mocks can check them). A child process
 * that plays the App gets its parent's key through TEST_APP_PRIVATE_KEY.
 */
export function testPrivateKey(): string {
  key ??= process.env.TEST_APP_PRIVATE_KEY;
  key ??= generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
    type: 'pkcs1',
    format: 'pem',
  }) as string;
  return key;
}
