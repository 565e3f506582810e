// The production sandbox: one hardened container per run (dockerode). The repository is
// copied in through the Engine API (never a bind mount); tools talk to one long-lived
// helper process inside the container (tool-helper-channel.ts), so a Read/Edit/Glob is
// one round trip. The container is labelled so that nothing of ours outlives its run.
import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { z } from 'zod';
import { log as defaultLog, type Logger } from '../log.js';
import {
  PythonError,
  SandboxFailure,
  type ExecOptions,
  type ExecResult,
  type FileRead,
  type GlobMatch,
  type LinesRead,
  type LinesRequest,
  type Sandbox,
} from '../leaf/sandbox.js';
import { cpLength, pyRepr } from '../leaf/python-text.js';
import { connectDocker } from './docker-engine.js';
import { startDiskGuard, type DiskGuard, type SandboxLimitExceeded } from './disk-guard.js';
import {
  LABEL_OWNER,
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_OWNER_PROCESS,
  ownerLabels,
  type SandboxOwner,
} from './owner.js';
import { packDirectory } from './pack-directory.js';
import {
  HelperChannelError,
  HelperPythonMissing,
  ToolHelperChannel,
} from './tool-helper-channel.js';

// Delays between helper restart attempts; `undefined` marks the last attempt.
const RESTART_BACKOFF_MS: readonly (number | undefined)[] = [250, 1000, undefined];

/**
 * Built by sandbox/Dockerfile, or offline by sandbox/build-offline.sh: the same recipe
 * (sandbox/setup-image.sh). The tag carries the recipe version: change the recipe, bump it, and
 * every start builds the new image instead of using a stale one.
 */
export const DEFAULT_SANDBOX_IMAGE = 'frognano/sandbox:py3-r2';
export const LABEL_RUN = 'frognano.run';
export const LABEL_REPO = 'frognano.repo';
export const LABEL_CREATED = 'frognano.created';
export const SANDBOX_WORKDIR = '/testbed';
export const SANDBOX_HOME = '/home/frognano';
export const SANDBOX_UID = 1000;
export const SANDBOX_GID = 1000;
const SANDBOX_USER = `${SANDBOX_UID}:${SANDBOX_GID}`;
const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** The only variables the container gets: never a credential. */
export const SANDBOX_ENV = [`PATH=${SANDBOX_PATH}`, `HOME=${SANDBOX_HOME}`, 'LANG=C.UTF-8'];

const MiB = 1024 * 1024;
const DEFAULT_MAX_OUTPUT_BYTES = MiB;
/** Two capped streams must fit in one helper frame. */
const MAX_OUTPUT_BYTES_LIMIT = 32 * MiB;
/** Largest file or stdin sent through the helper (as for reads). */
const MAX_TRANSFER_BYTES = 64 * MiB;
/** setTimeout fires at once for delays above 2^31-1 ms, so longer waits are re-armed. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** A helper that keeps dying is a broken sandbox, not bad luck. */
const MAX_HELPER_RESTARTS = 20;

const Limits = z.object({
  memoryBytes: z
    .number()
    .int()
    .min(16 * MiB)
    .default(4096 * MiB),
  nanoCpus: z.number().int().min(10_000_000).default(2_000_000_000),
  pidsLimit: z.number().int().min(16).default(1024),
  tmpfsBytes: z
    .number()
    .int()
    .min(MiB)
    .default(1024 * MiB),
  /** Bytes the sandbox may write (writable layer, volumes, /tmp) before the run stops. */
  diskBytes: z
    .number()
    .int()
    .min(MiB)
    .default(10 * 1024 * MiB),
  /** The run stops when the engine's disk has less than this free (0: never). */
  diskFloorBytes: z
    .number()
    .int()
    .min(0)
    .default(2 * 1024 * MiB),
});

