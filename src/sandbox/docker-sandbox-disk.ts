// The disk limit of a running DockerSandbox: the watchdog (disk-guard.ts) measures the
// container's layer, and once it trips, everything in the container is killed at once and every
// later call fails with the reason.
import type Docker from 'dockerode';
import type { Logger } from '../log.js';
import type { DockerSandboxLimits } from './docker-sandbox-options.js';
import { SANDBOX_USER } from './docker-sandbox-options.js';
import { startDiskGuard, type DiskGuard, type SandboxLimitExceeded } from './disk-guard.js';
import { errorText } from './engine-error-text.js';

export interface DiskLimitHost {
  docker: Docker;
  /** The sandbox's container now (a rebuilt sandbox has a new one). */
  container: () => Docker.Container;
  limits: DockerSandboxLimits;
  log: Logger;
  runId: string;
  disposed: () => boolean;
  /** The writer is dead: fail whatever waits on the tool helper with the reason. */
  onStopped: (reason: SandboxLimitExceeded) => void;
}

export class SandboxDiskLimit {
  #guard: DiskGuard | undefined;
  /** Set when the guard stopped the sandbox: every later call fails with it. */
  #exceeded: SandboxLimitExceeded | undefined;
  /** The kill that follows a limit: calls fail only once the writer is dead. */
  #kill: Promise<void> | undefined;

  constructor(private readonly host: DiskLimitHost) {}

  /** Why the guard stopped the sandbox, if it did. */
  get exceeded(): SandboxLimitExceeded | undefined {
    return this.#exceeded;
  }

  /**
   * Starts the watchdog. With an engine quota only the free-space floor is watched: the quota
   * already bounds the layer.
   */
  async start(engineQuota: boolean, intervalMs: number): Promise<void> {
    const { host } = this;
    if (host.disposed()) return;
    this.#guard = await startDiskGuard({
      docker: host.docker,
      container: host.container(),
      limitBytes: engineQuota ? undefined : host.limits.diskBytes,
      floorBytes: host.limits.diskFloorBytes,
      intervalMs,
      execUser: SANDBOX_USER,
      log: host.log,
      runId: host.runId,
      onTrip: (reason) => {
        this.#kill ??= this.#stopForLimit(reason);
      },
    });
    if (host.disposed()) this.#guard.stop();
  }

  stop(): void {
    this.#guard?.stop();
  }

  /**
   * A command can pass the disk limit and end before the guard's next measurement (a fast
   * `dd`, `fallocate`): it fails with the limit all the same, never as if nothing happened.
   */
  async settle(): Promise<void> {
    await this.#guard?.settle();
    await this.throwIfExceeded();
  }

  /** Throws the limit once the kill that follows it is done; nothing when not exceeded. */
  async throwIfExceeded(): Promise<void> {
    if (!this.#exceeded) return;
    await this.#kill;
    throw this.#exceeded;
  }

  /**
   * Kills everything in the container at once (the writer must not get further) and fails
   * whatever is running in it with the reason; the container itself goes on dispose.
   */
  async #stopForLimit(reason: SandboxLimitExceeded): Promise<void> {
    const { host } = this;
    if (host.disposed() || this.#exceeded) return;
    this.#exceeded = reason;
    try {
      await host.container().kill({ signal: 'SIGKILL' });
    } catch (error) {
      host.log.warn({ runId: host.runId, err: errorText(error) }, 'could not kill the sandbox');
    }
    host.onStopped(reason);
  }
}
