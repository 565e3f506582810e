// The production sandbox: one hardened container per run (dockerode). The repository is
// copied in through the Engine API (never a bind mount); tools talk to one long-lived
// helper process inside the container (tool-helper-channel.ts), so a Read/Edit/Glob is
// one round trip. The container is labelled so that nothing of ours outlives its run.
// DockerSandbox keeps the container; its concerns have files of their own: the tool helper
// and its restarts (docker-sandbox-helper.ts), one command (docker-sandbox-exec.ts), the disk
// limit (docker-sandbox-disk.ts).
import type Docker from 'dockerode';
import type { z } from 'zod';
import { log as defaultLog, type Logger } from '../log.js';
import {
  PythonError,
  SandboxFailure,
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
import { createContainer } from './create-container.js';
import { removeContainer } from './remove-container.js';
import { containerName, parseOptions, sandboxIdentity, startSandbox } from './start-container.js';
import { disconnectNetworks } from './disconnect-networks.js';
import { connectDocker } from './docker-engine.js';
import type { DockerExecResult } from './docker-exec-result.js';
import { SandboxDiskLimit } from './docker-sandbox-disk.js';
import { execInSandbox } from './docker-sandbox-exec.js';
import { SandboxHelper, type FileOp } from './docker-sandbox-helper.js';
import {
  SANDBOX_HOME,
  SANDBOX_WORKDIR,
  type DockerSandboxLimits,
  type DockerSandboxOptions,
  type ResolvedDockerSandboxOptions,
} from './docker-sandbox-options.js';
import type { SandboxLimitExceeded } from './disk-guard.js';
import {
  EditResult,
  GlobResult,
  GlobShownResult,
  LinesResult,
  MAX_TRANSFER_BYTES,
  ReadResult,
  WriteResult,
} from './helper-wire.js';
import { HelperChannelError } from './tool-helper-channel.js';

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
  private readonly execGraceMs: number;
  private readonly helper: SandboxHelper;
  private readonly disk: SandboxDiskLimit;
  private disposing: Promise<void> | undefined;

  constructor(
    private readonly docker: Docker,
    private container: Docker.Container,
    private readonly options: ResolvedDockerSandboxOptions,
    readonly labels: Readonly<Record<string, string>>,
    private readonly log: Logger,
  ) {
    this.execGraceMs = options.execGraceMs;
    this.image = options.image;
    this.runtime = options.runtime;
    this.runId = options.runId;
    this.limits = options.limits;
    const shared = {
      container: () => this.container,
      disposed: () => this.disposed,
      log,
      runId: this.runId,
    };
    this.disk = new SandboxDiskLimit({
      ...shared,
      docker,
      limits: this.limits,
      onStopped: (reason) => this.helper.fail(new HelperChannelError(reason.message)),
    });
    this.helper = new SandboxHelper({
      ...shared,
      image: this.image,
      workdir: this.workdir,
      disk: this.disk,
      fileOpTimeoutMs: options.fileOpTimeoutMs,
    });
  }

  get containerId(): string {
    return this.container.id;
  }

  get disposed(): boolean {
    return this.disposing !== undefined;
  }

  /** Why the disk guard stopped this sandbox, if it did. */
  get limitExceeded(): SandboxLimitExceeded | undefined {
    return this.disk.exceeded;
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
    this.disk.stop();
    this.helper.close(true);
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

  /**
   * Starts the disk watchdog (called once by createDockerSandbox). With an engine quota
   * only the free-space floor is watched: the quota already bounds the layer.
   */
  async guardDisk(engineQuota: boolean, intervalMs: number): Promise<void> {
    await this.disk.start(engineQuota, intervalMs);
  }

  /** Starts the tool helper; called once by createDockerSandbox. */
  async startHelper(): Promise<void> {
    await this.helper.get();
  }

  async exec(command: string, options: ExecOptions = {}): Promise<DockerExecResult> {
    return execInSandbox(
      {
        helper: this.helper,
        disk: this.disk,
        container: this.container,
        workdir: this.workdir,
        limits: this.limits,
        log: this.log,
        runId: this.runId,
        graceMs: this.execGraceMs,
        disposed: () => this.disposed,
        oomKilled: () => this.containerOomKilled(),
      },
      command,
      options,
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
      const helper = this.helper.current;
      if (helper) {
        throw this.helper.fatal(
          this.helper.misbehaved(helper, 'tool helper returned too many lines'),
        );
      }
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
      this.disk.stop();
      this.helper.close();
      await removeContainer(this.container, this.log, this.runId);
    })();
    return this.disposing;
  }

  private fileOp<T>(
    op: FileOp,
    payload: Record<string, unknown>,
    schema: z.ZodType<T>,
  ): Promise<T> {
    return this.helper.request(op, payload, schema);
  }
}