export const DockerSandboxOptions = z.object({
  docker: z
    .custom<Docker>((value) => value instanceof Docker, {
      message: 'docker must be a Dockerode instance',
    })
    .optional(),
  image: z.string().min(1).default(DEFAULT_SANDBOX_IMAGE),
  runId: z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/,
      'runId must be 1-100 of [A-Za-z0-9_.-], starting alphanumeric',
    ),
  repo: z.string().max(512).default(''),
  network: z.enum(['none', 'bridge']).default('none'),
  limits: Limits.prefault({}),
  labels: z.record(z.string().min(1), z.string()).default({}),
  /**
   * Who may reap the container (owner.ts: `sandboxOwner(dataDir)`). Without one the
   * container carries no owner and no reaper touches it; its creator must remove it.
   */
  owner: z
    .custom<SandboxOwner>(
      (value) =>
        typeof value === 'object' &&
        value !== null &&
        typeof (value as SandboxOwner).instance === 'string' &&
        typeof (value as SandboxOwner).process === 'string',
      { message: 'owner must come from sandboxOwner(dataDir)' },
    )
    .optional(),
  /** Upper bound for one Read/Write/Glob round trip before the helper counts as hung. */
  fileOpTimeoutMs: z.number().int().positive().default(60_000),
  /**
   * How long the helper gets past a command's timeout (or abort) before the host kills the
   * command's group itself; after as long again the helper counts as hung and is replaced.
   */
  execGraceMs: z.number().int().positive().default(10_000),
  /** Longest pause between two disk measurements (disk-guard.ts). */
  diskCheckMs: z.number().int().positive().default(2000),
  logger: z.custom<Logger>((value) => typeof value === 'object' && value !== null).optional(),
});
export type DockerSandboxOptions = z.input<typeof DockerSandboxOptions>;
type ResolvedOptions = z.output<typeof DockerSandboxOptions>;
export type DockerSandboxLimits = z.output<typeof Limits>;

export interface DockerExecResult extends ExecResult {
  /** The container's memory limit killed a process while this command ran. */
  oomKilled: boolean;
  /** A fork failed at the container's pids limit while this command ran. */
  pidsLimitHit: boolean;
}

const Base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/);
const PathText = z.string().max(65_536);
const ReadResult = z.object({ data: Base64, realPath: PathText });
const WriteResult = z.object({ realPath: PathText });
const LinesResult = z.object({
  // At most the asked code points (each up to two UTF-16 units); checked exactly below.
  text: z.string().max(2 * 1_000_000),
  totalChars: z.number().int().nonnegative(),
  realPath: PathText,
});
const EditResult = z.object({ count: z.number().int().positive(), realPath: PathText });
const GlobResult = z.object({ matches: z.array(z.object({ path: PathText, realPath: PathText })) });
const GlobShownResult = z.object({ shown: z.array(PathText), total: z.number().int().min(0) });
const ExecWireResult = z.object({
  exitCode: z.number().int(),
  stdout: Base64,
  stderr: Base64,
  stdoutDropped: z.number().int().nonnegative(),
  stderrDropped: z.number().int().nonnegative(),
  timedOut: z.boolean(),
  cancelled: z.boolean(),
  oomKilled: z.boolean(),
  pidsLimitHit: z.boolean(),
  countersAvailable: z.boolean(),
});

