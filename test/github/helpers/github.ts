// Strict GitHub API mocking: no request leaves the machine unless a test mocked it, and every
// mock must be used. Loopback stays open for the real local servers tests start.
import { generateKeyPairSync } from 'node:crypto';
import nock from 'nock';
import pino from 'pino';
import { ProbotOctokit } from 'probot';
import { afterEach, beforeEach, expect } from 'vitest';
import type { GitHubClient } from '../../../src/github/octokit.js';

export const API = 'https://api.github.com';
export const silentLog = pino({ level: 'silent' });

/** Call at the top of a test file: fail on unmatched requests and on unused mocks. */
export function useStrictNock(): { unmatched: string[] } {
  const state = { unmatched: [] as string[] };
  const onNoMatch = (req: { method?: string; path?: string; host?: string }) => {
    state.unmatched.push(`${req.method} ${req.host ?? ''}${req.path ?? ''}`);
  };
  beforeEach(() => {
    nock.disableNetConnect();
    nock.enableNetConnect(/^(127\.0\.0\.1|localhost)(:\d+)?$/);
    nock.emitter.on('no match', onNoMatch);
    state.unmatched.length = 0;
  });
  afterEach(() => {
    nock.emitter.removeListener('no match', onNoMatch);
    const pending = nock.pendingMocks();
    const unmatched = [...state.unmatched].filter((r) => !/127\.0\.0\.1|localhost/.test(r));
    nock.cleanAll();
    nock.enableNetConnect();
    expect(unmatched, 'requests no mock matched').toEqual([]);
    expect(pending, 'mocks never used').toEqual([]);
  });
  return state;
}

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
