// Cleanup of what dead runs left behind (a killed worker, a power cut): containers
// labelled as ours, attempt-base images of runs with several attempts, setup networks and their
// host firewall rules, surplus snapshot images, and run work directories. `frognano reap` runs it on demand; workers run it at start. Only
// things that are provably ours are touched: containers and attempt bases whose owner label is
// this data directory's instance and whose owning process is provably gone (owner.ts),
// directories by their run marker. Another instance's, a live `frognano solve`'s, and those
// without an owner are left alone.
import { dataPaths } from '../data-dir.js';
import { existingInstanceId } from '../instance-id.js';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { ATTEMPT_IMAGE_REPOSITORY, LABEL_ATTEMPT_BASE } from './attempt-base-image.js';
import { LABEL_RUN } from './docker-sandbox.js';
import { connectDocker } from './docker-engine.js';
import {
  LABEL_OWNER,
  LABEL_OWNER_PROCESS,
  currentProcessId,
  ownerGone,
  sweepOwners,
} from './owner.js';
import { DEFAULT_SNAPSHOT_CAP, evictSnapshots } from './snapshot-cache.js';
import { RUN_MARKER } from './run-marker.js';
import { LABEL_SETUP_NETWORK } from './setup-network.js';
import { reapSetupFirewall } from './reap-setup-firewall.js';
import { reapRuntimeTests } from './sandbox-runtime.js';

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
  /** Snapshot images. */
  images: number;
  /** Attempt bases of dead runs (several attempts). */
  attemptImages: number;
  workDirs: number;
  /** Setup networks of dead runs (set when there were any). */
  networks?: number;
  /** Host firewall rules of setup networks that are gone (set when there were any). */
  firewallRules?: number;
  /** Containers left alone: another instance's, no owner, or an owner still alive. */
  spared?: number;
}

/** `docker` may be undefined (no engine): then only work directories are reaped. */
export async function reap(docker: Docker | undefined, options: ReapOptions): Promise<ReapResult> {
  const live = new Set(options.liveRunIds);
  const result: ReapResult = { containers: 0, images: 0, attemptImages: 0, workDirs: 0 };
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
    // This process's own runs: live unless its queue says they ended (a failed cleanup).
    // Any other process's: only once its lock proves it gone.
    const keep = (labels: Record<string, string> | undefined, runId: string) => {
      const owner = labels?.[LABEL_OWNER_PROCESS] ?? '';
      return owner === currentProcessId() ? live.has(runId) : owner === '' || !isGone(owner);
    };
    let spared = 0;
    for (const info of containers) {
      const runId = info.Labels?.[LABEL_RUN] ?? '';
      const owner = info.Labels?.[LABEL_OWNER_PROCESS] ?? '';
      if (keep(info.Labels, runId)) {
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
    // After the containers: a dead run's setup network has nothing attached any more.
    const networks = await reapSetupNetworks(docker, instance, live, keep, options.log);
    if (networks > 0) result.networks = networks;
    // After the containers: a dead run's containers no longer hold its image.
    result.attemptImages = await reapAttemptImages(docker, instance, live, keep, options.log);
  }
  if (docker) {
    // After the networks: the rules of a network that is gone (any instance's: a rule outlives
    // its network only when its process was killed).
    const rules = await reapSetupFirewall(docker, options.log);
    if (rules > 0) result.firewallRules = rules;
    // Test starts of the runtime check that a killed process left (they have no owner).
    await reapRuntimeTests(docker, { log: options.log });
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

/** Setup networks (setup-network.ts) of this instance whose run is dead by the container rules. */
async function reapSetupNetworks(
  docker: Docker,
  instance: string,
  live: Set<string>,
  keep: (labels: Record<string, string> | undefined, runId: string) => boolean,
  log?: Logger,
): Promise<number> {
  const networks = await docker.listNetworks({
    filters: JSON.stringify({ label: [LABEL_SETUP_NETWORK, `${LABEL_OWNER}=${instance}`] }),
  });
  let count = 0;
  for (const info of networks) {
    const runId = info.Labels?.[LABEL_RUN] ?? '';
    if (runId === '' || live.has(runId) || keep(info.Labels, runId)) continue;
    try {
      await docker.getNetwork(info.Id).remove();
      count++;
      log?.info({ runId, network: info.Name }, 'reaped setup network');
    } catch (error) {
      // Still in use (409: a container of another run?) or already gone (404): left alone.
      const status = (error as { statusCode?: number }).statusCode;
      if (status !== 404 && status !== 409) throw error;
    }
  }
  return count;
}

/**
 * Attempt bases of this instance whose run is dead by the rules for containers; never one of a
 * run still listed as live, nor one a container still uses (Docker refuses: it is left).
 */
async function reapAttemptImages(
  docker: Docker,
  instance: string,
  live: Set<string>,
  keep: (labels: Record<string, string> | undefined, runId: string) => boolean,
  log?: Logger,
): Promise<number> {
  const images = await docker.listImages({
    filters: JSON.stringify({ label: [LABEL_ATTEMPT_BASE, `${LABEL_OWNER}=${instance}`] }),
  });
  let count = 0;
  for (const info of images) {
    const runId = info.Labels?.[LABEL_ATTEMPT_BASE] ?? '';
    if (runId === '' || live.has(runId) || keep(info.Labels, runId)) continue;
    // By our tag: a name someone else gave it stays, and with it the image.
    const tags = (info.RepoTags ?? []).filter((t) => t !== '<none>:<none>');
    const targets =
      tags.length === 0
        ? [info.Id]
        : tags.filter((t) => t.startsWith(`${ATTEMPT_IMAGE_REPOSITORY}:`));
    if (targets.length === 0) continue;
    try {
      for (const target of targets) await docker.getImage(target).remove();
      count++;
      log?.info({ runId, image: info.Id.slice(7, 19) }, 'reaped attempt-base image');
    } catch (error) {
      // In use by a container (409), or already gone (404): left, or nothing to do.
      const status = (error as { statusCode?: number }).statusCode;
      if (status !== 404 && status !== 409) throw error;
    }
  }
  return count;
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

/**
 * The reaper a starting worker runs on what dead runs of its data directory left: their
 * containers (with the Docker sandbox) and their work directories.
 */
export function reapDeadRuns(
  config: { sandbox: 'docker' | 'local'; dataDir: string },
  env: NodeJS.ProcessEnv,
  log: Logger,
): (liveRunIds: string[]) => Promise<void> {
  return async (liveRunIds) => {
    const docker = config.sandbox === 'docker' ? connectDocker(env) : undefined;
    await reap(docker, { liveRunIds, workRoot: dataPaths.runsDir(config.dataDir), log });
  };
}
