// Data retention: finished runs and their trajectories are kept for FROGNANO_RETENTION_DAYS,
// then deleted, so a long-lived data directory does not grow without bound. Queued and running
// runs are never touched.
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { RunStore } from './types.js';

export const DEFAULT_RETENTION_DAYS = 30;
const DAY_MS = 24 * 3600 * 1000;

export interface RetentionOptions {
  queue: Pick<RunStore<unknown>, 'pruneFinished' | 'get'>;
  /** Holds one directory per run id (`<dir>/<runId>/trajectory.json`). */
  trajectoriesDir: string;
  retentionDays: number;
  log?: Logger;
  now?: number;
}

/**
 * Deletes finished runs older than the retention period, their trajectory directories, and
 * trajectory directories of runs the queue no longer knows that are as old (left by a crash or
 * an earlier prune that was interrupted).
 */
export async function pruneRetention(
  options: RetentionOptions,
): Promise<{ runs: number; trajectories: number }> {
  const cutoff = (options.now ?? Date.now()) - options.retentionDays * DAY_MS;
  const pruned = await options.queue.pruneFinished(cutoff);
  const doomed = new Set(pruned);
  let names: string[] = [];
  try {
    names = await readdir(options.trajectoriesDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  let trajectories = 0;
  for (const name of names) {
    const dir = join(options.trajectoriesDir, name);
    if (!doomed.has(name)) {
      // A run the queue still has is kept whatever its age (it may still be queued or running).
      if (await options.queue.get(name)) continue;
      const info = await stat(dir).catch(() => undefined);
      if (!info || info.mtimeMs >= cutoff) continue;
    }
    await rm(dir, { recursive: true, force: true });
    trajectories++;
  }
  if (pruned.length + trajectories > 0) {
    options.log?.info(
      { runs: pruned.length, trajectories, retentionDays: options.retentionDays },
      'pruned old runs',
    );
  }
  return { runs: pruned.length, trajectories };
}

/** Prunes now and then every `everyMs` (default hourly) until stopped. */
export function startRetention(options: RetentionOptions & { everyMs?: number }): {
  stop(): Promise<void>;
} {
  let running: Promise<unknown> = Promise.resolve();
  const prune = () => {
    running = running
      .then(() => pruneRetention({ ...options, now: undefined }))
      .catch((error: unknown) => options.log?.warn({ err: error }, 'pruning old runs failed'));
  };
  prune();
  const timer = setInterval(prune, options.everyMs ?? 3600_000);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
