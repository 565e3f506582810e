// A queued run cancelled as intake's last write ends: the cancel's writes (its 👀 and the
// "cancelled" status) were pushed after the write loop had found nothing left to send but before
// it had marked itself finished, so no loop ever sent them, and the status comment kept saying
// "queued" (1 of 4 load runs). Reproduced deterministically: the real SQLite queue and Intake,
// GitHub behind strict nock; the "queued" comment is held at GitHub while the cancel is decided,
// and the cancel goes on a fixed number of promise turns after the "queued" write's last step,
// for every number of turns up to 12 (one of them lands in the gap).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import nock from 'nock';
import { expect, it } from 'vitest';
import { decideTrigger, Intake, type AcceptedTrigger } from '../../../src/github/intake/index.js';
import type { IssueJob } from '../../../src/github/job.js';
import { KeyedLock } from '../../../src/github/keyed-lock.js';
import { SqliteQueue } from '../../../src/queue/sqlite-queue.js';
import type { Queue } from '../../../src/queue/types.js';
import { API, silentLog, testOctokit } from '../helpers/github.js';
import { commentPayload, labeledPayload } from '../helpers/payloads.js';
import { useStrictNock } from '../helpers/strict-nock.js';

useStrictNock();

const REPO = '/repos/Codertocat/Hello-World';
const MAINTAINER = { login: 'Codertocat', id: 21031067 };

function opener(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

function accepted(event: string, payload: unknown): AcceptedTrigger {
  const decision = decideTrigger(event, payload, { label: 'frognano' });
  if (decision.kind === 'ignore') throw new Error(`not a trigger: ${decision.reason}`);
  return decision as AcceptedTrigger;
}

/** One label, its "queued" comment held at GitHub, a cancel `turns` promise turns late. */
async function cancelAfterQueued(turns: number): Promise<string[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'frognano-intake-race-'));
  const real = SqliteQueue.open<IssueJob>({ dataDir: dir, concurrency: 1 });
  const posted = opener();
  const answer = opener();
  const cancelAsked = opener();
  const cancelGo = opener();
  // The real queue; the cancel waits for its moment, which the "queued" write's last step
  // (counting its REST calls) sets.
  const queue = new Proxy(real, {
    get(target, prop) {
      if (prop === 'requestCancel') {
        return async (key: string) => {
          cancelAsked.open();
          await cancelGo.opened;
          return target.requestCancel(key);
        };
      }
      if (prop === 'addRestCalls') {
        return async (id: string, calls: number) => {
          await target.addRestCalls(id, calls);
          if (!answered) return;
          // The "queued" write goes on `turns` promise turns; the cancel goes on one step
          // behind it at each turn, so its writes fall after the write loop's check at some turn.
          const spin = (async () => {
            for (let i = 0; i < turns; i++) await null;
          })();
          void Promise.resolve().then(cancelGo.open);
          await spin;
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  }) as Queue<IssueJob>;
  const bodies: string[] = [];
  let answered = false;
  nock(API)
    .persist()
    .get(`${REPO}/collaborators/Codertocat/permission`)
    .reply(200, { permission: 'write', role_name: 'write' })
    .post(/^\/repos\/Codertocat\/Hello-World\/issues\/(1|comments\/\d+)\/reactions$/)
    .reply(201, { id: 1 })
    .get(`${REPO}/issues/1/comments`)
    .query(true)
    .reply(200, [])
    .post(`${REPO}/issues/1/comments`)
    .reply(async (_uri, body) => {
      bodies.push(String((body as { body: string }).body));
      posted.open();
      await answer.opened;
      return [201, { id: 1001 }];
    })
    .patch(`${REPO}/issues/comments/1001`)
    .reply(200, (_uri, body) => {
      bodies.push(String((body as { body: string }).body));
      return { id: 1001 };
    });
  const intake = new Intake({
    queue,
    auth: async () => testOctokit(),
    log: silentLog,
    lock: new KeyedLock(),
  });
  try {
    const label = labeledPayload({ sender: MAINTAINER, issueNumber: 1 });
    await intake.accept('label', accepted('issues', label));
    await posted.opened;
    const cancel = commentPayload({ sender: MAINTAINER, issueNumber: 1, body: '/frognano cancel' });
    await intake.accept('cancel', accepted('issue_comment', cancel));
    await cancelAsked.opened;
    answered = true;
    answer.open();
    await intake.idle();
    const [run] = await real.list();
    expect(run?.state).toBe('cancelled');
    return bodies;
  } finally {
    await intake.stop();
    await real.close();
    nock.cleanAll();
    await rm(dir, { recursive: true, force: true });
  }
}

it('the status comment says "cancelled" last, whenever the cancel comes as the "queued" write ends', async () => {
  for (let turns = 0; turns <= 12; turns++) {
    const bodies = await cancelAfterQueued(turns);
    expect(bodies[0], `after ${turns} turns`).toContain('queued (position 1)');
    expect(bodies.at(-1), `after ${turns} turns`).toContain('cancelled by @Codertocat');
  }
}, 60_000);
