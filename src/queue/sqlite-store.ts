// The durable embedded queue: one SQLite file (better-sqlite3) in the data directory.
// - deliveries: every accepted webhook delivery id, so a redelivery never makes a second run,
//   and the raw trigger waits here (state `pending`) until intake has handled it - a crash
//   between acknowledging GitHub and enqueueing loses nothing.
// - runs: one row per run; a partial unique index allows one active (queued/running) run per key.
//   Queued runs are handed out round robin across groups: each run gets a turn when it arrives,
//   and the queue's order is by turn, then arrival (see `enqueue`).
// - notes: small per-key facts that outlive runs (the status comment id of an issue).
// It knows nothing of GitHub: jobs are opaque JSON, keys are strings.
// The schema carries its version in PRAGMA user_version and migrates forward on open.
// One intake and one worker process own a data directory at a time (see data-dir-lock.ts);
// several machines use a shared queue instead.
import { mkdirSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { dataPaths } from '../data-dir.js';
import type {
  AdmitResult,
  EnqueueInput,
  EnqueueResult,
  PendingDelivery,
  RunRecord,
  RunState,
} from './run-record.js';
import { MIGRATIONS, SCHEMA_V0, SCHEMA_VERSION } from './sqlite-schema.js';

export { SCHEMA_VERSION } from './sqlite-schema.js';
export type {
  AdmitResult,
  EnqueueInput,
  EnqueueResult,
  PendingDelivery,
  RunRecord,
  RunState,
} from './run-record.js';

export interface QueueOptions {
  dataDir: string;
  /** Global limit of runs in state `running`. */
  concurrency: number;
  /** Claims per run before an interrupted run is reported failed instead of requeued. */
  maxAttempts?: number;
  /** A delivery whose raw body was seen within this window is a replay (default 7 days). */
  replayWindowMs?: number;
  /**
   * For listings (`frognano runs`): open an existing file read-only, and leave it as it is (no
   * directory made, no migration, no pruning). Writes then fail.
   */
  readOnly?: boolean;
  /** An `exclusive` section's lease runs out this long after its holder last renewed it (30 s). */
  exclusiveLockMs?: number;
}

interface RunRow {
  seq: number;
  id: string;
  key: string;
  delivery_id: string | null;
  state: RunState;
  attempts: number;
  job: string;
  cancel_requested: number;
  rest_calls: number;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  outcome: string | null;
  summary: string | null;
  held: number;
  grp: string;
  turn: number;
}

// The note holding a key's cross-process lock: `<token> <lease end, ms since epoch>`.
const LOCK_NOTE = 'exclusive-lock';

const DAY_MS = 24 * 3600 * 1000;
const DELIVERY_RETENTION_MS = 14 * DAY_MS;
export const DEFAULT_REPLAY_WINDOW_MS = 7 * DAY_MS;

/** The file's schema is not this version's: the message says what to do (one line). */
export class QueueSchemaError extends Error {
  override name = 'QueueSchemaError';
}

export class SqliteStore<J = unknown> {
  readonly path: string;
  readonly concurrency: number;
  readonly maxAttempts: number;
  readonly replayWindowMs: number;
  readonly #db: Database.Database;

  private constructor(options: QueueOptions) {
    this.path = dataPaths.queueFile(options.dataDir);
    this.concurrency = options.concurrency;
    this.maxAttempts = options.maxAttempts ?? 2;
    this.replayWindowMs = options.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS;
    if (options.readOnly) {
      this.#db = new Database(this.path, { readonly: true, fileMustExist: true });
      this.#db.pragma('busy_timeout = 5000');
      this.#checkReadable();
      return;
    }
    mkdirSync(options.dataDir, { recursive: true });
    this.#db = new Database(this.path);
    try {
      this.#db.pragma('journal_mode = WAL');
      this.#db.pragma('busy_timeout = 5000');
      this.#db.pragma('synchronous = NORMAL');
      this.#migrate();
    } catch (error) {
      this.#db.close();
      throw error;
    }
    this.pruneDeliveries(Date.now() - Math.max(DELIVERY_RETENTION_MS, this.replayWindowMs));
  }

  /** Brings any earlier schema (version 0 included) to SCHEMA_VERSION, in one transaction. */
  #migrate(): void {
    const tx = this.#db.transaction(() => {
      const from = this.schemaVersion();
      if (from > SCHEMA_VERSION) {
        throw new QueueSchemaError(
          `${this.path} has schema version ${from}, newer than this frognano-bot understands (${SCHEMA_VERSION}): upgrade frognano-bot or point FROGNANO_DATA_DIR elsewhere`,
        );
      }
      if (from === SCHEMA_VERSION) return;
      if (from === 0) this.#db.exec(SCHEMA_V0);
      for (let version = from; version < SCHEMA_VERSION; version++) {
        this.#db.exec(MIGRATIONS[version] as string);
      }
      this.#db.pragma(`user_version = ${SCHEMA_VERSION}`);
    });
    // IMMEDIATE: a serve and a worker process starting together must not both migrate.
    tx.immediate();
  }

  /** A read-only reader cannot migrate: it reads only the schema it knows. */
  #checkReadable(): void {
    const version = this.schemaVersion();
    if (version === SCHEMA_VERSION) return;
    this.#db.close();
    throw new QueueSchemaError(
      version > SCHEMA_VERSION
        ? `${this.path} has schema version ${version}, newer than this frognano-bot understands (${SCHEMA_VERSION}): upgrade frognano-bot or point FROGNANO_DATA_DIR elsewhere`
        : `${this.path} has schema version ${version}, older than this frognano-bot's (${SCHEMA_VERSION}): start the App once to migrate it, then list again`,
    );
  }

  schemaVersion(): number {
    return this.#db.pragma('user_version', { simple: true }) as number;
  }

  static open<J = unknown>(options: QueueOptions): SqliteStore<J> {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1) {
      throw new Error(`queue concurrency must be a positive integer (got ${options.concurrency})`);
    }
    return new SqliteStore<J>(options);
  }

  close(): void {
    if (this.#db.open) this.#db.close();
  }

  /** Records a webhook delivery; false when this delivery id was seen before. */
  recordDelivery(
    deliveryId: string,
    event: string,
    payload: unknown,
    bodySha256?: string,
  ): boolean {
    const info = this.#db
      .prepare(
        `INSERT OR IGNORE INTO deliveries (delivery_id, event, payload, received_at, body_sha256) VALUES (?, ?, ?, ?, ?)`,
      )
      .run(deliveryId, event, JSON.stringify(payload), Date.now(), bodySha256 ?? null);
    return info.changes === 1;
  }

  /**
   * Accepts a delivery in one transaction: refused when its id was seen, or when the same raw
   * body arrived within the replay window under another id (the signature does not cover the
   * delivery id); otherwise recorded as pending and, when `run` is given, its run enqueued
   * (held, when asked, until `release`).
   */
  admit(input: {
    deliveryId: string;
    event: string;
    payload: unknown;
    bodySha256?: string;
    run?: Omit<EnqueueInput<J>, 'deliveryId' | 'id'>;
  }): AdmitResult<J> {
    const tx = this.#db.transaction((): AdmitResult<J> => {
      const now = Date.now();
      if (
        this.#db.prepare(`SELECT 1 FROM deliveries WHERE delivery_id = ?`).get(input.deliveryId)
      ) {
        return { status: 'duplicate' };
      }
      if (input.bodySha256) {
        const first = this.#db
          .prepare(
            `SELECT delivery_id FROM deliveries WHERE body_sha256 = ? AND received_at >= ? ORDER BY received_at LIMIT 1`,
          )
          .get(input.bodySha256, now - this.replayWindowMs) as { delivery_id: string } | undefined;
        if (first) return { status: 'replay', firstDeliveryId: first.delivery_id };
      }
      this.recordDelivery(input.deliveryId, input.event, input.payload, input.bodySha256);
      if (!input.run) return { status: 'recorded' };
      const enqueued = this.enqueue({ ...input.run, deliveryId: input.deliveryId });
      return { status: 'recorded', enqueued };
    });
    return tx.immediate();
  }

  pendingDeliveries(): PendingDelivery[] {
    const rows = this.#db
      .prepare(
        `SELECT delivery_id, event, payload, received_at FROM deliveries WHERE state = 'pending' ORDER BY received_at, rowid`,
      )
      .all() as { delivery_id: string; event: string; payload: string; received_at: number }[];
    return rows.map((r) => ({
      deliveryId: r.delivery_id,
      event: r.event,
      payload: JSON.parse(r.payload) as unknown,
      receivedAt: r.received_at,
    }));
  }

  completeDelivery(deliveryId: string): void {
    // The payload is not needed any more; keep the id for deduplication.
    this.#db
      .prepare(`UPDATE deliveries SET state = 'done', payload = 'null' WHERE delivery_id = ?`)
      .run(deliveryId);
  }

  /**
   * Enqueues unless this key already has an active run, this delivery already made one, or the
   * group is full. A held run counts for positions and blocks its key, but no worker claims it
   * before `release`.
   *
   * Fair share (start-time fair queueing with one unit per run): a run's turn is the current
   * round (the highest turn claimed so far), or one past its group's last turn (its latest run
   * queued or claimed), whichever is later; runs are taken by turn, then arrival. So each group
   * with waiting runs gets one run per round, in the order their oldest runs arrived, a newcomer
   * joins the current round, and a group gains no credit while idle. Turns never change once
   * given, so a position is a plain count of the runs before it.
   */
  enqueue(input: EnqueueInput<J>): EnqueueResult<J> {
    const tx = this.#db.transaction((): EnqueueResult<J> => {
      if (input.deliveryId) {
        const seen = this.#db
          .prepare(`SELECT 1 FROM runs WHERE delivery_id = ?`)
          .get(input.deliveryId);
        if (seen) return { status: 'duplicate' };
      }
      const active = this.activeFor(input.key);
      if (active) return { status: 'active', run: active };
      const group = input.group ?? input.key;
      if (input.maxQueuedInGroup !== undefined) {
        const { n } = this.#db
          .prepare(`SELECT COUNT(*) AS n FROM runs WHERE grp = ? AND state = 'queued'`)
          .get(group) as { n: number };
        if (n >= input.maxQueuedInGroup) return { status: 'full', queued: n };
      }
      const id = input.id ?? randomUUID();
      this.#db
        .prepare(
          `INSERT INTO runs (id, key, delivery_id, state, job, created_at, held, grp, turn) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?)`,
        )
        .run(
          id,
          input.key,
          input.deliveryId ?? null,
          JSON.stringify(input.job),
          Date.now(),
          input.held ? 1 : 0,
          group,
          this.#nextTurn(group),
        );
      const run = this.get(id) as RunRecord<J>;
      return { status: 'queued', run, position: this.position(id) ?? 1 };
    });
    return tx.immediate();
  }

  /** The turn a new run of `group` gets (see `enqueue`). */
  #nextTurn(group: string): number {
    const { round, last } = this.#db
      .prepare(
        `SELECT (SELECT COALESCE(MAX(claimed_turn), 0) FROM fair_groups) AS round,
                MAX(COALESCE((SELECT MAX(turn) FROM runs WHERE grp = @group AND state = 'queued'), -1),
                    COALESCE((SELECT claimed_turn FROM fair_groups WHERE grp = @group), -1)) AS last`,
      )
      .get({ group }) as { round: number; last: number };
    return Math.max(round, last + 1);
  }

  /**
   * Makes a held run claimable, with `job` replacing its job in the same write when given (a job
   * finished only after the permission check); false when it is not a held queued run.
   */
  release(id: string, job?: J): boolean {
    const info =
      job === undefined
        ? this.#db
            .prepare(`UPDATE runs SET held = 0 WHERE id = ? AND state = 'queued' AND held = 1`)
            .run(id)
        : this.#db
            .prepare(
              `UPDATE runs SET held = 0, job = ? WHERE id = ? AND state = 'queued' AND held = 1`,
            )
            .run(JSON.stringify(job), id);
    return info.changes === 1;
  }

  /** Removes a held run that must never run (its trigger was refused); false when not held. */
  discard(id: string): boolean {
    const info = this.#db
      .prepare(`DELETE FROM runs WHERE id = ? AND state = 'queued' AND held = 1`)
      .run(id);
    return info.changes === 1;
  }

  /** The run a delivery made, if any. */
  runForDelivery(deliveryId: string): RunRecord<J> | undefined {
    const row = this.#db.prepare(`SELECT * FROM runs WHERE delivery_id = ?`).get(deliveryId) as
      RunRow | undefined;
    return row ? toRecord<J>(row) : undefined;
  }

  /** Moves the next queued run (fair order) to `running` when the global limit allows. */
  claim(): RunRecord<J> | undefined {
    const tx = this.#db.transaction((): RunRecord<J> | undefined => {
      const running = this.#db
        .prepare(`SELECT COUNT(*) AS n FROM runs WHERE state = 'running'`)
        .get() as { n: number };
      if (running.n >= this.concurrency) return undefined;
      const next = this.#db
        .prepare(
          `SELECT id, grp, turn FROM runs WHERE state = 'queued' AND held = 0 ORDER BY turn, seq LIMIT 1`,
        )
        .get() as { id: string; grp: string; turn: number } | undefined;
      if (!next) return undefined;
      this.#db
        .prepare(
          `UPDATE runs SET state = 'running', attempts = attempts + 1, started_at = ? WHERE id = ?`,
        )
        .run(Date.now(), next.id);
      this.#db
        .prepare(
          `INSERT INTO fair_groups (grp, claimed_turn) VALUES (?, ?) ON CONFLICT (grp) DO UPDATE SET claimed_turn = MAX(claimed_turn, excluded.claimed_turn)`,
        )
        .run(next.grp, next.turn);
      return this.get(next.id);
    });
    return tx.immediate();
  }

  finish(
    id: string,
    state: Extract<RunState, 'done' | 'failed' | 'cancelled'>,
    details: { outcome?: string; summary?: string } = {},
  ): void {
    this.#db
      .prepare(
        `UPDATE runs SET state = ?, finished_at = ?, outcome = ?, summary = ? WHERE id = ? AND state IN ('queued', 'running')`,
      )
      .run(state, Date.now(), details.outcome ?? null, details.summary ?? null, id);
  }

  /**
   * Cancels the active run of a key: a queued run is cancelled at once; a running run is flagged
   * so its worker aborts it. Undefined when nothing is active.
   */
  requestCancel(key: string): { run: RunRecord<J>; wasRunning: boolean } | undefined {
    const tx = this.#db.transaction(() => {
      const active = this.activeFor(key);
      if (!active) return undefined;
      if (active.state === 'queued') {
        this.finish(active.id, 'cancelled', { outcome: 'cancelled' });
        return { run: this.get(active.id) as RunRecord<J>, wasRunning: false };
      }
      this.#db.prepare(`UPDATE runs SET cancel_requested = 1 WHERE id = ?`).run(active.id);
      return { run: this.get(active.id) as RunRecord<J>, wasRunning: true };
    });
    return tx.immediate();
  }

  isCancelRequested(id: string): boolean {
    const row = this.#db.prepare(`SELECT cancel_requested FROM runs WHERE id = ?`).get(id) as
      { cancel_requested: number } | undefined;
    return row?.cancel_requested === 1;
  }

  /**
   * 1-based place among queued runs (held ones included) in the order they are taken (turn,
   * then arrival); undefined when the run is not queued.
   */
  position(id: string): number | undefined {
    const row = this.#db
      .prepare(
        `SELECT (SELECT COUNT(*) FROM runs q WHERE q.state = 'queued' AND (q.turn < r.turn OR (q.turn = r.turn AND q.seq <= r.seq))) AS pos FROM runs r WHERE r.id = ? AND r.state = 'queued'`,
      )
      .get(id) as { pos: number } | undefined;
    return row?.pos;
  }

  get(id: string): RunRecord<J> | undefined {
    const row = this.#db.prepare(`SELECT * FROM runs WHERE id = ?`).get(id) as RunRow | undefined;
    return row ? toRecord<J>(row) : undefined;
  }

  activeFor(key: string): RunRecord<J> | undefined {
    const row = this.#db
      .prepare(`SELECT * FROM runs WHERE key = ? AND state IN ('queued', 'running')`)
      .get(key) as RunRow | undefined;
    return row ? toRecord<J>(row) : undefined;
  }

  list(state?: RunState): RunRecord<J>[] {
    const rows = (
      state
        ? this.#db.prepare(`SELECT * FROM runs WHERE state = ? ORDER BY seq`).all(state)
        : this.#db.prepare(`SELECT * FROM runs ORDER BY seq`).all()
    ) as RunRow[];
    return rows.map((row) => toRecord<J>(row));
  }

  runningIds(): string[] {
    return this.list('running').map((r) => r.id);
  }

  addRestCalls(id: string, calls: number): void {
    this.#db.prepare(`UPDATE runs SET rest_calls = rest_calls + ? WHERE id = ?`).run(calls, id);
  }

  /**
   * After a crash or restart: runs left `running` belong to no process any more. Each goes back
   * to the queue if it has attempts left, else it is failed. Returns both lists so the caller
   * can reap containers and tell the issue truthfully.
   */
  recoverInterrupted(): { requeued: RunRecord<J>[]; failed: RunRecord<J>[] } {
    const tx = this.#db.transaction(() => {
      const requeued: RunRecord<J>[] = [];
      const failed: RunRecord<J>[] = [];
      for (const run of this.list('running')) {
        if (run.cancelRequested) {
          this.finish(run.id, 'cancelled', { outcome: 'cancelled', summary: 'interrupted' });
          failed.push(this.get(run.id) as RunRecord<J>);
        } else if (run.attempts < this.maxAttempts) {
          this.#db
            .prepare(`UPDATE runs SET state = 'queued', started_at = NULL WHERE id = ?`)
            .run(run.id);
          requeued.push(this.get(run.id) as RunRecord<J>);
        } else {
          this.finish(run.id, 'failed', {
            outcome: 'interrupted',
            summary: `interrupted ${run.attempts} times by a restart`,
          });
          failed.push(this.get(run.id) as RunRecord<J>);
        }
      }
      return { requeued, failed };
    });
    return tx.immediate();
  }

  /** Deletes finished runs (done, failed, cancelled) that finished before `before`; their ids. */
  pruneFinished(before: number): string[] {
    const tx = this.#db.transaction(() => {
      const rows = this.#db
        .prepare(
          `SELECT id FROM runs WHERE state IN ('done', 'failed', 'cancelled') AND finished_at < ?`,
        )
        .all(before) as { id: string }[];
      this.#db
        .prepare(
          `DELETE FROM runs WHERE state IN ('done', 'failed', 'cancelled') AND finished_at < ?`,
        )
        .run(before);
      return rows.map((r) => r.id);
    });
    return tx.immediate();
  }

  /** Forgets handled deliveries received before `before` (their ids and body hashes). */
  pruneDeliveries(before: number): number {
    return this.#db
      .prepare(`DELETE FROM deliveries WHERE state = 'done' AND received_at < ?`)
      .run(before).changes;
  }

  getNote(key: string, name: string): string | undefined {
    const row = this.#db
      .prepare(`SELECT value FROM notes WHERE key = ? AND name = ?`)
      .get(key, name) as { value: string } | undefined;
    return row?.value;
  }

  /**
   * Takes the lock `key` for `token` when it is free or its holder's lease has run out (a
   * process that died holding it); true when taken. One IMMEDIATE transaction: every process on
   * this file agrees on who holds it.
   */
  tryLock(key: string, token: string, leaseMs: number): boolean {
    return this.#db
      .transaction(() => {
        const now = Date.now();
        const [holder, until] = (this.getNote(key, LOCK_NOTE) ?? '').split(' ');
        if (holder && holder !== token && Number(until) > now) return false;
        this.setNote(key, LOCK_NOTE, `${token} ${now + leaseMs}`);
        return true;
      })
      .immediate();
  }

  /** Extends the lease of `token`'s lock; false (and left as it is) when it is no longer ours. */
  renewLock(key: string, token: string, leaseMs: number): boolean {
    return this.#db
      .transaction(() => {
        const [holder] = (this.getNote(key, LOCK_NOTE) ?? '').split(' ');
        if (holder !== token) return false;
        this.setNote(key, LOCK_NOTE, `${token} ${Date.now() + leaseMs}`);
        return true;
      })
      .immediate();
  }

  /** Gives the lock back, when `token` still holds it. */
  unlock(key: string, token: string): void {
    this.#db
      .transaction(() => {
        const [holder] = (this.getNote(key, LOCK_NOTE) ?? '').split(' ');
        if (holder === token) this.setNote(key, LOCK_NOTE, undefined);
      })
      .immediate();
  }

  setNote(key: string, name: string, value: string | undefined): void {
    if (value === undefined) {
      this.#db.prepare(`DELETE FROM notes WHERE key = ? AND name = ?`).run(key, name);
    } else {
      this.#db
        .prepare(
          `INSERT INTO notes (key, name, value) VALUES (?, ?, ?) ON CONFLICT (key, name) DO UPDATE SET value = excluded.value`,
        )
        .run(key, name, value);
    }
  }
}

function toRecord<J>(row: RunRow): RunRecord<J> {
  return {
    id: row.id,
    key: row.key,
    group: row.grp,
    deliveryId: row.delivery_id ?? undefined,
    state: row.state,
    attempts: row.attempts,
    job: JSON.parse(row.job) as J,
    cancelRequested: row.cancel_requested === 1,
    restCalls: row.rest_calls,
    createdAt: row.created_at,
    startedAt: row.started_at ?? undefined,
    finishedAt: row.finished_at ?? undefined,
    outcome: row.outcome ?? undefined,
    summary: row.summary ?? undefined,
    held: row.held === 1,
  };
}
