// The tool helper of a running DockerSandbox: one long-lived process in the container that the
// tools talk to (tool-helper-channel.ts), started on first use, restarted when it dies (a
// command may kill it), and given up on when it keeps dying. A failure is told apart from a lost
// container (the loop rebuilds those) and from the disk limit (the sandbox was stopped).
import type Docker from 'dockerode';
import type { z } from 'zod';
import { PythonError, SandboxFailure, SandboxLost } from '../leaf/sandbox.js';
import type { Logger } from '../log.js';
import { containerGone } from './container-gone.js';
import type { SandboxDiskLimit } from './docker-sandbox-disk.js';
import { SANDBOX_ENV, SANDBOX_USER } from './docker-sandbox-options.js';
import { errorText } from './engine-error-text.js';
import { HelperChannelError, ToolHelperChannel } from './tool-helper-channel.js';

// Delays between helper restart attempts; `undefined` marks the last attempt.
const RESTART_BACKOFF_MS: readonly (number | undefined)[] = [250, 1000, undefined];
/** A helper that keeps dying is a broken sandbox, not bad luck. */
const MAX_HELPER_RESTARTS = 20;

export interface HelperHost {
  /** The sandbox's container now (a rebuilt sandbox has a new one). */
  container: () => Docker.Container;
  image: string;
  workdir: string;
  runId: string;
  log: Logger;
  disposed: () => boolean;
  disk: SandboxDiskLimit;
  /** How long a file operation may wait for the helper's answer. */
  fileOpTimeoutMs: number;
}

export type FileOp = 'read' | 'read_lines' | 'edit' | 'write' | 'glob';

export class SandboxHelper {
  #helper: ToolHelperChannel | undefined;
  #starting: Promise<ToolHelperChannel> | undefined;
  /** Helper restarts so far; past MAX_HELPER_RESTARTS the sandbox counts as broken. */
  #restarts = 0;

  constructor(private readonly host: HelperHost) {}

  /** The helper now, if one runs. */
  get current(): ToolHelperChannel | undefined {
    return this.#helper;
  }

  /** The running helper, started when there is none. */
  async get(): Promise<ToolHelperChannel> {
    const { host } = this;
    if (host.disk.exceeded) throw host.disk.exceeded;
    if (host.disposed()) throw new SandboxFailure('the sandbox was disposed');
    if (this.#helper && !this.#helper.dead) return this.#helper;
    this.#starting ??= ToolHelperChannel.start({
      container: host.container(),
      user: SANDBOX_USER,
      workdir: host.workdir,
      env: SANDBOX_ENV,
      image: host.image,
    }).finally(() => {
      this.#starting = undefined;
    });
    const helper = await this.#starting;
    if (host.disposed()) {
      helper.close();
      throw new SandboxFailure('the sandbox was disposed');
    }
    this.#helper = helper;
    return helper;
  }

  /** Closes the helper; `fresh` also forgets its restarts (a rebuilt container). */
  close(fresh = false): void {
    this.#helper?.close();
    this.#helper = undefined;
    if (fresh) this.#restarts = 0;
  }

  /** Fails whatever waits on the helper (the disk limit stopped the sandbox). */
  fail(error: HelperChannelError): void {
    this.#helper?.fail(error);
  }

  /**
   * A file operation: idempotent, so on a broken helper it is tried once more on a fresh one.
   * Its answer is checked against `schema`.
   */
  async request<T>(op: FileOp, payload: Record<string, unknown>, schema: z.ZodType<T>): Promise<T> {
    const timeoutMs = this.host.fileOpTimeoutMs;
    for (let attempt = 1; ; attempt += 1) {
      let helper: ToolHelperChannel;
      try {
        helper = await this.get();
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
                `tool helper did not answer ${op} within ${timeoutMs} ms`,
              );
              helper.fail(error);
              reject(error);
            }, timeoutMs);
          }),
        ]);
        return this.validate(helper, schema, raw);
      } catch (error) {
        if (error instanceof PythonError) throw error;
        if (!(error instanceof HelperChannelError)) throw await this.failure(error);
        const lost = await this.lost(error);
        if (lost) throw lost;
        await this.recover(error, attempt > 1).catch(async (failed: unknown) => {
          throw await this.failure(failed);
        });
      } finally {
        clearTimeout(timer);
      }
    }
  }

  validate<T>(helper: ToolHelperChannel, schema: z.ZodType<T>, raw: unknown): T {
    const parsed = schema.safeParse(raw);
    if (!parsed.success) throw this.misbehaved(helper, 'tool helper sent a malformed result');
    return parsed.data;
  }

  misbehaved(helper: ToolHelperChannel, message: string): HelperChannelError {
    const error = new HelperChannelError(message);
    helper.fail(error);
    return error;
  }

  /**
   * After a helper failure: restart it, unless this request already had its one restart
   * (`finalAttempt`) or the sandbox keeps breaking; then the sandbox itself has failed.
   */
  async recover(error: HelperChannelError, finalAttempt: boolean): Promise<void> {
    const { host } = this;
    await host.disk.throwIfExceeded();
    if (this.#helper?.dead) this.#helper = undefined;
    host.log.warn(
      { runId: host.runId, err: error.message, restarts: this.#restarts },
      'sandbox tool helper failed',
    );
    if (host.disposed()) throw new SandboxFailure('the sandbox was disposed', { cause: error });
    if (finalAttempt) {
      throw new SandboxFailure(
        `the sandbox tool helper failed again after a restart: ${error.message}`,
        { cause: error },
      );
    }
    if (this.#restarts >= MAX_HELPER_RESTARTS) {
      throw new SandboxFailure(
        `the sandbox tool helper failed ${this.#restarts + 1} times: ${error.message}`,
        { cause: error },
      );
    }
    this.#restarts += 1;
    // Right after an OOM kill the cgroup can still be reclaiming memory and refuse a new
    // exec for a moment; a short back-off tells that apart from a container that is gone.
    for (const delayMs of RESTART_BACKOFF_MS) {
      try {
        await this.get();
        return;
      } catch (restartError) {
        if (host.disposed() || delayMs === undefined) throw this.fatal(restartError);
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  /** After a helper failure: the container gone is a lost sandbox, else undefined. */
  async lost(cause: unknown): Promise<SandboxLost | undefined> {
    if (this.host.disk.exceeded || this.host.disposed()) return undefined;
    const gone = await containerGone(this.host.container());
    return gone === undefined ? undefined : new SandboxLost(gone, { cause });
  }

  /** The failure to throw for `error`: the limit, a lost container, or a broken sandbox. */
  async failure(error: unknown): Promise<SandboxFailure> {
    return (await this.lost(error)) ?? this.fatal(error);
  }

  fatal(error: unknown): SandboxFailure {
    if (this.host.disk.exceeded) return this.host.disk.exceeded;
    if (error instanceof SandboxFailure) return error;
    if (this.host.disposed()) {
      return new SandboxFailure('the sandbox was disposed', { cause: error });
    }
    return new SandboxFailure(`sandbox tool helper unavailable: ${errorText(error)}`, {
      cause: error,
    });
  }
}
