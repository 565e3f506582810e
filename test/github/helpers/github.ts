// GitHub clients and keys for tests (no vitest imports: the restart test loads this in a child process).
import { generateKeyPairSync } from 'node:crypto';
import pino from 'pino';
import { ProbotOctokit } from 'probot';
import type { GitHubClient } from '../../../src/github/octokit.js';

export const API = 'https://api.github.com';
export const silentLog = pino({ level: 'silent' });

/** An installation-token client without retries or throttling delays (tests only). */
export function testOctokit(): GitHubClient {
  return new ProbotOctokit({
    auth: { token: 'ghs_testtoken000000000000000000000000' },
    retry: { enabled: false },
    throttle: { enabled: false },
    log: silentLog,
  }) as GitHubClient;
}

/**
 * Probot's Octokit with retries and throttling delays off, for app-level tests (production keeps
 * both on: writes spaced 1 s, comments 3 s). A function, because Probot passes its own throttle
 * options to every client it builds and those would win over static defaults.
 */
export const FastOctokit = ProbotOctokit.defaults((options: Record<string, unknown>) => ({
  ...options,
  retry: { enabled: false },
  throttle: { ...(options.throttle as object), enabled: false },
}));

let key: string | undefined;
/** A real RSA key so Probot can sign App JWTs. */
export function testPrivateKey(): string {
  key ??= generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
    type: 'pkcs1',
    format: 'pem',
  }) as string;
  return key;
}
