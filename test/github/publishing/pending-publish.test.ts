// The on-disk record of an unfinished publish, and the start-up cleanup of publish leftovers.
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  findPendingPublishForIssue,
  loadPendingPublish,
  pendingPublishDir,
  prunePendingPublishes,
  removePendingPublishes,
  savePendingPublish,
  type PendingPublish,
} from '../../../src/github/publishing/pending-publish.js';
import { removeStalePublishDirs } from '../../../src/github/publishing/publish.js';

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'frognano-pending-'));
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

function record(overrides: Partial<PendingPublish> = {}): PendingPublish {
  return {
    version: 1,
    runId: randomUUID(),
    installationId: 1,
    owner: 'Octo',
    repo: 'Calc',
    issueNumber: 5,
    issueTitle: 'add() subtracts',
    baseBranch: 'main',
    baseCommit: 'a'.repeat(40),
    patch: 'diff --git a/calc.py b/calc.py\n',
    body: 'Fixes #5.',
    coAuthor: { login: 'octocat', id: 1 },
    partial: false,
    verified: 'Tests passed.',
    savedAt: new Date().toISOString(),
    ...overrides,
  };
}

describe('pending publishes', () => {
  it('round-trips, finds the newest of an issue (case-insensitively) and forgets them all', async () => {
    const older = record({ savedAt: '2026-01-01T00:00:00.000Z' });
    const newer = record({ savedAt: '2026-01-02T00:00:00.000Z', pushedCommit: 'b'.repeat(40) });
    const other = record({ issueNumber: 6 });
    for (const r of [older, newer, other]) await savePendingPublish(dataDir, r);
    expect(await loadPendingPublish(dataDir, older.runId)).toEqual(older);
    const issue = { owner: 'octo', repo: 'calc', issueNumber: 5 };
    expect(await findPendingPublishForIssue(dataDir, issue)).toEqual(newer);
    await removePendingPublishes(dataDir, issue);
    expect(await findPendingPublishForIssue(dataDir, issue)).toBeUndefined();
    expect(readdirSync(pendingPublishDir(dataDir))).toEqual([`${other.runId}.json`]);
  });

  it('ignores a damaged record and refuses a run id that is not one', async () => {
    const r = record();
    mkdirSync(pendingPublishDir(dataDir), { recursive: true });
    writeFileSync(join(pendingPublishDir(dataDir), `${r.runId}.json`), '{"version":1');
    expect(await loadPendingPublish(dataDir, r.runId)).toBeUndefined();
    await expect(savePendingPublish(dataDir, record({ runId: '../../etc' }))).rejects.toThrow();
    expect(await loadPendingPublish(dataDir, '../x')).toBeUndefined();
  });

  it('prunes records nobody retried for 14 days and temporary files a crash left', async () => {
    const old = record();
    const fresh = record();
    await savePendingPublish(dataDir, old);
    await savePendingPublish(dataDir, fresh);
    const dir = pendingPublishDir(dataDir);
    const past = new Date(Date.now() - 15 * 24 * 3600_000);
    utimesSync(join(dir, `${old.runId}.json`), past, past);
    writeFileSync(join(dir, `${fresh.runId}.json.x.tmp`), '{');
    expect((await prunePendingPublishes(dataDir)).sort()).toEqual(
      [`${old.runId}.json`, `${fresh.runId}.json.x.tmp`].sort(),
    );
    expect(readdirSync(dir)).toEqual([`${fresh.runId}.json`]);
  });
});

describe('removeStalePublishDirs', () => {
  it("removes clones of dead owners and of this pid's previous life, keeps live and recent unowned ones", async () => {
    const root = join(dataDir, 'publish');
    const names = [
      'publish-111-dead',
      'publish-222-live',
      `publish-${process.pid}-mine`,
      'publish-AbC123', // the old naming: no owner, recent
      'publish-old000', // the old naming: no owner, a day old
      'unrelated',
    ];
    for (const n of names) mkdirSync(join(root, n, 'tree'), { recursive: true });
    const day = new Date(Date.now() - 24 * 3600_000);
    utimesSync(join(root, 'publish-old000'), day, day);
    const removed = await removeStalePublishDirs(root, { isAlive: (pid) => pid === 222 });
    expect(removed.sort()).toEqual(
      ['publish-111-dead', `publish-${process.pid}-mine`, 'publish-old000'].sort(),
    );
    expect(readdirSync(root).sort()).toEqual(['publish-222-live', 'publish-AbC123', 'unrelated']);
    expect(await removeStalePublishDirs(join(dataDir, 'missing'))).toEqual([]);
  });
});
