// The mirror's lock: one process at a time fetches or clones a repository's cached mirror.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CloneError } from './clone-error.js';

export const DEFAULT_LOCK_TIMEOUT_MS = 10 * 60_000;

/** A directory lock shared by every process on this host; a dead holder's lock is taken over. */
export async function withLock<T>(
  lockDir: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const owner = `${process.pid} ${Math.random().toString(36).slice(2)}`;
  for (;;) {
    signal?.throwIfAborted();
    try {
      await mkdir(lockDir);
      await writeFile(path.join(lockDir, 'owner'), owner);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = await readFile(path.join(lockDir, 'owner'), 'utf8').catch(() => '');
    const pid = Number(holder.split(' ')[0]);
    if (holder && !isAlive(pid)) {
      await rm(lockDir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline)
      throw new CloneError(`timed out waiting for the mirror lock ${lockDir}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  try {
    return await fn();
  } finally {
    const holder = await readFile(path.join(lockDir, 'owner'), 'utf8').catch(() => '');
    if (holder === owner) await rm(lockDir, { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
