// `sandbox: local` in a workflow: the model's Bash would run as the runner's user, next to the
// frognano process, and read its environment (/proc/<pid>/environ: GITHUB_TOKEN,
// ACTIONS_RUNTIME_TOKEN, the OIDC request token, job secrets). Under GITHUB_ACTIONS=true the
// action refuses it in one line unless the operator opts in by name, as the test harness does
// (its other tests run without Docker that way). The CLI in a child process, a runner's env.
import { afterEach, describe, expect, it } from 'vitest';
import {
  ALLOW_LOCAL_SANDBOX_VALUE,
  ALLOW_LOCAL_SANDBOX_VARIABLE,
} from '../../src/action/local-sandbox-guard.js';
import { commentPayload } from '../github/helpers/payloads.js';
import { startActionHarness, type ActionHarness } from './helpers/action-harness.js';
import { mockPermissions, mockStatusThread, READER } from './helpers/action-github.js';
import { labeled } from './helpers/label-run.js';

let harness: ActionHarness | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

const REFUSAL = `FROGNANO_SANDBOX=local is refused in GitHub Actions: the model's commands would run next to this process and could read the job's secrets (GITHUB_TOKEN, ACTIONS_RUNTIME_TOKEN) from /proc; use sandbox: docker, or set ${ALLOW_LOCAL_SANDBOX_VARIABLE}=${ALLOW_LOCAL_SANDBOX_VALUE} to accept that`;

describe('frognano action with a local sandbox', () => {
  it.each([
    ['without the opt-in', undefined],
    ['with an opt-in that is not the exact phrase', 'true'],
  ])(
    'is refused %s: exit 2, one line, nothing asked of GitHub or the model',
    async (_, value) => {
      harness = await startActionHarness();
      const run = await harness.run('issues', labeled(), {
        [ALLOW_LOCAL_SANDBOX_VARIABLE]: value,
      });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr.trim().split('\n')).toEqual([`frognano: ${REFUSAL}`]);
      expect(run.outputs).toEqual({});
      expect(harness.fake.arrivals).toEqual([]);
      expect(harness.model.requests).toEqual([]);
    },
    60_000,
  );

  it('is refused through the action input too (sandbox: local sets FROGNANO_SANDBOX)', async () => {
    harness = await startActionHarness({ sandbox: 'docker' });
    const run = await harness.run('issues', labeled(), { FROGNANO_SANDBOX: 'local' });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.trim().split('\n')).toEqual([`frognano: ${REFUSAL}`]);
  }, 60_000);

  it('runs outside GitHub Actions (development), where no job secret is at stake', async () => {
    harness = await startActionHarness();
    mockPermissions(harness.gh);
    mockStatusThread(harness.gh, 1);
    const payload = commentPayload({
      body: '/frognano retry',
      sender: READER,
      commenter: READER,
      installationId: null,
    });
    const run = await harness.run('issue_comment', payload, {
      GITHUB_ACTIONS: undefined,
      [ALLOW_LOCAL_SANDBOX_VARIABLE]: undefined,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.outputs.outcome).toBe('refused');
  }, 60_000);
});
