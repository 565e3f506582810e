// SqliteQueue.exclusive across processes sharing one data directory (`frognano serve` and
// `frognano worker`): the lease is renewed while its holder works, so a section longer than
// the lease is still alone; a holder killed with -9 stops renewing and its lease lapses within
// one TTL. A short TTL keeps the test to seconds.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { SqliteQueue } from '../../src/queue/sqlite-queue.js';

const TTL_MS = 300;
const KEY = 'o/r#1';
const LOCK_NOTE = 'exclusive-lock';

let dir: string;
const opened: SqliteQueue[] = [];
const children: ChildProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'frognano-exclusive-'));
});

afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const q of opened.splice(0)) await q.close();
  rmSync(dir, { recursive: true, force: true });
});

function open(): SqliteQueue {
  const q = SqliteQueue.open({ dataDir: dir, concurrency: 1, exclusiveLockMs: TTL_MS });
  opened.push(q);
  return q;
}

/** The lease's end as the database holds it (undefined: free). */
function leaseEnd(q: SqliteQueue): number | undefined {
  const note = q.store.getNote(KEY, LOCK_NOTE);
  return note === undefined ? undefined : Number(note.split(' ')[1]);
}

/** A child process in the section; resolves once it holds the lock. */
async function holdInChild(
  hold: number | 'forever',
): Promise<{ child: ChildProcess; out: Promise<number> }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(import.meta.dirname, 'sqlite-exclusive-holder-child.ts'),
      dir,
      KEY,
      String(TTL_MS),
      String(hold),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(child);
  let text = '';
  let locked!: () => void;
  let out!: (at: number) => void;
  const lockedP = new Promise<void>((resolve, reject) => {
    locked = resolve;
    child.on('exit', (code, signal) => reject(new Error(`holder exited: ${code ?? signal}`)));
  });
  const outP = new Promise<number>((resolve) => (out = resolve));
  child.stdout!.on('data', (c: Buffer) => {
    text += c.toString();
    if (text.includes('locked\n')) locked();
    const m = /out (\d+)\n/.exec(text);
    if (m) out(Number(m[1]));
  });
  await lockedP;
  return { child, out: outP };
}

it('keeps a section alone while another process holds it past the lease, and frees it at once on release', async () => {
  const q = open();
  const { out } = await holdInChild(TTL_MS * 6);
  let entered = 0;
  const waiting = q.exclusive(KEY, async () => {
    entered = Date.now();
  });
  await sleep(TTL_MS * 3);
  // Renewed: still held, and with a live lease (never one that outlives its holder by more).
  const end = leaseEnd(q);
  expect(end).toBeDefined();
  expect(end! - Date.now()).toBeGreaterThan(0);
  expect(end! - Date.now()).toBeLessThanOrEqual(TTL_MS);
  expect(entered).toBe(0);
  await waiting;
  const childOut = await out;
  expect(entered).toBeGreaterThanOrEqual(childOut);
  // Freed on release, not left to lapse.
  expect(entered - childOut).toBeLessThan(TTL_MS);
  expect(leaseEnd(q)).toBeUndefined();
});

it('renews only its own lease: one taken over by another holder is left as it is', async () => {
  const q = open();
  let seen: string | undefined;
  const theirs = `someone-else ${Date.now() + 10_000}`;
  await q.exclusive(KEY, async () => {
    // As if this holder had stalled past the lease and another process had taken the lock.
    q.store.setNote(KEY, LOCK_NOTE, theirs);
    await sleep(TTL_MS * 2);
    seen = q.store.getNote(KEY, LOCK_NOTE);
  });
  expect(seen).toBe(theirs);
  // Nor is it deleted on release.
  expect(q.store.getNote(KEY, LOCK_NOTE)).toBe(theirs);
});

it('a holder killed with -9 mid-section stops renewing: its lease lapses and another process gets it', async () => {
  const q = open();
  const { child } = await holdInChild('forever');
  // Alive, the child keeps its lease well past the TTL.
  await sleep(TTL_MS * 4);
  expect(leaseEnd(q)).toBeGreaterThan(Date.now());
  child.kill('SIGKILL');
  const killed = Date.now();
  await q.exclusive(KEY, async () => undefined);
  const waited = Date.now() - killed;
  // The rest of the last renewal's lease: at most one TTL, plus polling and scheduling slack.
  expect(waited).toBeLessThan(TTL_MS + 1500);
});
