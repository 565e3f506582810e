import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore, SCHEMA_VERSION } from '../../src/queue/sqlite-store.js';

// The schema exactly as the first release created it (no user_version), copied from git.
const RELEASED_SCHEMA = `
CREATE TABLE IF NOT EXISTS deliveries (
  delivery_id TEXT PRIMARY KEY,
  event TEXT NOT NULL,
  payload TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  received_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  key TEXT NOT NULL,
  delivery_id TEXT UNIQUE,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  job TEXT NOT NULL,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  rest_calls INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER,
  outcome TEXT,
  summary TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS runs_one_active_per_key ON runs(key) WHERE state IN ('queued', 'running');
CREATE INDEX IF NOT EXISTS runs_by_state ON runs(state, seq);
CREATE TABLE IF NOT EXISTS notes (
  key TEXT NOT NULL,
  name TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (key, name)
);
`;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'frognano-migrate-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function releasedDatabase(): void {
  const db = new Database(join(dir, 'frognano.sqlite'));
  db.pragma('journal_mode = WAL');
  db.exec(RELEASED_SCHEMA);
  const now = Date.now();
  db.prepare(
    `INSERT INTO deliveries (delivery_id, event, payload, received_at) VALUES ('d-pending', 'run', '{"a":1}', ?)`,
  ).run(now);
  db.prepare(
    `INSERT INTO runs (id, key, delivery_id, state, attempts, job, created_at) VALUES ('r-queued', 'o/r#1', 'd-1', 'queued', 0, '{"n":1}', ?)`,
  ).run(now);
  db.prepare(
    `INSERT INTO runs (id, key, delivery_id, state, attempts, job, created_at, finished_at, outcome) VALUES ('r-done', 'o/r#2', 'd-2', 'done', 1, '{"n":2}', ?, ?, 'no_change')`,
  ).run(now, now);
  db.prepare(
    `INSERT INTO notes (key, name, value) VALUES ('o/r#1', 'status-comment-id', '77')`,
  ).run();
  expect(db.pragma('user_version', { simple: true })).toBe(0);
  db.close();
}

describe('SqliteStore schema versions', () => {
  it('migrates a database created by the released schema forward, keeping its rows', () => {
    releasedDatabase();
    const q = SqliteStore.open<{ n: number }>({ dataDir: dir, concurrency: 1 });
    try {
      expect(q.schemaVersion()).toBe(SCHEMA_VERSION);
      expect(SCHEMA_VERSION).toBeGreaterThan(0);
      expect(q.pendingDeliveries()).toMatchObject([{ deliveryId: 'd-pending', payload: { a: 1 } }]);
      expect(q.list().map((r) => [r.id, r.state, r.held])).toEqual([
        ['r-queued', 'queued', false],
        ['r-done', 'done', false],
      ]);
      expect(q.getNote('o/r#1', 'status-comment-id')).toBe('77');
      // The migrated columns work: the old queued run is claimable, replays are detected.
      expect(q.claim()?.id).toBe('r-queued');
      expect(q.admit({ deliveryId: 'x-1', event: 'run', payload: {}, bodySha256: 'h' })).toEqual({
        status: 'recorded',
      });
      expect(q.admit({ deliveryId: 'x-2', event: 'run', payload: {}, bodySha256: 'h' })).toEqual({
        status: 'replay',
        firstDeliveryId: 'x-1',
      });
    } finally {
      q.close();
    }
    // Opening again is a no-op.
    const again = SqliteStore.open({ dataDir: dir, concurrency: 1 });
    expect(again.schemaVersion()).toBe(SCHEMA_VERSION);
    expect(again.list()).toHaveLength(2);
    again.close();
  });

  it('a new database starts at the current version', () => {
    const q = SqliteStore.open({ dataDir: dir, concurrency: 1 });
    expect(q.schemaVersion()).toBe(SCHEMA_VERSION);
    q.close();
  });

  it('refuses a database from a newer version with one line', () => {
    const db = new Database(join(dir, 'frognano.sqlite'));
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    expect(() => SqliteStore.open({ dataDir: dir, concurrency: 1 })).toThrow(
      /schema version \d+, newer than this frognano-bot understands.*upgrade frognano-bot/,
    );
  });
});

describe('a read-only open (frognano runs)', () => {
  it('reads a current database without writing, and leaves an older one unmigrated', () => {
    const current = SqliteStore.open({ dataDir: dir, concurrency: 1 });
    current.close();
    const reader = SqliteStore.open({ dataDir: dir, concurrency: 1, readOnly: true });
    expect(reader.list()).toEqual([]);
    // A listing that tried to write would fail: the connection is read-only.
    expect(() => reader.recordDelivery('d', 'issues', {})).toThrow(/readonly/);
    reader.close();

    rmSync(join(dir, 'frognano.sqlite'));
    releasedDatabase();
    expect(() => SqliteStore.open({ dataDir: dir, concurrency: 1, readOnly: true })).toThrow(
      `${join(dir, 'frognano.sqlite')} has schema version 0, older than this frognano-bot's (${SCHEMA_VERSION}): start the App once to migrate it, then list again`,
    );
    const db = new Database(join(dir, 'frognano.sqlite'), { readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(0);
    db.close();
  });

  it('makes no data directory', () => {
    expect(() =>
      SqliteStore.open({ dataDir: join(dir, 'missing'), concurrency: 1, readOnly: true }),
    ).toThrow();
    expect(existsSync(join(dir, 'missing'))).toBe(false);
  });
});
