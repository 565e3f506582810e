// One exec in a Docker sandbox on the wire: the request the helper gets, and the result the
// agent sees (output, and a note when a container limit killed or refused something).
import { PythonError, type ExecOptions, type ExecResult } from '../leaf/sandbox.js';
import { MiB, type DockerSandboxLimits } from './docker-sandbox-options.js';
import { MAX_TRANSFER_BYTES, type ExecWireResult } from './helper-wire.js';

const DEFAULT_MAX_OUTPUT_BYTES = MiB;
/** Two capped streams must fit in one helper frame. */
const MAX_OUTPUT_BYTES_LIMIT = 32 * MiB;

export interface DockerExecResult extends ExecResult {
  /** The container's memory limit killed a process while this command ran. */
  oomKilled: boolean;
  /** A fork failed at the container's pids limit while this command ran. */
  pidsLimitHit: boolean;
}

/** The most output one stream may return: the caller's cap, never past what a frame holds. */
export function outputCap(options: ExecOptions): number {
  return Math.min(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES, MAX_OUTPUT_BYTES_LIMIT);
}

/** The helper's exec request; stdin past the transport's limit fails as Python would. */
export function execPayload(
  command: string,
  options: ExecOptions,
  workdir: string,
  maxOutputBytes: number,
): Record<string, unknown> {
  const payload: Record<string, unknown> = {
    command,
    cwd: options.cwd ?? workdir,
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
  return payload;
}

/** The lines that tell the agent a container limit, not its command, ended something. */
export function limitNotes(
  oomKilled: boolean,
  pidsLimitHit: boolean,
  limits: DockerSandboxLimits,
): string[] {
  const notes: string[] = [];
  if (oomKilled) {
    notes.push(
      `[frognano sandbox] out of memory: a process was killed at the ${Math.round(limits.memoryBytes / MiB)} MiB memory limit`,
    );
  }
  if (pidsLimitHit) {
    notes.push(
      `[frognano sandbox] process limit reached: fork failed at the limit of ${limits.pidsLimit} processes`,
    );
  }
  return notes;
}

/** stderr with the notes after it, each on its own line. */
export function withNotes(stderr: Buffer, notes: string[]): Buffer {
  if (notes.length === 0) return stderr;
  const sep = stderr.length > 0 && stderr[stderr.length - 1] !== 0x0a ? '\n' : '';
  return Buffer.concat([stderr, Buffer.from(`${sep}${notes.join('\n')}\n`, 'utf8')]);
}

/** The result the agent sees for a command the helper ran to its end. */
export function execResult(
  wire: ExecWireResult,
  output: { stdout: Buffer; stderr: Buffer; oomKilled: boolean; notes: string[] },
  started: number,
): DockerExecResult {
  const { stdout, stderr, oomKilled, notes } = output;
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
}

/** A command that was killed (or never ran): no output but the reason, if there is one. */
export function killedResult(
  started: number,
  maxOutputBytes: number,
  why?: string,
): DockerExecResult {
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
