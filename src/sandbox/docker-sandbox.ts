// The production sandbox: one hardened container per run (dockerode). The repository is
// copied in through the Engine API (never a bind mount); tools talk to one long-lived
// helper process inside the container (tool-helper-channel.ts), so a Read/Edit/Glob is
// one round trip. The container is labelled so that nothing of ours outlives its run.
import type Docker from 'dockerode';
import type { z } from 'zod';
import { log as defaultLog, type Logger } from '../log.js';
import {
  PythonError,
  SandboxFailure,
  SandboxLost,
  type ExecOptions,
  type FileRead,
  type GlobMatch,
  type LinesRead,
  type LinesRequest,
  type Sandbox,
} from '../leaf/sandbox.js';
import { cpLength, pyRepr } from '../leaf/python-text.js';
import { commitContainer } from './commit-container.js';
import { copyIntoContainer } from './copy-into-container.js';
import { containerGone, helperExitCode } from './container-gone.js';
import { createContainer } from './create-container.js';
import { removeContainer } from './remove-container.js';
import { containerName, parseOptions, sandboxIdentity, startSandbox } from './start-container.js';
import { disconnectNetworks } from './disconnect-networks.js';
import { connectDocker } from './docker-engine.js';
import {
  execPayload,
  execResult,
  killedResult,
  limitNotes,
  outputCap,
  withNotes,
  type DockerExecResult,
} from './docker-exec-result.js';
import {
  SANDBOX_ENV,
  SANDBOX_HOME,
  SANDBOX_USER,
  SANDBOX_WORKDIR,
  type DockerSandboxLimits,
  type DockerSandboxOptions,
  type ResolvedDockerSandboxOptions,
} from './docker-sandbox-options.js';
import { startDiskGuard, type DiskGuard, type SandboxLimitExceeded } from './disk-guard.js';
import { errorText } from './engine-error-text.js';
import { rescueOverrun, type RescueContext } from './exec-rescue.js';
import { ExecWatch } from './exec-watch.js';
import {
  EditResult,
  ExecWireResult,
  GlobResult,
  GlobShownResult,
  LinesResult,
  MAX_TRANSFER_BYTES,
  ReadResult,
  WriteResult,
} from './helper-wire.js';
import { HelperChannelError, ToolHelperChannel } from './tool-helper-channel.js';

export {
  DEFAULT_SANDBOX_IMAGE,
  DockerSandboxOptions,
  LABEL_CREATED,
  LABEL_REPO,
  LABEL_RUN,
  SANDBOX_ENV,
  SANDBOX_GID,
  SANDBOX_HOME,
  SANDBOX_UID,
  SANDBOX_WORKDIR,
  type DockerSandboxLimits,
} from './docker-sandbox-options.js';
export type { DockerExecResult } from './docker-exec-result.js';

// Delays between helper restart attempts; `undefined` marks the last attempt.
const RESTART_BACKOFF_MS: readonly (number | undefined)[] = [250, 1000, undefined];
/** A helper that keeps dying is a broken sandbox, not bad luck. */
const MAX_HELPER_RESTARTS = 20;

/** Creates, starts and connects a hardened container; removes it again if any step fails. */
export async function createDockerSandbox(options: DockerSandboxOptions): Promise<DockerSandbox> {
  const resolved = parseOptions(options);
  const docker = resolved.docker ?? connectDocker();
  const logger = resolved.logger ?? defaultLog;
  const identity = sandboxIdentity(resolved);
  const { container, quota } = await createContainer(docker, resolved, identity, logger);
  const sandbox = new DockerSandbox(docker, container, resolved, identity.labels, logger);
  sandbox.diskQuota = quota;
  await startSandbox(sandbox, container, {
    quota,
    diskCheckMs: resolved.diskCheckMs,
    name: identity.name,
  });
  logger.info(
    {
      runId: resolved.runId,
      container: container.id.slice(0, 12),
      image: resolved.image,
      runtime: resolved.runtime ?? 'default',
      diskQuota: quota,
    },
    'sandbox started',
  );
  return sandbox;
}

/** What a lost sandbox starts again from: the attempt's starting image, then `prepare`. */
export interface RebuildSource {
  image: string;
  /** Brings a fresh container from the image to where the attempt started (never a network). */
  prepare?: (sandbox: DockerSandbox) => Promise<void>;
}

