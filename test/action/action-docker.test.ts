// `frognano action` with the hardened Docker sandbox, as a self-hosted runner with Docker runs
// it: a label opens one draft pull request, then a review on a fresh runner adds one commit.
import { afterEach, expect, it } from 'vitest';
import { describeDocker, ensureSandboxImage } from '../support/docker-engine.js';
import { startActionHarness, type ActionHarness } from './helpers/action-harness.js';
import { DOCSTRING, reviewAddsOneCommit } from './helpers/follow-up-run.js';
import { fixScript, labelOpensOnePullRequest } from './helpers/label-run.js';

let harness: ActionHarness | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

describeDocker('frognano action (Docker sandbox)', () => {
  it('a label opens one draft PR; a review on a fresh runner adds one commit', async () => {
    await ensureSandboxImage();
    harness = await startActionHarness({
      sandbox: 'docker',
      python: 'python3',
      script: [...fixScript('python3'), ...DOCSTRING],
    });
    const first = await labelOpensOnePullRequest(harness, 'python3');
    await reviewAddsOneCommit(harness, first);
    expect(harness.model.chatRequests.length).toBeGreaterThan(4);
  }, 400_000);
});
