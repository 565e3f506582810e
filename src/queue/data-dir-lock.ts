// One owner per half of a data directory. The intake half (webhooks; `frognano start` and
// `frognano serve`) and the worker half (runs; `frognano start` and `frognano worker`) are each
// held by at most one process, so `serve` + `worker` may share a directory (the documented
// split) while a second `start`, `serve` or `worker` on it refuses instead of requeueing the
// first one's runs or answering its deliveries twice.
// The lock is an exclusive SQLite transaction on a lock file: the kernel drops it when the
// owner dies (kill -9, OOM, a container stopped), so a dead owner's lock is taken over by
// the next start with no PID guessing; a living owner's is refused. A JSON file beside it says
// who holds it, for the refusal message.
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { instanceId } from '../instance-id.js';
import { dataPaths } from '../data-dir.js';

export type DataDirHalf = 'intake' | 'worker';

export interface DataDirOwner {
  /** `start`, `serve` or `worker`. */
  mode: string;
  pid: number;
  host: string;
  /** The data directory's instance id (see instance-id.ts). */
  instanceId: string;
  /** Random per process: tells two owners of one instance apart. */
  processId: string;
  since: string;
}

export interface DataDirLock {
  readonly owner: DataDirOwner;
  release(): void;
}

export class DataDirBusyError extends Error {
  constructor(
    readonly dataDir: string,
    readonly half: DataDirHalf,
    readonly holder: DataDirOwner | undefined,
  ) {
    const who = holder
      ? `frognano ${holder.mode} (pid ${holder.pid} on ${holder.host}, since ${holder.since})`
      : 'another frognano process';
    super(
      `the data directory ${dataDir} is in use by ${who} for its ${half === 'intake' ? 'webhooks' : 'runs'}: stop that process first, or give this one its own FROGNANO_DATA_DIR`,
    );
    this.name = 'DataDirBusyError';
  }
}

const lockPath = (dataDir: string, half: DataDirHalf) =>
  join(dataPaths.locksDir(dataDir), `${half}.lock`);
const infoPath = (dataDir: string, half: DataDirHalf) =>
  join(dataPaths.locksDir(dataDir), `${half}.json`);

/** Takes the given halves of a data directory, all or none; throws DataDirBusyError if held. */
export function lockDataDir(dataDir: string, halves: DataDirHalf[], mode: string): DataDirLock {
  mkdirSync(dataPaths.locksDir(dataDir), { recursive: true });
  const owner: DataDirOwner = {
    mode,
    pid: process.pid,
    host: hostname(),
    instanceId: instanceId(dataDir),
    processId: randomUUID(),
    since: new Date().toISOString(),
  };
  const held: { half: DataDirHalf; db: Database.Database }[] = [];
  const releaseAll = () => {
    for (const { half, db } of held.splice(0)) {
      // Our info file only: a new owner may already have written its own.
      if (readOwner(dataDir, half)?.processId === owner.processId) {
        rmSync(infoPath(dataDir, half), { force: true });
      }
      if (db.open) db.close();
    }
  };
  for (const half of halves) {
    const db = tryExclusive(lockPath(dataDir, half));
    if (!db) {
      releaseAll();
      throw new DataDirBusyError(dataDir, half, readOwner(dataDir, half));
    }
    held.push({ half, db });
    writeFileSync(infoPath(dataDir, half), `${JSON.stringify(owner)}\n`);
  }
  return { owner, release: releaseAll };
}

/** Who holds a half of a data directory right now; undefined when nobody (alive) does. */
export function dataDirOwner(dataDir: string, half: DataDirHalf): DataDirOwner | undefined {
  if (!existsSync(lockPath(dataDir, half))) return undefined;
  const db = tryExclusive(lockPath(dataDir, half));
  if (db) {
    db.close();
    return undefined;
  }
  return (
    readOwner(dataDir, half) ?? {
      mode: 'unknown',
      pid: 0,
      host: 'unknown',
      instanceId: instanceId(dataDir),
      processId: 'unknown',
      since: 'unknown',
    }
  );
}

function tryExclusive(path: string): Database.Database | undefined {
  const db = new Database(path, { timeout: 0 });
  try {
    // Held until the connection closes (release, or the process's death).
    db.exec('BEGIN EXCLUSIVE');
    return db;
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return undefined;
    throw error;
  }
}

function readOwner(dataDir: string, half: DataDirHalf): DataDirOwner | undefined {
  try {
    return JSON.parse(readFileSync(infoPath(dataDir, half), 'utf8')) as DataDirOwner;
  } catch {
    return undefined;
  }
}
