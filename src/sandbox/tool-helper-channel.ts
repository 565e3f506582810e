// The host end of the in-container tool helper (see sandbox-tool-helper.ts): frames over
// a hijacked `docker exec` stream. Everything the helper sends is hostile input (the agent
// runs as the same uid and could replace or ptrace it): frame sizes are capped and every
// frame is validated; anything odd kills the channel, and the sandbox decides what next.
import { Writable, type Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { z } from 'zod';
import { PythonError } from '../leaf/sandbox.js';
import {
  TOOL_HELPER_HELLO,
  TOOL_HELPER_PROTOCOL_VERSION,
  TOOL_HELPER_SOURCE,
} from './sandbox-tool-helper.js';

/** Largest frame accepted from the helper: a 64 MiB file read, base64, plus JSON. */
export const MAX_HELPER_FRAME_BYTES = 96 * 1024 * 1024;
const STDERR_TAIL_BYTES = 4096;

const Hello = z.object({
  hello: z.literal(TOOL_HELPER_HELLO),
  version: z.literal(TOOL_HELPER_PROTOCOL_VERSION),
  pid: z.number().int().positive(),
  python: z.string().max(64),
});

const RequestId = z.number().int().positive();
const Started = z.object({
  id: RequestId,
  event: z.literal('started'),
  pgid: z.number().int().positive(),
});
const Succeeded = z.object({ id: RequestId, ok: z.literal(true), result: z.unknown() });
const Failed = z.object({
  id: RequestId,
  ok: z.literal(false),
  error: z.object({
    pythonType: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,99}$/),
    message: z.string().max(100_000),
  }),
});
const HelperFrame = z.union([Started, Succeeded, Failed]);
type HelperFrame = z.infer<typeof HelperFrame>;

/** The helper died, hung or broke the protocol. Not the model's doing. */
export class HelperChannelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HelperChannelError';
  }
}

/** python3 is not in the image: the one failure a restart cannot fix. */
export class HelperPythonMissing extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HelperPythonMissing';
  }
}

interface Pending {
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
  onStarted?: (pgid: number) => void;
}

export interface StartHelperOptions {
  container: Docker.Container;
  user: string;
  workdir: string;
  env: string[];
  image: string;
  helloTimeoutMs?: number;
}

export class ToolHelperChannel {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private chunks: Buffer[] = [];
  private buffered = 0;
  private stderrTail = '';
  private helloSeen = false;
  private failure: Error | undefined;
  private onHello: ((pid: number) => void) | undefined;
  private onEarlyEnd: ((error: Error) => void) | undefined;
  pid = 0;

  private constructor(
    private readonly stream: Duplex,
    readonly exec: Docker.Exec,
  ) {}

