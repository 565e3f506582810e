// The disk watchdog of a sandbox. On overlay2 over ext4 (the common case) the engine has no
// quota for a container's writable layer: one `dd` from /dev/zero fills the host disk in
// minutes. Every few seconds this measures what the sandbox wrote (the writable layer, its
// volumes and the /tmp tmpfs) and the free space left on the engine's disk, and trips when
// the sandbox passed its limit or the disk fell under the floor. Where this process shares
// the engine's filesystem (root on the engine's host) it reads the layer directly, which is
// fast; otherwise it asks the engine (`inspect?size=1`, `df` inside the container), slower.
import { execFile } from 'node:child_process';
import type { Stats } from 'node:fs';
import { lstat, opendir, readdir, readFile, statfs } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { SandboxFailure } from '../leaf/sandbox.js';

export type DiskLimitKind = 'disk' | 'disk_floor';

/** The run stops because of the disk: the message says which limit and is shown as is. */
export class SandboxLimitExceeded extends SandboxFailure {
  constructor(
    readonly limit: DiskLimitKind,
    message: string,
  ) {
    super(message);
    this.name = 'SandboxLimitExceeded';
  }
}

export interface DiskGuardOptions {
  docker: Docker;
  container: Docker.Container;
  /** Bytes the sandbox may write; undefined when the engine enforces a quota itself. */
  limitBytes: number | undefined;
  /** The run stops when the engine's disk has less than this free (0: never). */
  floorBytes: number;
  /**
   * The run stops when the engine's disk has fewer free inodes than this (default: 5% of its
   * inodes). Empty files use no blocks: millions of them pass any byte limit and leave the
   * host unable to create a file.
   */
  floorInodes?: number;
  /** Longest pause between two measurements. */
  intervalMs: number;
  /** Called once, on the first limit passed; the guard stops itself before. */
  onTrip: (reason: SandboxLimitExceeded) => void;
  /** User for the `df` exec when the engine must be asked (the sandbox user). */
  execUser: string;
  log: Logger;
  runId: string;
  /** `engine`: ask the engine even where the layer is readable here (tests, benchmarks). */
  measureVia?: 'auto' | 'engine';
}

export interface DiskUsage {
  /** Bytes the sandbox wrote (layer + volumes + /tmp), if measured this round. */
  usedBytes?: number;
  /** Free bytes on the engine's disk, if known. */
  freeBytes?: number;
  /** Free and total inodes on the engine's disk, if known. */
  freeInodes?: number;
  totalInodes?: number;
  /** `host`: measured on this machine's filesystem; `engine`: asked the engine. */
  via: 'host' | 'engine';
}

export interface DiskGuard {
  /** One measurement now (also what the timer runs). */
  measure(): Promise<DiskUsage>;
  /**
   * The look a command gets when it ends: a fast writer can pass the limit and finish between
   * two measurements. Cheap (free space and /tmp only) when that cannot have happened since
   * the last measurement, a measurement otherwise; it trips as the timer's would. Never throws.
   */
  settle(): Promise<void>;
  stop(): void;
}

/** What can be read without walking the layer. */
interface Glance {
  /** Free bytes of each filesystem the sandbox writes to (one may appear twice). */
  freeBytes: number[];
  /** Bytes the /tmp tmpfs holds (memory, not disk: free space does not show it). */
  tmpBytes: number;
}

interface Probe {
  glance(): Promise<Glance>;
  /** `glance` is what a later glance compares with; none when it could not be read. */
  full(): Promise<{ usage: DiskUsage; glance?: Glance }>;
}

// Shortest pause: when the layer grows fast, measurements come closer to the limit.
const MIN_INTERVAL_MS = 100;
// What a fast local disk takes from one `dd` (the attack measured 590–700 MiB/s).
const FAST_WRITER_BYTES_PER_MS = (1024 * 1024 * 1024) / 1000;
const TMPFS_MAGIC = 0x01021994;
/** Directories read at once while measuring a layer. */
const WALK_CONCURRENCY = 8;