export class DockerSandbox implements Sandbox {
  readonly kind = 'docker' as const;
  readonly workdir = SANDBOX_WORKDIR;
  readonly homeDir = SANDBOX_HOME;
  readonly image: string;
  /** The engine runtime it runs under; undefined: the engine's default. */
  readonly runtime: string | undefined;
  readonly runId: string;
  readonly limits: DockerSandboxLimits;
  /** Whether the engine enforces the disk limit (set by createDockerSandbox). */
  diskQuota = false;
  private rebuildSource: RebuildSource | undefined;
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
    private container: Docker.Container,
    private readonly options: ResolvedDockerSandboxOptions,
    readonly labels: Readonly<Record<string, string>>,
    private readonly log: Logger,
  ) {
    this.fileOpTimeoutMs = options.fileOpTimeoutMs;
    this.execGraceMs = options.execGraceMs;
    this.image = options.image;
    this.runtime = options.runtime;
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

  /** Names the image a lost sandbox is started again from (without it, a loss is final). */
  rebuildFrom(source: RebuildSource): void {
    this.rebuildSource = source;
  }

  /**
   * Replaces a lost container by a new one from the starting image, with no network, the same
   * limits and labels; the caller replays the loop's changes (leaf/sandbox-recovery.ts).
   */
  async rebuild(): Promise<void> {
    const source = this.rebuildSource;
    if (!source) throw new SandboxFailure('no starting image was named to rebuild it from');
    if (this.disposed) throw new SandboxFailure('the sandbox was disposed');
    this.diskGuard?.stop();
    this.helper?.close();
    this.helper = undefined;
    this.helperRestarts = 0;
    await removeContainer(this.container, this.log, this.runId).catch(() => undefined);
    const resolved = { ...this.options, image: source.image, network: 'none' as const };
    const identity = { name: containerName(this.runId), labels: { ...this.labels } };
    const { container, quota } = await createContainer(this.docker, resolved, identity, this.log);
    this.container = container;
    this.diskQuota = quota;
    await startSandbox(this, container, {
      quota,
      diskCheckMs: this.options.diskCheckMs,
      name: identity.name,
    });
    await source.prepare?.(this);
    this.log.warn(
      { runId: this.runId, container: container.id.slice(0, 12), image: source.image },
      'sandbox rebuilt',
    );
  }

  /** After a helper failure: the container gone is a lost sandbox, else undefined. */
  private async lost(cause: unknown): Promise<SandboxLost | undefined> {
    if (this.limitFailure || this.disposed) return undefined;
    const gone = await containerGone(this.container);
    return gone === undefined ? undefined : new SandboxLost(gone, { cause });
  }

  /** The failure to throw for `error`: the limit, a lost container, or a broken sandbox. */
  private async failure(error: unknown): Promise<SandboxFailure> {
    return (await this.lost(error)) ?? this.fatal(error);
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
    const maxOutputBytes = outputCap(options);
    const payload = execPayload(command, options, this.workdir, maxOutputBytes);
    if (options.signal?.aborted) {
      // As if started and killed at once: nothing ran, nothing to say.
      return killedResult(started, maxOutputBytes);
    }
    let helper: ToolHelperChannel;
    try {
      helper = await this.getHelper();
    } catch (error) {
      throw await this.failure(error);
    }
    const rescue: RescueContext = {
      container: this.container,
      log: this.log,
      runId: this.runId,
      graceMs: this.execGraceMs,
      disposed: () => this.disposed,
    };
    const watch = new ExecWatch(helper, this.execGraceMs, options.signal, (pgid) => {
      void rescueOverrun(rescue, helper, pgid, command);
    });
    watch.start(options.timeoutMs);
    try {
      const raw = await helper.request('exec', payload, watch.events);
      return await this.execOutcome(helper, raw, started, maxOutputBytes);
    } catch (error) {
      if (error instanceof PythonError) throw error;
      if (!(error instanceof HelperChannelError)) throw await this.failure(error);
      // The container itself gone is a lost sandbox, for the loop to rebuild.
      const lost = await this.lost(error);
      if (lost) throw lost;
      // The command may have killed the helper (`pkill python3`): a fresh helper keeps the
      // run going, and the command is reported as killed (it is not retried: side effects),
      // to the model as upstream reports a runner that exited.
      const code = await helperExitCode(helper.exec);
      await this.recoverHelper(error, false).catch(async (failed: unknown) => {
        throw await this.failure(failed);
      });
      return {
        ...killedResult(
          started,
          maxOutputBytes,
          'the sandbox tool helper died while this command ran',
        ),
        // A helper whose exit the engine did not record was ended by us: as if killed.
        runnerExit: { code: code ?? 137, output: helper.stderr },
      };
    } finally {
      watch.stop();
    }
  }

  /** The helper's exec reply, checked, with the limits it hit noted and the disk settled. */
  private async execOutcome(
    helper: ToolHelperChannel,
    raw: unknown,
    started: number,
    maxOutputBytes: number,
  ): Promise<DockerExecResult> {
    const wire = this.validate(helper, ExecWireResult, raw);
    const stdout = Buffer.from(wire.stdout, 'base64');
    const stderr = Buffer.from(wire.stderr, 'base64');
    if (stdout.length > maxOutputBytes || stderr.length > maxOutputBytes) {
      throw this.misbehaved(helper, 'tool helper returned more output than the cap');
    }
    let oomKilled = wire.oomKilled;
    if (!wire.countersAvailable && wire.exitCode === -9 && !wire.timedOut && !wire.cancelled) {
      oomKilled = await this.containerOomKilled();
    }
    const notes = limitNotes(oomKilled, wire.pidsLimitHit, this.limits);
    if (notes.length > 0) {
      this.log.warn(
        { runId: this.runId, oomKilled, pidsLimitHit: wire.pidsLimitHit },
        'sandbox limit reached',
      );
    }
    await this.settleDisk();
    return execResult(
      wire,
      { stdout, stderr: withNotes(stderr, notes), oomKilled, notes },
      started,
    );
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
    return copyIntoContainer(this.container, hostDir, target, this.workdir);
  }

  /** Cuts every network: afterwards the container has loopback only. Idempotent. */
  async disconnectNetwork(): Promise<void> {
    await disconnectNetworks(this.docker, this.container);
  }

  /**
   * `docker commit` of the container (a setup snapshot). The image keeps the container's
   * config (user, env, workdir) and labels; `labels` are added over them (pass the ones to
   * override, e.g. `frognano.run`). Returns the image id.
   */
  async commit(tag: string, labels: Record<string, string> = {}): Promise<string> {
    return commitContainer(this.container, tag, labels);
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
      await removeContainer(this.container, this.log, this.runId);
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
        throw await this.failure(error);
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
        if (!(error instanceof HelperChannelError)) throw await this.failure(error);
        const lost = await this.lost(error);
        if (lost) throw lost;
        await this.recoverHelper(error, attempt > 1).catch(async (failed: unknown) => {
          throw await this.failure(failed);
        });
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
}
