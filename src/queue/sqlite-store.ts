// The durable embedded queue's store: one SQLite file (better-sqlite3) in the data directory,
// synchronous, with a table per role: deliveries (sqlite-deliveries.ts), runs (sqlite-runs.ts)
// and notes with their locks (sqlite-notes.ts). SqliteQueue puts the async `Queue` door on it.
// It knows nothing of GitHub: jobs are opaque JSON, keys are strings.
// The schema carries its version in PRAGMA user_version and migrates forward on open.
// One intake and one worker process own a data directory at a time (see data-dir-lock.ts);
// several machines use a shared queue instead.
import { mkdirSync } from 'node:fs';
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
import { SqliteDeliveries } from './sqlite-deliveries.js';
import { SqliteNotes } from './sqlite-notes.js';
import { SqliteRuns } from './sqlite-runs.js';
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

const DAY_MS = 24 * 3600 * 1000;
const DELIVERY_RETENTION_MS = 14 * DAY_MS;
export const DEFAULT_REPLAY_WINDOW_MS = 7 * DAY_MS;

/** The file's schema is not this version's: the message says what to do (one line). */
export class QueueSchemaError extends Error {
  override name = 'QueueSchemaError';
}

export class SqliteStore<J = unknown> {
  readonly path: string;
  readonly runs: SqliteRuns<J>;
  readonly deliveries: SqliteDeliveries<J>;
  readonly notes: SqliteNotes;
  readonly #db: Database.Database;

  private constructor(options: QueueOptions) {
    this.path = dataPaths.queueFile(options.dataDir);
    this.#db = SqliteStore.#openFile(this.path, options);
    this.runs = new SqliteRuns<J>(this.#db, options.concurrency, options.maxAttempts ?? 2);
    const replayWindowMs = options.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS;
    this.deliveries = new SqliteDeliveries<J>(this.#db, replayWindowMs, this.runs);
    this.notes = new SqliteNotes(this.#db);
    if (options.readOnly) return;
    this.pruneDeliveries(Date.now() - Math.max(DELIVERY_RETENTION_MS, replayWindowMs));
  }

  static #openFile(path: string, options: QueueOptions): Database.Database {
    if (options.readOnly) {
      const db = new Database(path, { readonly: true, fileMustExist: true });
      db.pragma('busy_timeout = 5000');
      checkReadable(db, path);
      return db;
    }
    mkdirSync(options.dataDir, { recursive: true });
    const db = new Database(path);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('busy_timeout = 5000');
      db.pragma('synchronous = NORMAL');
      migrate(db, path);
    } catch (error) {
      db.close();
      throw error;
    }
    return db;
  }

  static open<J = unknown>(options: QueueOptions): SqliteStore<J> {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1) {
      throw new Error(`queue concurrency must be a positive integer (got ${options.concurrency})`);
    }
    return new SqliteStore<J>(options);
  }

  get concurrency(): number {
    return this.runs.concurrency;
  }

  get maxAttempts(): number {
    return this.runs.maxAttempts;
  }

  get replayWindowMs(): number {
    return this.deliveries.replayWindowMs;
  }

  schemaVersion(): number {
    return schemaVersion(this.#db);
  }

  close(): void {
    if (this.#db.open) this.#db.close();
  }

  // The deliveries (sqlite-deliveries.ts).
  recordDelivery(deliveryId: string, event: string, payload: unknown, bodySha256?: string) {
    return this.deliveries.recordDelivery(deliveryId, event, payload, bodySha256);
  }
  admit(input: Parameters<SqliteDeliveries<J>['admit']>[0]): AdmitResult<J> {
    return this.deliveries.admit(input);
  }
  pendingDeliveries(): PendingDelivery[] {
    return this.deliveries.pendingDeliveries();
  }
  completeDelivery(deliveryId: string): void {
    this.deliveries.completeDelivery(deliveryId);
  }
  pruneDeliveries(before: number): number {
    return this.deliveries.pruneDeliveries(before);
  }

  // The runs (sqlite-runs.ts).
  enqueue(input: EnqueueInput<J>): EnqueueResult<J> {
    return this.runs.enqueue(input);
  }
  release(id: string, job?: J): boolean {
    return this.runs.release(id, job);
  }
  discard(id: string): boolean {
    return this.runs.discard(id);
  }
  runForDelivery(deliveryId: string): RunRecord<J> | undefined {
    return this.runs.runForDelivery(deliveryId);
  }
  claim(): RunRecord<J> | undefined {
    return this.runs.claim();
  }
  finish(
    id: string,
    state: Extract<RunState, 'done' | 'failed' | 'cancelled'>,
    details?: { outcome?: string; summary?: string },
  ): void {
    this.runs.finish(id, state, details);
  }
  requestCancel(key: string): { run: RunRecord<J>; wasRunning: boolean } | undefined {
    return this.runs.requestCancel(key);
  }
  isCancelRequested(id: string): boolean {
    return this.runs.isCancelRequested(id);
  }
  position(id: string): number | undefined {
    return this.runs.position(id);
  }
  get(id: string): RunRecord<J> | undefined {
    return this.runs.get(id);
  }
  activeFor(key: string): RunRecord<J> | undefined {
    return this.runs.activeFor(key);
  }
  list(state?: RunState): RunRecord<J>[] {
    return this.runs.list(state);
  }
  addRestCalls(id: string, calls: number): void {
    this.runs.addRestCalls(id, calls);
  }
  recoverInterrupted(): { requeued: RunRecord<J>[]; failed: RunRecord<J>[] } {
    return this.runs.recoverInterrupted();
  }
  pruneFinished(before: number): string[] {
    return this.runs.pruneFinished(before);
  }

  // The notes and their locks (sqlite-notes.ts).
  getNote(key: string, name: string): string | undefined {
    return this.notes.getNote(key, name);
  }
  setNote(key: string, name: string, value: string | undefined): void {
    this.notes.setNote(key, name, value);
  }
}

function schemaVersion(db: Database.Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/** Brings any earlier schema (version 0 included) to SCHEMA_VERSION, in one transaction. */
function migrate(db: Database.Database, path: string): void {
  const tx = db.transaction(() => {
    const from = schemaVersion(db);
    if (from > SCHEMA_VERSION) {
      throw new QueueSchemaError(
        `${path} has schema version ${from}, newer than this frognano-bot understands (${SCHEMA_VERSION}): upgrade frognano-bot or point FROGNANO_DATA_DIR elsewhere`,
      );
    }
    if (from === SCHEMA_VERSION) return;
    if (from === 0) db.exec(SCHEMA_V0);
    for (let version = from; version < SCHEMA_VERSION; version++) {
      db.exec(MIGRATIONS[version] as string);
    }
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  });
  // IMMEDIATE: a serve and a worker process starting together must not both migrate.
  tx.immediate();
}

/** A read-only reader cannot migrate: it reads only the schema it knows. */
function checkReadable(db: Database.Database, path: string): void {
  const version = schemaVersion(db);
  if (version === SCHEMA_VERSION) return;
  db.close();
  throw new QueueSchemaError(
    version > SCHEMA_VERSION
      ? `${path} has schema version ${version}, newer than this frognano-bot understands (${SCHEMA_VERSION}): upgrade frognano-bot or point FROGNANO_DATA_DIR elsewhere`
      : `${path} has schema version ${version}, older than this frognano-bot's (${SCHEMA_VERSION}): start the App once to migrate it, then list again`,
  );
}