export async function startDiskGuard(options: DiskGuardOptions): Promise<DiskGuard> {
  const probe = await chooseProbe(options);
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let last: { at: number; used: number } | undefined;
  let baseline: { used: number; glance: Glance } | undefined;
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
  };
  const measure = async (): Promise<DiskUsage> => {
    const { usage, glance } = await probe.full();
    baseline =
      usage.usedBytes !== undefined && glance ? { used: usage.usedBytes, glance } : undefined;
    if (stopped) return usage;
    const reason = limitPassed(usage, options);
    if (reason) trip(reason, usage);
    return usage;
  };
  const trip = (reason: SandboxLimitExceeded, usage: DiskUsage) => {
    if (stopped) return;
    stop();
    options.log.warn({ runId: options.runId, ...usage, err: reason.message }, 'disk guard tripped');
    options.onTrip(reason);
  };
  const settle = async (): Promise<void> => {
    const { limitBytes, floorBytes } = options;
    if (stopped || limitBytes === undefined) return;
    try {
      const since = baseline;
      const now = await probe.glance();
      const lowDisk = floorBytes > 0 && now.freeBytes.some((free) => free < floorBytes);
      if (since && !lowDisk && since.used + grownSince(since.glance, now) <= limitBytes) return;
      await measure();
    } catch (error) {
      options.log.debug({ runId: options.runId, err: String(error) }, 'disk measurement failed');
    }
  };
  const tick = async () => {
    const started = Date.now();
    let delay = options.intervalMs;
    try {
      const usage = await measure();
      delay = nextDelay(options, usage, { started, took: Date.now() - started, last });
      if (usage.usedBytes !== undefined && options.limitBytes !== undefined) {
        last = { at: started, used: usage.usedBytes };
      }
    } catch (error) {
      // The container may be going away (run end) or be busy; the next round tries again.
      options.log.debug({ runId: options.runId, err: String(error) }, 'disk measurement failed');
    }
    if (!stopped) timer = setTimeout(() => void tick(), delay).unref();
  };
  timer = setTimeout(() => void tick(), MIN_INTERVAL_MS).unref();
  return { measure, settle, stop };
}

/** The first limit this measurement passed, if any: the layer's size, then the engine's disk. */
function limitPassed(
  usage: DiskUsage,
  options: Pick<DiskGuardOptions, 'limitBytes' | 'floorBytes' | 'floorInodes'>,
): SandboxLimitExceeded | undefined {
  const { limitBytes, floorBytes } = options;
  if (limitBytes !== undefined && usage.usedBytes !== undefined && usage.usedBytes > limitBytes) {
    return new SandboxLimitExceeded(
      'disk',
      `the sandbox wrote more than ${formatBytes(limitBytes)} (${formatBytes(usage.usedBytes)} measured); raise FROGNANO_SANDBOX_DISK if the repository needs more`,
    );
  }
  if (floorBytes > 0 && usage.freeBytes !== undefined && usage.freeBytes < floorBytes) {
    return new SandboxLimitExceeded(
      'disk_floor',
      `the Docker engine's disk has less than ${formatBytes(floorBytes)} free (${formatBytes(usage.freeBytes)} left); free space on it or lower FROGNANO_DISK_FLOOR`,
    );
  }
  if (usage.freeInodes !== undefined && usage.totalInodes) {
    const floor = options.floorInodes ?? Math.floor(usage.totalInodes / 20);
    if (usage.freeInodes < floor) {
      return new SandboxLimitExceeded(
        'disk_floor',
        `the Docker engine's disk has fewer than ${floor} free inodes (${usage.freeInodes} left): the sandbox made too many files; remove files on that disk`,
      );
    }
  }
  return undefined;
}

/** The pause before the next measurement, from this one (taken at `started`, lasting `took`). */
function nextDelay(
  options: Pick<DiskGuardOptions, 'limitBytes' | 'intervalMs'>,
  usage: DiskUsage,
  { started, took, last }: { started: number; took: number; last?: { at: number; used: number } },
): number {
  let delay = options.intervalMs;
  // A measurement costs a walk of the layer: never spend more than a third of the time on it.
  const floor = Math.max(MIN_INTERVAL_MS, 2 * took);
  const used = usage.usedBytes;
  if (used !== undefined && options.limitBytes !== undefined) {
    // Next look before a writer at the fastest rate seen (or a fast disk's, if higher)
    // could cover half the headroom left: the closer to the limit, the closer the looks.
    const seen = last && used > last.used ? (used - last.used) / (started - last.at || 1) : 0;
    const rate = Math.max(seen, FAST_WRITER_BYTES_PER_MS);
    delay = Math.min(delay, (options.limitBytes - used) / rate / 2);
  }
  return Math.max(floor, delay);
}

