// Cancelling a run in a workflow: the run lives in one workflow run, `/frognano cancel` arrives
// in another (on another runner: they share nothing but GitHub). The cancelling run, after its
// permission check, gives the bot's status comment the bot's 👎; the running one sees it within
// FROGNANO_ACTION_CANCEL_POLL_SECONDS and stops its run. And the workflow run itself being
// cancelled (the runner's SIGINT) stops the run the same way.
import { afterEach, describe, expect, it } from 'vitest';
import { gate, waitFor } from '../github/helpers/app-harness.js';
import { commentPayload } from '../github/helpers/payloads.js';
import { startActionHarness, type ActionHarness } from './helpers/action-harness.js';
import {
  ACTIONS_BOT,
  MAINTAINER,
  mockNoOwnerConfig,
  mockPermissions,
  mockStatusThread,
  mockTriggerReactions,
  type StatusThread,
} from './helpers/action-github.js';
import { expectStrictGitHub, git, labeled } from './helpers/label-run.js';

let harness: ActionHarness | undefined;
let release: (() => void) | undefined;
afterEach(async () => {
  release?.();
  await harness?.stop();
  harness = undefined;
});

const POLL = { FROGNANO_ACTION_CANCEL_POLL_SECONDS: '0.5' };

/** A run held in its first model request, its status comment showing it running. */
async function runningRun(): Promise<{
  h: ActionHarness;
  thread: StatusThread;
  started: ReturnType<ActionHarness['start']>;
}> {
  const held = gate();
  release = held.release;
  const h = await startActionHarness({ script: [held.step] });
  harness = h;
  mockPermissions(h.gh);
  mockTriggerReactions(h.gh);
  mockNoOwnerConfig(h.gh);
  const thread = mockStatusThread(h.gh, 1);
  const started = h.start('issues', labeled(), POLL);
  await held.reached;
  await waitFor(() => thread.comment?.body.includes('running: ') === true, 'the running status');
  return { h, thread, started };
}

function cancelComment() {
  return commentPayload({
    body: '/frognano cancel',
    sender: MAINTAINER,
    commenter: MAINTAINER,
    installationId: null,
  });
}

describe('frognano action: cancel', () => {
  it('a /frognano cancel handled by another workflow run stops the run', async () => {
    const { h, thread, started } = await runningRun();

    const cancel = await h.run('issue_comment', cancelComment());
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.outputs.outcome).toBe('cancel_requested');
    expect(h.gh.reactions).toEqual(['eyes', 'eyes']);

    const run = await started.done;
    expect(run.code, run.stderr).toBe(0);
    expect(run.outputs).toMatchObject({ outcome: 'cancelled', 'pr-number': '' });
    expect(thread.comment?.body).toContain('🐸 **frognano**: cancelled');
    expect(run.summary).toContain('cancelled');
    // The bot's cancel reaction was taken back once the run had stopped; nothing was pushed.
    expect(thread.reactions).toEqual([]);
    expect(h.gh.calls.filter((c) => c.startsWith('DELETE '))).toHaveLength(1);
    expect(git(h, 'branch', '--list', 'frognano/*').trim()).toBe('');
    expectStrictGitHub(h);
  }, 120_000);

  it('the workflow run being cancelled (SIGINT) stops the run, which says it was cancelled', async () => {
    const { thread, started } = await runningRun();
    started.child.kill('SIGINT');
    const run = await started.done;
    expect(run.code, run.stderr).toBe(0);
    expect(run.outputs.outcome).toBe('cancelled');
    expect(thread.comment?.body).toContain('🐸 **frognano**: cancelled');
  }, 120_000);

  it('a cancel with nothing running says so', async () => {
    harness = await startActionHarness();
    const h = harness;
    mockPermissions(h.gh);
    mockTriggerReactions(h.gh);
    const thread = mockStatusThread(h.gh, 1);
    // What an earlier workflow run left: its run finished.
    thread.comment = {
      id: 1001,
      body: '<!-- frognano:status -->\n🐸 **frognano**: opened draft pull request #7 (https://github.com/Codertocat/Hello-World/pull/7) for human review.',
      user: { login: ACTIONS_BOT, type: 'Bot' },
    };
    const run = await h.run('issue_comment', cancelComment());
    expect(run.code, run.stderr).toBe(0);
    expect(run.outputs.outcome).toBe('nothing_to_cancel');
    expect(h.gh.comments).toEqual([
      `@${MAINTAINER.login}, there is no queued or running frognano run on this issue to cancel.`,
    ]);
    expect(thread.reactions).toEqual([]);
  }, 60_000);
});
