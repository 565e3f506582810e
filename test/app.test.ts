import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import { MAX_WEBHOOK_BYTES, startApp } from '../src/app.js';
import { decideTrigger } from '../src/github/triggers.js';
import { RunQueue } from '../src/queue/queue.js';
import { finalAnswer } from './support/scripted-model-server.js';
import {
  gate,
  mockGitHub,
  mockPlainComments,
  mockStatusComment,
  sign,
  startHarness,
  waitFor,
  type Harness,
} from './github/helpers/app-harness.js';
import { silentLog } from './github/helpers/github.js';
import { useStrictNock } from './github/helpers/strict-nock.js';
import { commentPayload, labeledPayload } from './github/helpers/payloads.js';

useStrictNock();

let harness: Harness | undefined;
let cleanupModel: { close(): Promise<void> } | undefined;
afterEach(async () => {
  const root = harness?.root;
  await harness?.stop();
  harness = undefined;
  await cleanupModel?.close();
  if (cleanupModel && root) rmSync(root, { recursive: true, force: true });
  cleanupModel = undefined;
});

const maintainer = { login: 'Codertocat', id: 21031067 };

describe('startApp without credentials', () => {
  it('serves the manifest registration flow with the app.yml permissions', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'frognano-reg-'));
    const saved = process.env.NO_SMEE_SETUP;
    process.env.NO_SMEE_SETUP = 'true'; // Probot reads this from process.env only.
    try {
      const app = await startApp({
        log: silentLog,
        env: {
          PATH: process.env.PATH,
          PORT: '0',
          HOST: '127.0.0.1',
          FROGNANO_DATA_DIR: dataDir,
          NODE_ENV: 'test',
        },
      });
      try {
        expect(app.registering).toBe(true);
        const page = await (await fetch(`${app.url}/probot`)).text();
        const manifest =
          /name="manifest" value="([^"]*)"/.exec(page)?.[1] ??
          /value='([^']*)'/.exec(page)?.[1] ??
          page;
        const decoded = manifest.replace(/&quot;/g, '"').replace(/&#34;/g, '"');
        expect(decoded).toContain('"default_events":["issues","issue_comment"]');
        expect(decoded).toContain(
          '"default_permissions":{"contents":"write","issues":"write","pull_requests":"write","metadata":"read"}',
        );
        expect(decoded).not.toContain('workflows');
      } finally {
        await app.stop();
      }
    } finally {
      if (saved === undefined) delete process.env.NO_SMEE_SETUP;
      else process.env.NO_SMEE_SETUP = saved;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the webhook endpoint (real HTTP server)', () => {
  it('rejects a bad signature and starts nothing', async () => {
    harness = await startHarness();
    const payload = labeledPayload();
    const status = await harness.deliver(
      'issues',
      payload,
      'bad-sig',
      sign(JSON.stringify(payload), 'wrong'),
    );
    expect(status).toBe(400);
    const unsigned = await fetch(`${harness.url}/api/github/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issues',
        'x-github-delivery': 'x',
      },
      body: JSON.stringify(payload),
    });
    expect(unsigned.status).toBe(400);
    expect(harness.app.queue!.pendingDeliveries()).toEqual([]);
    expect(harness.app.queue!.list()).toEqual([]);
  });

  it('answers 413 to a body announced over 25 MiB without reading it, and stays up', async () => {
    harness = await startHarness();
    const url = new URL(`${harness.url}/api/github/webhooks`);
    const big = Buffer.alloc(MAX_WEBHOOK_BYTES + 1024, 0x20);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-length': big.length,
            'x-github-event': 'issues',
            'x-github-delivery': 'huge',
            'x-hub-signature-256': sign('{}'),
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      // The server may close the socket while the body is still being written.
      req.on('error', (error) => setTimeout(() => reject(error), 2000).unref());
      req.end(big);
    });
    expect(status).toBe(413);
    const payload = labeledPayload();
    const bad = await harness.deliver('issues', payload, 'after', sign('{}'));
    expect(bad).toBe(400);
    expect(harness.app.queue!.pendingDeliveries()).toEqual([]);
  });

  it('makes one run from a duplicated delivery and reports an empty patch plainly', async () => {
    harness = await startHarness({
      script: [finalAnswer('The README already spells commit correctly.')],
    });
    const gh = mockGitHub();
    mockStatusComment(gh);
    const payload = labeledPayload({ sender: maintainer });
    expect(await harness.deliver('issues', payload, 'delivery-1')).toBe(200);
    expect(await harness.deliver('issues', payload, 'delivery-1')).toBe(200);
    await harness.app.intake!.idle();
    await harness.app.workers!.idle();
    const runs = harness.app.queue!.list();
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ state: 'done', outcome: 'no_change' });
    expect(gh.reactions).toEqual(['eyes']);
    expect(gh.statusBodies[0]).toContain('queued (position 1)');
    expect(gh.statusBodies.at(-1)).toContain(
      'no pull request: the model finished without changing any file.',
    );
    expect(gh.statusBodies.at(-1)).toContain('> The README already spells commit correctly.');
    expect(gh.statusBodies.at(-1)).toContain('/frognano retry');
    expect(
      gh.calls.filter((c) => c.startsWith('POST /repos/Codertocat/Hello-World/issues/1/comments')),
    ).toHaveLength(1);
    expect(harness.model!.chatRequests).toHaveLength(1);
    // Probot's real App auth end to end: every call carried the credential its route wants
    // (an App JWT for the token mint, a minted installation token elsewhere).
    expect(gh.authFailures).toEqual([]);
    expect(gh.tokens.size).toBeGreaterThan(0);
  });
});

describe('durable intake', () => {
  it('handles a delivery acknowledged before a crash but never processed, at the next start', async () => {
    const first = await startHarness({ script: [finalAnswer('Nothing to change.')] });
    const dataDir = first.dataDir;
    const root = first.root;
    await first.app.stop();
    // What the webhook handler had recorded when the process died: the delivery, nothing more.
    const queue = RunQueue.open({ dataDir, concurrency: 1 });
    const decision = decideTrigger('issues', labeledPayload({ sender: maintainer }), {
      label: 'frognano',
    });
    expect(queue.recordDelivery('acked-then-crashed', decision.kind, decision)).toBe(true);
    queue.close();

    const gh = mockGitHub();
    mockStatusComment(gh);
    harness = await startHarness({ root, dataDir, model: first.model });
    cleanupModel = first.model;
    await harness.app.intake!.idle();
    await harness.app.workers!.idle();
    expect(harness.app.queue!.pendingDeliveries()).toEqual([]);
    expect(harness.app.queue!.list()).toMatchObject([
      { deliveryId: 'acked-then-crashed', state: 'done' },
    ]);
    expect(gh.reactions).toEqual(['eyes']);
    // A redelivery of the same delivery id by GitHub changes nothing.
    expect(
      await harness.deliver('issues', labeledPayload({ sender: maintainer }), 'acked-then-crashed'),
    ).toBe(200);
    await harness.app.intake!.idle();
    expect(harness.app.queue!.list()).toHaveLength(1);
  });
});

describe('triggers through probot.receive()', () => {
  it('refuses a sender without write access with one polite comment and no run', async () => {
    harness = await startHarness();
    const gh = mockGitHub({ permission: 'read', reactions: false });
    mockPlainComments(gh);
    await harness.app.probot!.receive({
      id: 'unauthorized-1',
      name: 'issues',
      payload: labeledPayload({ sender: { login: 'drive-by', id: 5 } }) as never,
    });
    await harness.app.probot!.receive({
      id: 'unauthorized-2',
      name: 'issue_comment',
      payload: commentPayload({
        sender: { login: 'drive-by', id: 5 },
        body: '/frognano retry',
      }) as never,
    });
    await harness.app.intake!.idle();
    // Asked twice, answered once.
    expect(gh.comments).toEqual([
      'Sorry @drive-by, only people with write access to this repository can start or cancel frognano runs.',
    ]);
    expect(gh.reactions).toEqual([]);
    expect(harness.app.queue!.list()).toEqual([]);
    expect(harness.model!.chatRequests).toHaveLength(0);
  });

  it('ignores bots (ourselves included), other labels and edited comments without any API call', async () => {
    harness = await startHarness();
    const bot = { login: 'frognano[bot]', id: 41898282, type: 'Bot' };
    const events = [
      { name: 'issues', payload: labeledPayload({ sender: bot }) },
      { name: 'issues', payload: labeledPayload({ label: 'bug' }) },
      {
        name: 'issue_comment',
        payload: commentPayload({ action: 'edited', body: '/frognano retry' }),
      },
      {
        name: 'issue_comment',
        payload: commentPayload({ body: '/frognano retry', pullRequest: true }),
      },
      {
        name: 'issue_comment',
        payload: commentPayload({ body: '/frognano retry', sender: bot, commenter: bot }),
      },
    ];
    for (const [i, e] of events.entries()) {
      await harness.app.probot!.receive({
        id: `ignored-${i}`,
        name: e.name,
        payload: e.payload,
      } as never);
    }
    await harness.app.intake!.idle();
    expect(harness.app.queue!.pendingDeliveries()).toEqual([]);
    expect(harness.app.queue!.list()).toEqual([]);
  });

  it('refuses closed issues after the permission check', async () => {
    harness = await startHarness();
    const gh = mockGitHub();
    mockPlainComments(gh);
    await harness.app.probot!.receive({
      id: 'closed-1',
      name: 'issues',
      payload: labeledPayload({ sender: maintainer, state: 'closed' }) as never,
    });
    await harness.app.intake!.idle();
    expect(gh.comments).toEqual([
      'frognano does not run on closed issues. Reopen the issue and try again.',
    ]);
    expect(harness.app.queue!.list()).toEqual([]);
  });

  it('answers a retry during a run, cancels a queued run, then cancels the running one', async () => {
    const held = gate();
    harness = await startHarness({ script: [held.step] });
    const gh = mockGitHub();
    mockStatusComment(gh, 1);
    mockStatusComment(gh, 2);
    mockPlainComments(gh, 1);
    const receive = (id: string, name: string, payload: unknown) =>
      harness!.app.probot!.receive({ id, name, payload } as never);

    await receive('label-1', 'issues', labeledPayload({ sender: maintainer }));
    await held.reached; // issue 1 is running: the model is "thinking"
    await receive('label-2', 'issues', labeledPayload({ sender: maintainer, issueNumber: 2 }));
    await receive(
      'retry-1',
      'issue_comment',
      commentPayload({ sender: maintainer, body: '/frognano retry try harder' }),
    );
    await harness.app.intake!.idle();
    expect(gh.comments).toHaveLength(1);
    expect(gh.comments[0]).toContain('a run for this issue is already running');
    expect(gh.comments[0]).toContain('/frognano cancel');
    const [run1, run2] = harness.app.queue!.list();
    expect(run1).toMatchObject({ state: 'running' });
    expect(run2).toMatchObject({ state: 'queued' });

    // Cancel the queued run of issue 2: at once, no pipeline.
    await receive(
      'cancel-2',
      'issue_comment',
      commentPayload({ sender: maintainer, issueNumber: 2, body: '/frognano cancel' }),
    );
    await harness.app.intake!.idle();
    expect(harness.app.queue!.get(run2!.id)).toMatchObject({ state: 'cancelled' });

    // Cancel the running run of issue 1: the pipeline is aborted and cleans up.
    await receive(
      'cancel-1',
      'issue_comment',
      commentPayload({ sender: maintainer, body: '/frognano cancel' }),
    );
    await harness.app.intake!.idle();
    await waitFor(
      () => harness!.app.queue!.get(run1!.id)?.state === 'cancelled',
      'the run to be cancelled',
    );
    held.release();
    await harness.app.workers!.idle();
    expect(gh.reactions).toEqual(['eyes', 'eyes', 'eyes', 'eyes', 'eyes']);
    const last = gh.statusBodies.at(-1) ?? '';
    expect(gh.statusBodies.some((b) => b.includes('cancelled by @Codertocat'))).toBe(true);
    expect(last).toContain('cancelled');
    expect(harness.app.queue!.list().map((r) => r.state)).toEqual(['cancelled', 'cancelled']);
  });
});

describe('cancel from another process', () => {
  it('stops a running run when the cancel flag appears in the shared database', async () => {
    const held = gate();
    harness = await startHarness({ script: [held.step] });
    const gh = mockGitHub();
    mockStatusComment(gh, 1);
    await harness.app.probot!.receive({
      id: 'label-x',
      name: 'issues',
      payload: labeledPayload({ sender: maintainer }) as never,
    });
    await held.reached;
    // `frognano serve` in another process records the cancel; this worker only sees SQLite.
    const other = RunQueue.open({ dataDir: harness.dataDir, concurrency: 1 });
    const cancelled = other.requestCancel('codertocat/hello-world#1');
    other.close();
    expect(cancelled).toMatchObject({ wasRunning: true });
    await waitFor(() => harness!.app.queue!.list()[0]?.state === 'cancelled', 'the run to stop');
    held.release();
    await harness.app.workers!.idle();
    expect(gh.statusBodies.at(-1)).toContain('cancelled');
  });
});

describe('frognano serve + frognano worker on one data directory', () => {
  it('the server records and queues, the worker (another App instance) runs it', async () => {
    const serve = await startHarness({
      mode: 'serve',
      script: [finalAnswer('Nothing to change.')],
    });
    harness = serve;
    const gh = mockGitHub();
    mockStatusComment(gh);
    const worker = await startHarness({
      mode: 'worker',
      root: serve.root,
      dataDir: serve.dataDir,
      model: serve.model,
    });
    try {
      expect(worker.app.url).toBeUndefined();
      expect(serve.app.workers).toBeUndefined();
      expect(await serve.deliver('issues', labeledPayload({ sender: maintainer }), 'split-1')).toBe(
        200,
      );
      await serve.app.intake!.idle();
      await waitFor(
        () => worker.app.queue!.list()[0]?.state === 'done',
        'the worker to finish the run',
      );
      expect(gh.statusBodies.at(-1)).toContain('no pull request');
    } finally {
      await worker.app.stop();
    }
  });
});
