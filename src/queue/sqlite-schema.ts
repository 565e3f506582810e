// The embedded queue's SQLite schema: version 0 as first released, then the migrations that
// take it forward (sqlite-store.ts runs them on open; PRAGMA user_version holds the version).
// Version 0: the schema as first released (no user_version). Kept verbatim so an old file and a
// new one go through the same migrations.
export const SCHEMA_V0 = `
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

/** MIGRATIONS[i] takes the schema from version i to i + 1. Append only; never edit a shipped one. */
export const MIGRATIONS: string[] = [
  // 1: replay detection on the raw body; runs accepted before their permission check.
  `ALTER TABLE deliveries ADD COLUMN body_sha256 TEXT;
   CREATE INDEX deliveries_by_body ON deliveries(body_sha256, received_at);
   ALTER TABLE runs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;`,
  // 2: fair share across groups (repositories). Earlier runs are each their own group, turn 0:
  // they keep their order and go before later arrivals.
  `ALTER TABLE runs ADD COLUMN grp TEXT NOT NULL DEFAULT '';
   UPDATE runs SET grp = key;
   ALTER TABLE runs ADD COLUMN turn INTEGER NOT NULL DEFAULT 0;
   CREATE INDEX runs_fair ON runs(state, turn, seq);
   CREATE INDEX runs_by_group ON runs(grp, state, turn);
   CREATE TABLE fair_groups (grp TEXT PRIMARY KEY, claimed_turn INTEGER NOT NULL);`,
];

export const SCHEMA_VERSION = MIGRATIONS.length;
