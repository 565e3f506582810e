// Cleanup of what dead runs left behind (a killed worker, a power cut): containers
// labelled as ours, surplus snapshot images, and run work directories. `frognano reap`
// runs it on demand; workers run it at start. Only things that are provably ours are
// touched: containers whose owner label is this data directory's instance and whose owning
// process is provably gone (owner.ts), directories by their run marker. Another instance's
// containers, a live `frognano solve`'s, and containers without an owner are left alone.
import { existingInstanceId } from '../instance-id.js';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { LABEL_RUN } from './docker-sandbox.js';
import {
  LABEL_OWNER,
  LABEL_OWNER_PROCESS,
  currentProcessId,
  ownerGone,
  sweepOwners,
} from './owner.js';
import { DEFAULT_SNAPSHOT_CAP, evictSnapshots } from './snapshot-cache.js';
import { RUN_MARKER } from '../runner/workspace.js';

export interface ReapOptions {
  /**
   * Runs that are still going anywhere that shares this engine or work root (all workers,
   * not only this process): their containers and directories are left alone.
   */
  liveRunIds: Iterable<string>;
  /** The directory holding `<runId>/` work directories. */
  workRoot: string;
  /** The data directory whose instance's containers are reaped (default: workRoot's parent). */
  dataDir?: string;
  /** Snapshot images kept (least recently used beyond this are removed). */
  snapshotCap?: number;
  log?: Logger;
}

export interface ReapResult {
  containers: number;
  images: number;
  workDirs: number;
  /** Containers left alone: another instance's, no owner, or an owner still alive. */
  spared?: number;
}

/** `docker` may be undefined (no engine): then only work directories are reaped. */
export async function reap(docker: Docker | undefined, options: ReapOptions): Promise<ReapResult> {
  const live = new Set(options.liveRunIds);
  const result: ReapResult = { containers: 0, images: 0, workDirs: 0 };
  const dataDir = path.resolve(options.dataDir ?? path.dirname(options.workRoot));
  // No instance id yet: no sandbox was ever labelled as this data directory's.
  const instance = existingInstanceId(dataDir);
  if (docker && instance) {
    const containers = await docker.listContainers({
      all: true,
      filters: JSON.stringify({ label: [LABEL_RUN, `${LABEL_OWNER}=${instance}`] }),
    });
    const gone = new Map<string, boolean>();
    const isGone = (processId: string) => {
      if (!gone.has(processId)) gone.set(processId, ownerGone(dataDir, processId));
      return gone.get(processId)!;
    };
    let spared = 0;
    for (const info of containers) {
      const runId = info.Labels?.[LABEL_RUN] ?? '';
      const owner = info.Labels?.[LABEL_OWNER_PROCESS] ?? '';
      // This process's own runs: live unless its queue says they ended (a failed cleanup).
      // Any other process's: only once its lock proves it gone.
      const keep = owner === currentProcessId() ? live.has(runId) : owner === '' || !isGone(owner);
      if (keep) {
        spared++;
        continue;
      }
      try {
        await docker.getContainer(info.Id).remove({ force: true, v: true });
        result.containers++;
        options.log?.info({ runId, container: info.Id.slice(0, 12), owner }, 'reaped container');
      } catch (error) {
        // Already gone, or being removed (another reaper, or its own run's cleanup): fine.
        const status = (error as { statusCode?: number }).statusCode;
        if (status !== 404 && status !== 409) throw error;
      }
    }
    result.spared = spared;
  }
  if (docker) {
    const removed = await evictSnapshots(docker, {
      keep: options.snapshotCap ?? DEFAULT_SNAPSHOT_CAP,
    });
    result.images = removed.length;
    if (removed.length > 0) options.log?.info({ images: removed.length }, 'reaped snapshot images');
  }
  result.workDirs = await reapWorkDirs(path.resolve(options.workRoot), dataDir, live, options.log);
  // Last: the locks of owners whose leftovers are now gone.
  sweepOwners(dataDir);
  return result;
}

async function reapWorkDirs(
  workRoot: string,
  dataDir: string,
  live: Set<string>,
  log?: Logger,
): Promise<number> {
  const entries = await readdir(workRoot, { withFileTypes: true }).catch(
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw error;
    },
  );
  let count = 0;
  for (const entry of entries) {
    if (!entry.isDirectory() || live.has(entry.name)) continue;
    const dir = path.join(workRoot, entry.name);
    const marker = await readFile(path.join(dir, RUN_MARKER), 'utf8').catch(() => undefined);
    if (marker === undefined) continue;
    let parsed: { runId?: unknown; owner?: unknown } = {};
    try {
      parsed = JSON.parse(marker) as typeof parsed;
    } catch {
      parsed = {};
    }
    const { runId, owner } = parsed;
    // The marker must agree with the directory name: a marker copied elsewhere is not ours.
    if (runId !== entry.name) continue;
    // A live process's run (a `frognano solve` on this data directory) is not a dead run.
    if (typeof owner === 'string' && owner !== currentProcessId() && !ownerGone(dataDir, owner)) {
      continue;
    }
    await rm(dir, { recursive: true, force: true });
    count++;
    log?.info({ runId }, 'reaped work directory');
  }
  return count;
}
