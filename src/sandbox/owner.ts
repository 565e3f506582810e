// Who owns a sandbox container, and whether that owner is still alive. Every container is
// labelled with the instance id of its data directory (one App installation, or the data
// directory `frognano solve` uses) and with the id of the process that made it. That process
// holds an exclusive lock on `<dataDir>/owners/<process>.lock` for as long as it lives (an
// exclusive SQLite transaction: the kernel drops it when the process dies, kill -9 included),
// so a reaper can prove an owner gone by taking the lock, without guessing from pids.
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { instanceId } from '../instance-id.js';
import { dataPaths } from '../data-dir.js';

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const LABEL_OWNER = 'frognano.owner';
export const LABEL_OWNER_PROCESS = 'frognano.owner.process';
/** For people reading `docker ps`: where the owning process ran. Not used to decide. */
export const LABEL_OWNER_PID = 'frognano.owner.pid';
export const LABEL_OWNER_HOST = 'frognano.owner.host';

export interface SandboxOwner {
  /** The data directory's instance id. */
  instance: string;
  /** This process's id (random per process). */
  process: string;
}

/** This process: one id for its whole life. */
const PROCESS_ID = randomUUID();
/** Lock connections held for the life of the process, per owners directory. */
const held = new Map<string, Database.Database>();

/**
 * The owner labels for sandboxes this process makes on behalf of `dataDir`, taking this
 * process's liveness lock there first (once; it is held until the process ends).
 */
export function sandboxOwner(dataDir: string): SandboxOwner {
  const instance = instanceId(path.resolve(dataDir));
  // One lock per directory however it is named (a second connection would find it busy).
  const lockFile = ownerLockPath(realpathSync(dataDir), PROCESS_ID);
  if (!held.has(lockFile)) {
    mkdirSync(path.dirname(lockFile), { recursive: true });
    // Locked under a temporary name, then moved into place: a sweeping reaper never sees the
    // lock file unlocked, so it cannot take a live owner for a dead one.
    const temp = `${lockFile}.${randomUUID()}.tmp`;
    const db = new Database(temp, { timeout: 0 });
    db.exec('BEGIN EXCLUSIVE');
    renameSync(temp, lockFile);
    held.set(lockFile, db);
    if (held.size === 1) process.once('exit', releaseAll);
  }
  return { instance, process: PROCESS_ID };
}

export function ownerLabels(owner: SandboxOwner): Record<string, string> {
  return {
    [LABEL_OWNER]: owner.instance,
    [LABEL_OWNER_PROCESS]: owner.process,
    [LABEL_OWNER_PID]: String(process.pid),
    [LABEL_OWNER_HOST]: hostname(),
  };
}

/** This process's owner id (it owns nothing until `sandboxOwner` is called). */
export function currentProcessId(): string {
  return PROCESS_ID;
}

/**
 * Whether the owning process of `dataDir`'s instance is gone: its lock can be taken, or its
 * lock file is missing (it ended cleanly, or never got far). A gone owner's lock file is
 * removed by `forgetOwner` once its leftovers are reaped.
 */
export function ownerGone(dataDir: string, processId: string): boolean {
  if (!ID.test(processId)) return false;
  const lockFile = ownerLockPath(path.resolve(dataDir), processId);
  let db: Database.Database;
  try {
    db = new Database(lockFile, { timeout: 0, fileMustExist: true });
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_CANTOPEN') return true;
    throw error;
  }
  try {
    db.exec('BEGIN EXCLUSIVE');
    db.exec('ROLLBACK');
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return false;
    throw error;
  } finally {
    db.close();
  }
}

/** Lock files of owners that are gone, removed; returns how many. */
export function sweepOwners(dataDir: string): number {
  const dir = dataPaths.ownersDir(path.resolve(dataDir));
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  let count = 0;
  for (const name of names) {
    const processId = /^(.+)\.lock$/.exec(name)?.[1];
    if (!processId || processId === PROCESS_ID || !ID.test(processId)) continue;
    if (ownerGone(dataDir, processId)) {
      forgetOwner(dataDir, processId);
      count++;
    }
  }
  return count;
}

/** Removes a gone owner's lock file (only call after `ownerGone` said so). */
export function forgetOwner(dataDir: string, processId: string): void {
  if (!ID.test(processId)) return;
  const lockFile = ownerLockPath(path.resolve(dataDir), processId);
  for (const file of [lockFile, `${lockFile}-journal`]) rmSync(file, { force: true });
}

function ownerLockPath(dataDir: string, processId: string): string {
  return path.join(dataPaths.ownersDir(dataDir), `${processId}.lock`);
}

function releaseAll(): void {
  for (const [lockFile, db] of held) {
    try {
      db.close();
    } catch {
      // Exiting anyway.
    }
    rmSync(lockFile, { force: true });
    rmSync(`${lockFile}-journal`, { force: true });
  }
  held.clear();
}