/** Creates, starts and connects a hardened container; removes it again if any step fails. */
export async function createDockerSandbox(options: DockerSandboxOptions): Promise<DockerSandbox> {
  const parsed = DockerSandboxOptions.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `invalid DockerSandbox option ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
    );
  }
  const resolved = parsed.data;
  const docker = resolved.docker ?? connectDocker();
  const logger = resolved.logger ?? defaultLog;
  const created = new Date().toISOString();
  const labels: Record<string, string> = {
    ...resolved.labels,
    ...(resolved.owner ? ownerLabels(resolved.owner) : {}),
    [LABEL_RUN]: resolved.runId,
    [LABEL_REPO]: resolved.repo,
    [LABEL_CREATED]: created,
  };
  const name = `frognano-${resolved.runId}-${randomBytes(3).toString('hex')}`;
  const { limits } = resolved;

  const config = (storageOpt: boolean): Docker.ContainerCreateOptions => ({
    name,
    Image: resolved.image,
    Cmd: ['sleep', 'infinity'],
    Entrypoint: [],
    User: SANDBOX_USER,
    WorkingDir: SANDBOX_WORKDIR,
    Env: SANDBOX_ENV,
    Labels: labels,
    Tty: false,
    OpenStdin: false,
    NetworkDisabled: false,
    HostConfig: {
      NetworkMode: resolved.network,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Privileged: false,
      Init: true,
      Memory: limits.memoryBytes,
      MemorySwap: limits.memoryBytes,
      NanoCpus: limits.nanoCpus,
      PidsLimit: limits.pidsLimit,
      Tmpfs: { '/tmp': `rw,nosuid,nodev,size=${limits.tmpfsBytes},mode=1777` },
      Binds: [],
      Mounts: [],
      AutoRemove: false,
      ReadonlyRootfs: false,
      IpcMode: 'private',
      LogConfig: { Type: 'none', Config: {} },
      // The engine's own quota where its storage driver has one (overlay2 on xfs with
      // pquota, btrfs, zfs); elsewhere the disk guard measures instead.
      ...(storageOpt ? { StorageOpt: { size: String(limits.diskBytes) } } : {}),
    },
  });

  let container: Docker.Container;
  let quota = storageQuota.get(engineKey(docker)) !== false;
  try {
    try {
      container = await docker.createContainer(config(quota));
    } catch (error) {
      if (!quota || !STORAGE_OPT_UNSUPPORTED.test(errorText(error))) throw error;
      storageQuota.set(engineKey(docker), false);
      quota = false;
      logger.info(
        { driverSays: errorText(error) },
        'no disk quota from the storage driver; the disk guard measures instead',
      );
      container = await docker.createContainer(config(false));
    }
  } catch (error) {
    throw new SandboxFailure(describeCreateError(error, resolved.image), { cause: error });
  }

  const sandbox = new DockerSandbox(docker, container, resolved, labels, logger);
  try {
    // putArchive runs in the engine, not as uid 1000, so it can give the sandbox user its
    // home and /testbed in any image, even one without them.
    await container.putArchive(packDirectories([SANDBOX_HOME, SANDBOX_WORKDIR]), { path: '/' });
    await container.start();
    await sandbox.guardDisk(quota, resolved.diskCheckMs);
    await sandbox.startHelper();
  } catch (error) {
    // The reason it failed matters more than a failed cleanup (the reaper gets those).
    await sandbox.dispose().catch(() => undefined);
    if (sandbox.limitExceeded) throw sandbox.limitExceeded;
    if (error instanceof HelperPythonMissing)
      throw new SandboxFailure(error.message, { cause: error });
    if (error instanceof SandboxFailure) throw error;
    throw new SandboxFailure(`could not start sandbox container ${name}: ${errorText(error)}`, {
      cause: error,
    });
  }
  logger.info(
    {
      runId: resolved.runId,
      container: container.id.slice(0, 12),
      image: resolved.image,
      diskQuota: quota,
    },
    'sandbox started',
  );
  return sandbox;
}

export class DockerSandbox implements Sandbox {
  readonly kind = 'docker' as const;
  readonly workdir = SANDBOX_WORKDIR;
  readonly homeDir = SANDBOX_HOME;
  readonly image: string;
  readonly runId: string;
  readonly limits: DockerSandboxLimits;
  private readonly fileOpTimeoutMs: number;
  private readonly execGraceMs: number;
  private helper: ToolHelperChannel | undefined;
  private helperStarting: Promise<ToolHelperChannel> | undefined;
  /** Helper restarts so far; past MAX_HELPER_RESTARTS the sandbox counts as broken. */
  private helperRestarts = 0;
  private disposing: Promise<void> | undefined;
  private diskGuard: DiskGuard | undefined;
  /** Set when the disk guard stopped the sandbox: every later call fails with it. */
  private limitFailure: SandboxLimitExceeded | undefined;
  /** The kill that follows a limit: calls fail only once the writer is dead. */
  private limitKill: Promise<void> | undefined;

  constructor(
    private readonly docker: Docker,
    private readonly container: Docker.Container,
    options: ResolvedOptions,
    readonly labels: Readonly<Record<string, string>>,
    private readonly log: Logger,
  ) {
    this.fileOpTimeoutMs = options.fileOpTimeoutMs;
    this.execGraceMs = options.execGraceMs;
    this.image = options.image;
    this.runId = options.runId;
    this.limits = options.limits;
  }

  get containerId(): string {
    return this.container.id;
  }

  get disposed(): boolean {
    return this.disposing !== undefined;
  }

  /** Why the disk guard stopped this sandbox, if it did. */
  get limitExceeded(): SandboxLimitExceeded | undefined {
    return this.limitFailure;
  }

  /**
   * Starts the disk watchdog (called once by createDockerSandbox). With an engine quota
   * only the free-space floor is watched: the quota already bounds the layer.
   */
  async guardDisk(engineQuota: boolean, intervalMs: number): Promise<void> {
    if (this.disposed) return;
    this.diskGuard = await startDiskGuard({
      docker: this.docker,
      container: this.container,
      limitBytes: engineQuota ? undefined : this.limits.diskBytes,
      floorBytes: this.limits.diskFloorBytes,
      intervalMs,
      execUser: SANDBOX_USER,
      log: this.log,
      runId: this.runId,
      onTrip: (reason) => {
        this.limitKill ??= this.stopForLimit(reason);
      },
    });
    if (this.disposed) this.diskGuard.stop();
  }

  /**
   * Kills everything in the container at once (the writer must not get further) and fails
   * whatever is running in it with the reason; the container itself goes on dispose.
   */
  private async stopForLimit(reason: SandboxLimitExceeded): Promise<void> {
    if (this.disposed || this.limitFailure) return;
    this.limitFailure = reason;
    try {
      await this.container.kill({ signal: 'SIGKILL' });
    } catch (error) {
      this.log.warn({ runId: this.runId, err: errorText(error) }, 'could not kill the sandbox');
    }
    this.helper?.fail(new HelperChannelError(reason.message));
  }

  /**
   * A command can pass the disk limit and end before the guard's next measurement (a fast
   * `dd`, `fallocate`): it fails with the limit all the same, never as if nothing happened.
   */
  private async settleDisk(): Promise<void> {
    await this.diskGuard?.settle();
    if (!this.limitFailure) return;
    await this.limitKill;
    throw this.limitFailure;
  }

  /** Starts the tool helper; called once by createDockerSandbox. */
  async startHelper(): Promise<void> {
    await this.getHelper();
  }

  async exec(command: string, options: ExecOptions = {}): Promise<DockerExecResult> {
    const started = Date.now();
    const maxOutputBytes = Math.min(
      options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      MAX_OUTPUT_BYTES_LIMIT,
    );
    const payload: Record<string, unknown> = {
      command,
      cwd: options.cwd ?? this.workdir,
      env: options.env ?? {},
      maxOutputBytes: Math.max(0, maxOutputBytes),
      timeoutMs: options.timeoutMs ?? null,
      // On a timeout or cancel, also kill what left the command's process group.
      killStrays: true,
    };
    if (options.stdin !== undefined) {
      const stdin =
        typeof options.stdin === 'string'
          ? Buffer.from(options.stdin, 'utf8')
          : Buffer.from(options.stdin.buffer, options.stdin.byteOffset, options.stdin.byteLength);
      if (stdin.length > MAX_TRANSFER_BYTES) {
        throw new PythonError(
          'OSError',
          `[Errno 27] stdin too large for the sandbox transport (${stdin.length} bytes; limit ${MAX_TRANSFER_BYTES})`,
        );
      }
      payload.stdin = stdin.toString('base64');
    }
    if (options.signal?.aborted) {
      // As if started and killed at once: nothing ran, nothing to say.
      return killedResult(started, maxOutputBytes);
    }
    let helper: ToolHelperChannel;
    try {
      helper = await this.getHelper();
    } catch (error) {
      throw this.fatal(error);
    }
    let id = 0;
    let pgid = 0;
    let cancelRequested = false;
    let watchdog: NodeJS.Timeout | undefined;
    const armWatchdog = (afterMs: number) => {
      clearTimeout(watchdog);
      const due = Date.now() + afterMs;
      const fire = (): void => {
        const left = due - Date.now();
        if (left > 0) watchdog = setTimeout(fire, Math.min(left, MAX_TIMER_MS));
        else void this.rescue(helper, pgid, command);
      };
      watchdog = setTimeout(fire, Math.min(afterMs, MAX_TIMER_MS));
    };
    const onAbort = () => {
      cancelRequested = true;
      if (pgid) helper.cancel(id);
      armWatchdog(this.execGraceMs);
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.timeoutMs !== undefined) armWatchdog(options.timeoutMs + this.execGraceMs);
    try {
      const raw = await helper.request('exec', payload, {
        onId: (value) => (id = value),
        onStarted: (value) => {
          pgid = value;
          if (cancelRequested) helper.cancel(id);
        },
      });
      const wire = this.validate(helper, ExecWireResult, raw);
      const stdout = Buffer.from(wire.stdout, 'base64');
      let stderr = Buffer.from(wire.stderr, 'base64');
      if (stdout.length > maxOutputBytes || stderr.length > maxOutputBytes) {
        throw this.misbehaved(helper, 'tool helper returned more output than the cap');
      }
      let oomKilled = wire.oomKilled;
      if (!wire.countersAvailable && wire.exitCode === -9 && !wire.timedOut && !wire.cancelled) {
        oomKilled = await this.containerOomKilled();
      }
      const notes: string[] = [];
      if (oomKilled) {
        notes.push(
          `[frognano sandbox] out of memory: a process was killed at the ${Math.round(this.limits.memoryBytes / MiB)} MiB memory limit`,
        );
      }
      if (wire.pidsLimitHit) {
        notes.push(
          `[frognano sandbox] process limit reached: fork failed at the limit of ${this.limits.pidsLimit} processes`,
        );
      }
      if (notes.length > 0) {
        const sep = stderr.length > 0 && stderr[stderr.length - 1] !== 0x0a ? '\n' : '';
        stderr = Buffer.concat([stderr, Buffer.from(`${sep}${notes.join('\n')}\n`, 'utf8')]);
        this.log.warn(
          { runId: this.runId, oomKilled, pidsLimitHit: wire.pidsLimitHit },
          'sandbox limit reached',
        );
      }
      await this.settleDisk();
      return {
        exitCode: wire.exitCode,
        stdout,
        stderr,
        stdoutDroppedChars: wire.stdoutDropped,
        stderrDroppedChars: wire.stderrDropped,
        timedOut: wire.timedOut,
        durationMs: Date.now() - started,
        oomKilled,
        pidsLimitHit: wire.pidsLimitHit,
        ...(notes.length > 0 ? { notes } : {}),
      };
    } catch (error) {
      if (error instanceof PythonError) throw error;
      if (!(error instanceof HelperChannelError)) throw this.fatal(error);
      // The command may have killed the helper (`pkill python3`): a fresh helper keeps the
      // run going, and the command is reported as killed (it is not retried: side effects).
      await this.recoverHelper(error, false);
      return killedResult(
        started,
        maxOutputBytes,
        'the sandbox tool helper died while this command ran',
      );
    } finally {
      clearTimeout(watchdog);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  async readFile(path: string): Promise<FileRead> {
    const result = await this.fileOp('read', { path }, ReadResult);
    return { data: Buffer.from(result.data, 'base64'), realPath: result.realPath };
  }

  async readLines(path: string, request: LinesRequest): Promise<LinesRead> {
    const maxChars = Math.max(0, Math.floor(request.maxChars));
    const result = await this.fileOp(
      'read_lines',
      {
        path,
        offset: request.offset.toString(),
        limit: request.limit.toString(),
        maxChars,
      },
      LinesResult,
    );
    if (cpLength(result.text) > maxChars || result.totalChars < cpLength(result.text)) {
      const helper = this.helper;
      if (helper) throw this.fatal(this.misbehaved(helper, 'tool helper returned too many lines'));
      throw new SandboxFailure('tool helper returned too many lines');
    }
    return result;
  }

  async editFile(
    path: string,
    oldText: string,
    newText: string,
    replaceAll: boolean,
  ): Promise<{ count: number; realPath: string }> {
    const size = Buffer.byteLength(oldText) + Buffer.byteLength(newText);
    if (size > MAX_TRANSFER_BYTES) {
      throw new PythonError(
        'OSError',
        `[Errno 27] Edit too large for the sandbox transport (${size} bytes; limit ${MAX_TRANSFER_BYTES}): ${pyRepr(path)}`,
      );
    }
    return this.fileOp('edit', { path, old: oldText, new: newText, replaceAll }, EditResult);
  }

  async writeFile(path: string, data: Uint8Array): Promise<{ realPath: string }> {
    if (data.byteLength > MAX_TRANSFER_BYTES) {
      throw new PythonError(
        'OSError',
        `[Errno 27] File too large for the sandbox transport (${data.byteLength} bytes; limit ${MAX_TRANSFER_BYTES}): ${pyRepr(path)}`,
      );
    }
    const result = await this.fileOp(
      'write',
      { path, data: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64') },
      WriteResult,
    );
    return { realPath: result.realPath };
  }

  async glob(pattern: string): Promise<GlobMatch[]> {
    const result = await this.fileOp('glob', { pattern }, GlobResult);
    return result.matches;
  }

  async globShown(
    pattern: string,
    options: { root: string; limit: number },
  ): Promise<{ shown: string[]; total: number }> {
    return this.fileOp(
      'glob',
      { pattern, displayRoot: options.root, limit: options.limit },
      GlobShownResult,
    );
  }

  /**
   * Copies the contents of a host directory into the sandbox (default: the workdir)
   * through the Engine API: symlinks kept as links, every entry owned by uid 1000.
   */
  async copyIn(hostDir: string, target: string = this.workdir): Promise<{ entries: number }> {
    if (!target.startsWith('/'))
      throw new Error(`copyIn target must be an absolute path: ${target}`);
    if (target !== this.workdir) {
      // putArchive needs an existing directory; made here as the sandbox user's.
      await this.container.putArchive(packDirectories([target]), { path: '/' });
    }
    const packed = packDirectory(hostDir, {
      uid: SANDBOX_UID,
      gid: SANDBOX_GID,
      uname: 'frognano',
      gname: 'frognano',
    });
    try {
      const [, entries] = await Promise.all([
        this.container.putArchive(packed.stream as unknown as NodeJS.ReadableStream, {
          path: target,
        }),
        packed.done,
      ]);
      return { entries };
    } catch (error) {
      packed.stream.destroy();
      throw new SandboxFailure(
        `could not copy ${hostDir} into the sandbox at ${target}: ${errorText(error)}`,
        {
          cause: error,
        },
      );
    }
  }

  /** Cuts every network: afterwards the container has loopback only. Idempotent. */
  async disconnectNetwork(): Promise<void> {
    const info = await this.container.inspect();
    const networks = Object.keys(info.NetworkSettings?.Networks ?? {}).filter(
      (name) => name !== 'none',
    );
    for (const name of networks) {
      try {
        await this.docker
          .getNetwork(name)
          .disconnect({ Container: this.container.id, Force: true });
      } catch (error) {
        // Already gone (a concurrent call, or the network was removed): that is the goal.
        if (!/is not connected|not found|no such/i.test(errorText(error))) {
          throw new SandboxFailure(
            `could not disconnect the sandbox from network ${name}: ${errorText(error)}`,
            {
              cause: error,
            },
          );
        }
      }
    }
    const after = await this.container.inspect();
    const left = Object.keys(after.NetworkSettings?.Networks ?? {}).filter(
      (name) => name !== 'none',
    );
    if (left.length > 0)
      throw new SandboxFailure(`sandbox still attached to network(s): ${left.join(', ')}`);
  }

  /**
   * `docker commit` of the container (a setup snapshot). The image keeps the container's
   * config (user, env, workdir) and labels; `labels` are added over them (pass the ones to
   * override, e.g. `frognano.run`). Returns the image id.
   */
  async commit(tag: string, labels: Record<string, string> = {}): Promise<string> {
    const { repo, tag: version } = splitImageTag(tag);
    const result = (await this.container.commit({
      _query: {
        container: this.container.id,
        repo,
        tag: version,
        pause: true,
        comment: 'frognano setup snapshot',
      },
      // A setup snapshot belongs to no process: a container started from it gets its own owner,
      // and one started without any must not inherit this run's. (A run's attempt base passes
      // its owner in `labels`, so reap can remove it if the run is killed.)
      _body: {
        Labels: {
          [LABEL_OWNER]: '',
          [LABEL_OWNER_PROCESS]: '',
          [LABEL_OWNER_PID]: '',
          [LABEL_OWNER_HOST]: '',
          ...labels,
        },
      },
    })) as { Id?: string; id?: string };
    const imageId = result.Id ?? result.id;
    if (!imageId)
      throw new SandboxFailure(`docker commit of ${this.container.id} returned no image id`);
    return imageId;
  }

  /** The container's State.OOMKilled flag (set when the memory cgroup killed anything). */
  async containerOomKilled(): Promise<boolean> {
    try {
      const info = await this.container.inspect();
      return info.State?.OOMKilled === true;
    } catch {
      return false;
    }
  }

  async dispose(): Promise<void> {
    this.disposing ??= (async () => {
      this.diskGuard?.stop();
      this.helper?.close();
      this.helper = undefined;
      try {
        await this.container.remove({ force: true, v: true });
      } catch (error) {
        const status = (error as { statusCode?: number }).statusCode;
        // 404: already gone; 409: removal already in progress.
        if (status !== 404 && status !== 409) {
          this.log.error(
            { runId: this.runId, err: errorText(error) },
            'sandbox container removal failed',
          );
          throw new SandboxFailure(
            `could not remove sandbox container ${this.container.id}: ${errorText(error)}`,
            {
              cause: error,
            },
          );
        }
      }
    })();
    return this.disposing;
  }

  private async fileOp<T>(
    op: 'read' | 'read_lines' | 'edit' | 'write' | 'glob',
    payload: Record<string, unknown>,
    schema: z.ZodType<T>,
  ): Promise<T> {
    // Idempotent operations: on a broken helper, retry once on a fresh one.
    for (let attempt = 1; ; attempt += 1) {
      let helper: ToolHelperChannel;
      try {
        helper = await this.getHelper();
      } catch (error) {
        throw this.fatal(error);
      }
      let timer: NodeJS.Timeout | undefined;
      try {
        const raw = await Promise.race([
          helper.request(op, payload),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => {
              const error = new HelperChannelError(
                `tool helper did not answer ${op} within ${this.fileOpTimeoutMs} ms`,
              );
              helper.fail(error);
              reject(error);
            }, this.fileOpTimeoutMs);
          }),
        ]);
        return this.validate(helper, schema, raw);
      } catch (error) {
        if (error instanceof PythonError) throw error;
        if (!(error instanceof HelperChannelError)) throw this.fatal(error);
        await this.recoverHelper(error, attempt > 1);
      } finally {
        clearTimeout(timer);
      }
    }
  }

  private validate<T>(helper: ToolHelperChannel, schema: z.ZodType<T>, raw: unknown): T {
    const parsed = schema.safeParse(raw);
    if (!parsed.success) throw this.misbehaved(helper, 'tool helper sent a malformed result');
    return parsed.data;
  }

  private misbehaved(helper: ToolHelperChannel, message: string): HelperChannelError {
    const error = new HelperChannelError(message);
    helper.fail(error);
    return error;
  }

  /**
   * After a helper failure: restart it, unless this request already had its one restart
   * (`finalAttempt`) or the sandbox keeps breaking; then the sandbox itself has failed.
   */
  private async recoverHelper(error: HelperChannelError, finalAttempt: boolean): Promise<void> {
    if (this.limitFailure) {
      await this.limitKill;
      throw this.limitFailure;
    }
    if (this.helper?.dead) this.helper = undefined;
    this.log.warn(
      { runId: this.runId, err: error.message, restarts: this.helperRestarts },
      'sandbox tool helper failed',
    );
    if (this.disposed) throw new SandboxFailure('the sandbox was disposed', { cause: error });
    if (finalAttempt) {
      throw new SandboxFailure(
        `the sandbox tool helper failed again after a restart: ${error.message}`,
        {
          cause: error,
        },
      );
    }
    if (this.helperRestarts >= MAX_HELPER_RESTARTS) {
      throw new SandboxFailure(
        `the sandbox tool helper failed ${this.helperRestarts + 1} times: ${error.message}`,
        {
          cause: error,
        },
      );
    }
    this.helperRestarts += 1;
    // Right after an OOM kill the cgroup can still be reclaiming memory and refuse a new
    // exec for a moment; a short back-off tells that apart from a container that is gone.
    for (const delayMs of RESTART_BACKOFF_MS) {
      try {
        await this.getHelper();
        return;
      } catch (restartError) {
        if (this.disposed || delayMs === undefined) throw this.fatal(restartError);
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  private fatal(error: unknown): SandboxFailure {
    if (this.limitFailure) return this.limitFailure;
    if (error instanceof SandboxFailure) return error;
    if (this.disposed) return new SandboxFailure('the sandbox was disposed', { cause: error });
    return new SandboxFailure(`sandbox tool helper unavailable: ${errorText(error)}`, {
      cause: error,
    });
  }

  private async getHelper(): Promise<ToolHelperChannel> {
    if (this.limitFailure) throw this.limitFailure;
    if (this.disposed) throw new SandboxFailure('the sandbox was disposed');
    if (this.helper && !this.helper.dead) return this.helper;
    this.helperStarting ??= ToolHelperChannel.start({
      container: this.container,
      user: SANDBOX_USER,
      workdir: this.workdir,
      env: SANDBOX_ENV,
      image: this.image,
    }).finally(() => {
      this.helperStarting = undefined;
    });
    const helper = await this.helperStarting;
    if (this.disposed) {
      helper.close();
      throw new SandboxFailure('the sandbox was disposed');
    }
    this.helper = helper;
    return helper;
  }

  /**
   * The helper did not answer in time after a timeout or abort: kill the command's group
   * from the host with a second exec, then give the helper a last chance before dropping it.
   */
  private async rescue(helper: ToolHelperChannel, pgid: number, command: string): Promise<void> {
    if (helper.dead) return;
    this.log.warn(
      { runId: this.runId, pgid, command: command.slice(0, 200) },
      'sandbox exec overran; killing from host',
    );
    if (pgid > 0) {
      try {
        await this.runDirect(['kill', '-KILL', '--', `-${pgid}`]);
      } catch (error) {
        this.log.warn({ runId: this.runId, err: errorText(error) }, 'host-side kill failed');
      }
    }
    setTimeout(() => {
      if (helper.dead) return;
      helper.fail(new HelperChannelError('tool helper did not finish a killed command'));
      // A hung helper (e.g. stopped by the agent) would linger until the container goes.
      if (!this.disposed)
        void this.runDirect(['kill', '-KILL', String(helper.pid)]).catch(() => undefined);
    }, this.execGraceMs).unref();
  }

  /** A plain exec as the sandbox user, outside the helper (used only for rescue). */
  private async runDirect(cmd: string[]): Promise<void> {
    const exec = await this.container.exec({
      Cmd: cmd,
      User: SANDBOX_USER,
      AttachStdout: true,
      AttachStderr: true,
      Env: SANDBOX_ENV,
    });
    const stream = await exec.start({});
    await new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
      stream.resume();
    });
  }
}

/** Engines whose storage driver cannot give a container a size quota (remembered per engine). */
const storageQuota = new Map<string, false>();

function engineKey(docker: Docker): string {
  const modem = docker.modem as { socketPath?: unknown; host?: unknown; port?: unknown };
  return JSON.stringify([modem.socketPath, modem.host, modem.port]);
}
// overlay2 off xfs/pquota: "--storage-opt is supported only for overlay over xfs with 'pquota'
// mount option"; other drivers: "Storage Option not supported", "... size is not supported".
const STORAGE_OPT_UNSUPPORTED =
  /storage[- ]?opt(ion)?s? .*(not supported|supported only|only supported)|not supported .*storage[- ]?opt/i;

function killedResult(started: number, maxOutputBytes: number, why?: string): DockerExecResult {
  const note = why
    ? Buffer.from(`[frognano sandbox] ${why}\n`, 'utf8').subarray(0, Math.max(0, maxOutputBytes))
    : Buffer.alloc(0);
  return {
    exitCode: -9,
    stdout: Buffer.alloc(0),
    stderr: note,
    stdoutDroppedChars: 0,
    stderrDroppedChars: 0,
    timedOut: false,
    durationMs: Date.now() - started,
    oomKilled: false,
    pidsLimitHit: false,
  };
}

/**
 * A tar of directories owned by the sandbox user, extracted at `/`. Missing parents are
 * made by the engine and stay root's.
 */
function packDirectories(dirs: string[]): Buffer {
  const blocks = dirs.map((dir) => {
    const name = `${dir.split('/').filter(Boolean).join('/')}/`;
    if (Buffer.byteLength(name) > 100)
      throw new Error(`directory path too long for the sandbox skeleton: ${dir}`);
    return tarDirectoryHeader(name, SANDBOX_UID, SANDBOX_GID, 0o755);
  });
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/** One ustar header for a directory (small and fixed, so no stream is needed). */
function tarDirectoryHeader(name: string, uid: number, gid: number, mode: number): Buffer {
  const header = Buffer.alloc(512);
  const octal = (value: number, length: number) =>
    value.toString(8).padStart(length - 1, '0') + '\0';
  header.write(name, 0, 100, 'utf8');
  header.write(octal(mode, 8), 100, 'ascii');
  header.write(octal(uid, 8), 108, 'ascii');
  header.write(octal(gid, 8), 116, 'ascii');
  header.write(octal(0, 12), 124, 'ascii');
  header.write(octal(Math.floor(Date.now() / 1000), 12), 136, 'ascii');
  header.write('        ', 148, 'ascii');
  header.write('5', 156, 'ascii');
  header.write('ustar\0', 257, 'ascii');
  header.write('00', 263, 'ascii');
  header.write('frognano', 265, 'ascii');
  header.write('frognano', 297, 'ascii');
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'ascii');
  return header;
}

function splitImageTag(reference: string): { repo: string; tag: string } {
  const slash = reference.lastIndexOf('/');
  const colon = reference.lastIndexOf(':');
  if (colon > slash) return { repo: reference.slice(0, colon), tag: reference.slice(colon + 1) };
  return { repo: reference, tag: 'latest' };
}

function describeCreateError(error: unknown, image: string): string {
  const status = (error as { statusCode?: number }).statusCode;
  if (status === 404 && /no such image/i.test(errorText(error))) {
    return `sandbox image ${image} not found; build it (docker build -t ${image} sandbox/, or sandbox/build-offline.sh without a registry) or choose another image`;
  }
  return `could not create the sandbox container from ${image}: ${errorText(error)}`;
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const json = (error as { json?: { message?: string } }).json;
    return json?.message ?? error.message;
  }
  return String(error);
}