  /** Starts the helper and waits for its hello. */
  static async start(options: StartHelperOptions): Promise<ToolHelperChannel> {
    const exec = await options.container.exec({
      Cmd: ['python3', '-I', '-S', '-c', TOOL_HELPER_SOURCE, options.workdir],
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      User: options.user,
      WorkingDir: options.workdir,
      Env: options.env,
    });
    const stream = (await exec.start({ hijack: true, stdin: true })) as Duplex;
    const channel = new ToolHelperChannel(stream, exec);
    const helloTimeoutMs = options.helloTimeoutMs ?? 20_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        channel.onHello = (pid) => {
          channel.pid = pid;
          resolve();
        };
        channel.onEarlyEnd = reject;
        timer = setTimeout(
          () =>
            reject(new HelperChannelError(`tool helper did not start within ${helloTimeoutMs} ms`)),
          helloTimeoutMs,
        );
        channel.attach(exec);
      });
    } catch (error) {
      channel.close();
      if (error instanceof HelperChannelError && !channel.helloSeen) {
        const missing = await channel.pythonMissing(options.container);
        if (missing) {
          throw new HelperPythonMissing(
            `image ${options.image} has no python3; the sandbox tool helper needs it; use an image with python3`,
          );
        }
      }
      throw error;
    } finally {
      clearTimeout(timer);
      channel.onHello = undefined;
      channel.onEarlyEnd = undefined;
    }
    return channel;
  }

  get dead(): boolean {
    return this.failure !== undefined;
  }

  /** The last bytes the helper wrote to stderr, for diagnostics. */
  get stderr(): string {
    return this.stderrTail;
  }

  /**
   * Sends one request; resolves with the helper's `result`, rejects with PythonError for
   * an error reply and HelperChannelError when the channel breaks.
   */
  request(
    op: 'read' | 'read_lines' | 'edit' | 'write' | 'glob' | 'exec',
    payload: Record<string, unknown>,
    options: { onStarted?: (pgid: number) => void; onId?: (id: number) => void } = {},
  ): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    options.onId?.(id);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onStarted: options.onStarted });
      this.send({ ...payload, id, op });
    });
  }

  /** Asks the helper to kill the process group of a running exec. */
  cancel(id: number): void {
    if (!this.failure) this.send({ op: 'cancel', target: id });
  }

  /** Breaks the channel: pending requests reject with `error`, the stream is closed. */
  fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    this.onEarlyEnd?.(error);
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
    this.chunks = [];
    this.buffered = 0;
    this.stream.destroy();
  }

  /** Closing stdin makes the helper kill its running commands and exit. */
  close(): void {
    this.fail(new HelperChannelError('tool helper channel closed'));
  }

  private send(message: Record<string, unknown>): void {
    const body = Buffer.from(JSON.stringify(message), 'utf8');
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length, 0);
    this.stream.write(Buffer.concat([header, body]));
  }

  private attach(exec: Docker.Exec): void {
    const stdout = new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        this.onStdout(chunk);
        callback();
      },
    });
    const stderr = new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
        callback();
      },
    });
    exec.modem.demuxStream(this.stream, stdout, stderr);
    const ended = (reason: string) => () =>
      this.fail(
        new HelperChannelError(
          `tool helper ${reason}${this.stderrTail ? `: ${this.stderrTail.trim().split('\n').slice(-3).join(' | ')}` : ''}`,
        ),
      );
    this.stream.on('end', ended('exited'));
    this.stream.on('close', ended('exited'));
    this.stream.on('error', (error: Error) => ended(`stream failed (${error.message})`)());
  }

  private onStdout(chunk: Buffer): void {
    if (this.failure) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (this.buffered >= 4) {
      const head = this.peek(4);
      const length = head.readUInt32BE(0);
      if (length > MAX_HELPER_FRAME_BYTES) {
        this.fail(
          new HelperChannelError(
            `tool helper sent a ${length}-byte frame (limit ${MAX_HELPER_FRAME_BYTES})`,
          ),
        );
        return;
      }
      if (this.buffered < 4 + length) return;
      const frame = this.take(4 + length).subarray(4);
      this.onFrame(frame);
      if (this.failure) return;
    }
  }

  private peek(n: number): Buffer {
    if (this.chunks[0] && this.chunks[0].length >= n) return this.chunks[0].subarray(0, n);
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined];
    return joined.subarray(0, n);
  }

  private take(n: number): Buffer {
    const joined = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const taken = joined.subarray(0, n);
    const rest = joined.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return taken;
  }

  private onFrame(frame: Buffer): void {
    let value: unknown;
    try {
      value = JSON.parse(frame.toString('utf8'));
    } catch {
      this.fail(new HelperChannelError('tool helper sent a frame that is not JSON'));
      return;
    }
    if (!this.helloSeen) {
      const hello = Hello.safeParse(value);
      if (!hello.success) {
        this.fail(new HelperChannelError('tool helper sent no valid hello'));
        return;
      }
      this.helloSeen = true;
      this.onHello?.(hello.data.pid);
      return;
    }
    const parsed = HelperFrame.safeParse(value);
    if (!parsed.success) {
      this.fail(new HelperChannelError('tool helper sent an invalid frame'));
      return;
    }
    this.dispatch(parsed.data);
  }

  private dispatch(frame: HelperFrame): void {
    const pending = this.pending.get(frame.id);
    // A reply to nothing we asked (e.g. after a host-side give-up) carries no meaning.
    if (!pending) return;
    if ('event' in frame) {
      pending.onStarted?.(frame.pgid);
      return;
    }
    this.pending.delete(frame.id);
    if (frame.ok) pending.resolve(frame.result);
    else pending.reject(new PythonError(frame.error.pythonType, frame.error.message));
  }

  /** After an early end: did the exec fail because python3 could not be run? */
  private async pythonMissing(container: Docker.Container): Promise<boolean> {
    if (
      /executable file not found|no such file or directory.*python3|python3: not found/i.test(
        this.stderrTail,
      )
    ) {
      return true;
    }
    for (let attempt = 0; attempt < 10; attempt += 1) {
      try {
        const info = await this.exec.inspect();
        if (!info.Running && info.ExitCode !== null && info.ExitCode !== undefined) {
          if (info.ExitCode === 127) return true;
          // 126 is also what the runtime answers for an exec into a container that is being
          // stopped or removed: only a container still running means python3 is missing.
          if (info.ExitCode !== 126) return false;
          return (await container.inspect()).State.Running;
        }
      } catch {
        return false;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return false;
  }
}