/** At most what the sandbox can have added since `before`: disk space gone plus /tmp grown. */
function grownSince(before: Glance, now: Glance): number {
  let grown = Math.max(0, now.tmpBytes - before.tmpBytes);
  now.freeBytes.forEach((free, i) => (grown += Math.max(0, (before.freeBytes[i] ?? free) - free)));
  return grown;
}

async function chooseProbe(options: DiskGuardOptions): Promise<Probe> {
  const info = await options.container.inspect();
  const upper = (info.GraphDriver?.Data as { UpperDir?: string } | undefined)?.UpperDir;
  const volumes = (info.Mounts ?? [])
    .filter((mount) => mount.Type === 'volume' && mount.Source)
    .map((mount) => mount.Source);
  const pid = info.State?.Pid ?? 0;
  const measureLayer = options.limitBytes !== undefined;
  if (options.measureVia !== 'engine' && upper && (await readableDir(upper))) {
    const tmpPath = (await sameProcessTable(pid, info.Id)) ? `/proc/${pid}/root/tmp` : undefined;
    const disks = [upper, ...volumes];
    const glance = async (): Promise<Glance> => ({
      freeBytes: await Promise.all(
        disks.map(async (dir) => {
          const free = await statfs(dir);
          return free.bavail * free.bsize;
        }),
      ),
      tmpBytes: tmpPath ? await tmpfsUsed(tmpPath) : 0,
    });
    return {
      glance,
      full: async () => {
        // Before the walk: what is written during it counts as growth since, never as nothing.
        const seen = await glance();
        const free = await statfs(upper);
        const usage: DiskUsage = {
          via: 'host',
          freeBytes: free.bavail * free.bsize,
          freeInodes: free.ffree,
          totalInodes: free.files,
        };
        if (measureLayer) usage.usedBytes = (await layerBytes(disks)) + seen.tmpBytes;
        return { usage, glance: seen };
      },
    };
  }
  const df = () => dfInside(options.container, options.execUser);
  return {
    glance: async () => {
      const seen = await df();
      return { freeBytes: [seen.rootFree], tmpBytes: seen.tmpUsed };
    },
    full: async () => {
      // df first, then the layer's size: a write between the two is counted twice, not missed.
      const seen = await df().catch(() => undefined);
      const sized = measureLayer
        ? await (options.container.inspect({ size: true } as object) as Promise<{
            SizeRw?: number;
          }>)
        : undefined;
      const usage: DiskUsage = { via: 'engine' };
      if (seen) {
        usage.freeBytes = seen.rootFree;
        if (seen.inodes) {
          usage.freeInodes = seen.inodes.free;
          usage.totalInodes = seen.inodes.total;
        }
      }
      if (sized) usage.usedBytes = (sized.SizeRw ?? 0) + (seen?.tmpUsed ?? 0);
      // Without df there is nothing to compare a later glance with: the next look measures.
      return {
        usage,
        ...(seen ? { glance: { freeBytes: [seen.rootFree], tmpBytes: seen.tmpUsed } } : {}),
      };
    },
  };
}

async function readableDir(dir: string): Promise<boolean> {
  try {
    const handle = await opendir(dir);
    await handle.close();
    return true;
  } catch {
    return false;
  }
}

/** True when `pid` in our /proc is the container's init (same pid namespace as the engine). */
async function sameProcessTable(pid: number, containerId: string): Promise<boolean> {
  if (!pid) return false;
  const cgroup = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
  return cgroup.includes(containerId);
}

async function tmpfsUsed(tmpPath: string): Promise<number> {
  try {
    const stats = await statfs(tmpPath);
    if (stats.type !== TMPFS_MAGIC) return 0;
    return (stats.blocks - stats.bfree) * stats.bsize;
  } catch {
    return 0;
  }
}

let duMissing = false;

/**
 * Disk space used under `dirs` together (a file linked from two of them counts once): the
 * host's `du`, an order of magnitude faster than walking from here, else `allocatedBytes`.
 */
