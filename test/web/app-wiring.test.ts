// The App serves the web pages: /runs only when the OAuth client is configured, the run page at
// the run's URL (404 for a run it does not know).
import { afterEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../github/helpers/app-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

describe('web pages in the App (frognano serve)', () => {
  it('serves /runs with GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET set', async () => {
    harness = await startHarness({
      mode: 'serve',
      env: { GITHUB_CLIENT_ID: 'Iv1.wiring', GITHUB_CLIENT_SECRET: 'wiring-secret-0123456789' },
    });
    const runs = await fetch(`${harness.url}/runs`);
    expect(runs.status).toBe(200);
    expect(await runs.text()).toContain('Sign in with GitHub');
    const login = await fetch(`${harness.url}/runs/login`, { redirect: 'manual' });
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toMatch(
      /^file:\/\/.*\/login\/oauth\/authorize\?client_id=Iv1\.wiring&redirect_uri=https%3A%2F%2Ffrognano\.example\.com%2Fruns%2Fcallback&state=/,
    );
    expect(login.headers.get('set-cookie')).toMatch(
      /^frognano_oauth=[\w-]+; Path=\/runs; Max-Age=600; HttpOnly; SameSite=Lax; Secure$/,
    );
    const unknown = await fetch(
      `${harness.url}/frognano/runs/0f4c1b2a-1111-4222-8333-444455556666/trajectory`,
    );
    expect(unknown.status).toBe(404);
  });

  it('leaves /runs off without them', async () => {
    harness = await startHarness({ mode: 'serve' });
    expect((await fetch(`${harness.url}/runs`)).status).toBe(404);
  });
});
