// Strict GitHub API mocking: no request leaves the machine unless a test mocked it, and every
// mock must be used. Loopback stays open for the real local servers tests start.
import nock from 'nock';
import { afterEach, beforeEach, expect } from 'vitest';

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