export async function layerBytes(dirs: string[]): Promise<number> {
  if (!duMissing) {
    const out = await new Promise<string | undefined>((resolve) => {
      execFile(
        'du',
        ['-s', '-k', '-x', '--', ...dirs],
        { maxBuffer: 1024 * 1024, timeout: 120_000 },
        (error, stdout) => {
          if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT') duMissing = true;
          // A file removed mid-walk makes du exit 1 but still print its totals.
          resolve(stdout);
        },
      );
    });
    const sizes = (out ?? '')
      .trim()
      .split('\n')
      .map((line) => Number(/^(\d+)\t/.exec(line)?.[1]));
    if (sizes.length === dirs.length && sizes.every(Number.isFinite)) {
      return sizes.reduce((a, b) => a + b, 0) * 1024;
    }
  }
  let total = 0;
  const seen = new Set<string>();
  for (const dir of dirs) total += await allocatedBytes(dir, seen);
  return total;
}

/**
 * Disk blocks allocated under `root`, as `du` counts them: sparse files count what they
 * use, a file with several links once. Entries that vanish mid-walk are skipped.
 */
export async function allocatedBytes(root: string, seen = new Set<string>()): Promise<number> {
  const top = await lstat(root).catch(() => undefined);
  if (!top) return 0;
  let total = top.blocks * 512;
  const count = (stat: Stats | undefined): void => {
    if (!stat) return;
    if (stat.nlink > 1 && !stat.isDirectory()) {
      const key = `${stat.dev}:${stat.ino}`;
      if (seen.has(key)) return;
      seen.add(key);
    }
    total += stat.blocks * 512;
  };
  // Several directories at once and every entry's lstat in flight together: one await per
  // entry would make a tree of tens of thousands of files (a virtualenv) slow to measure.
  const pending: string[] = [root];
  let active = 0;
  await new Promise<void>((resolve) => {
    const next = (): void => {
      while (active < WALK_CONCURRENCY && pending.length > 0) {
        const dir = pending.pop()!;
        active++;
        void walkOne(dir).finally(() => {
          active--;
          if (pending.length === 0 && active === 0) resolve();
          else next();
        });
      }
      if (pending.length === 0 && active === 0) resolve();
    };
    const walkOne = async (dir: string): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      const stats = await Promise.all(
        entries.map((entry) => {
          const full = path.join(dir, entry.name);
          if (entry.isDirectory()) pending.push(full);
          return lstat(full).catch(() => undefined);
        }),
      );
      for (const stat of stats) count(stat);
    };
    next();
  });
  return total;
}

/** `df` inside the container: free space of the disk under its root, and what /tmp holds. */
async function dfInside(
  container: Docker.Container,
  user: string,
): Promise<{ rootFree: number; tmpUsed: number; inodes?: { total: number; free: number } }> {
  const exec = await container.exec({
    Cmd: ['sh', '-c', 'df -Pk / /tmp; df -Pi /'],
    User: user,
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({});
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  exec.modem.demuxStream(stream, out, new PassThrough().resume());
  await new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', reject);
  });
  // Filesystem 1024-blocks Used Available Capacity Mounted-on, then
  // Filesystem Inodes IUsed IFree IUse% Mounted-on
  const [blocks = [], inodes = []] = Buffer.concat(chunks)
    .toString('utf8')
    .trim()
    .split(/^(?=Filesystem\s)/m)
    .map((table) =>
      table
        .trim()
        .split('\n')
        .slice(1)
        .map((line) => line.trim().split(/\s+/)),
    );
  const root = blocks.find((row) => row[5] === '/');
  const tmp = blocks.find((row) => row[5] === '/tmp');
  if (!root) throw new Error('df inside the sandbox printed no line for /');
  const rootInodes = inodes.find((row) => row[5] === '/');
  const total = Number(rootInodes?.[1]);
  const free = Number(rootInodes?.[3]);
  return {
    rootFree: Number(root[3]) * 1024,
    tmpUsed: tmp ? Number(tmp[2]) * 1024 : 0,
    // Filesystems without inode tables (btrfs) report 0 inodes: no floor there.
    ...(total > 0 && Number.isFinite(free) ? { inodes: { total, free } } : {}),
  };
}

/** `10 GB`, `64 MB`, `1.5 GB`: binary units, as FROGNANO_SANDBOX_DISK is written. */
export function formatBytes(bytes: number): string {
  const GiB = 1024 ** 3;
  const MiB = 1024 ** 2;
  if (bytes >= GiB) return `${round1(bytes / GiB)} GB`;
  if (bytes >= MiB) return `${round1(bytes / MiB)} MB`;
  return `${Math.round(bytes / 1024)} KB`;
}

function round1(n: number): string {
  return String(Math.round(n * 10) / 10);
}
