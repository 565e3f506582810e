// The Sandbox seam: where Leaf's tools act. Implementations live in src/runner
// (LocalSandbox for tests and development, DockerSandbox in production).

export interface ExecOptions {
  /** Absolute working directory inside the sandbox; defaults to `workdir`. */
  cwd?: string;
  stdin?: string | Uint8Array;
  /** After this many milliseconds the whole process group is killed. */
  timeoutMs?: number;
  /** Bytes kept per stream (default 1 MiB); the rest is drained and only counted. */
  maxOutputBytes?: number;
  /** Extra environment variables for this command. */
  env?: Record<string, string>;
  /** Aborting kills the process group, like a timeout. */
  signal?: AbortSignal;
}

export interface ExecResult {
  /** Exit status; a negative signal number when killed by a signal (Python's convention). */
  exitCode: number;
  /** The first `maxOutputBytes` of each stream. */
  stdout: Buffer;
  stderr: Buffer;
  /** Code points (UTF-8 lead bytes) drained beyond the cap, per stream. */
  stdoutDroppedChars: number;
  stderrDroppedChars: number;
  timedOut: boolean;
  durationMs: number;
  /**
   * Notes from the sandbox about this command (e.g. "[frognano sandbox] process limit
   * reached"), already at the end of `stderr`; the tool layer repeats them after a
   * truncated observation so the model always sees them.
   */
  notes?: string[];
  /**
   * The tool runner itself ended while this command ran (killed by the command, OOM): its exit
   * status and what it wrote. The model sees upstream's `Tool runner exited with code N.`
   */
  runnerExit?: { code: number; output: string };
}

/** Which numbered lines a Read shows (Leaf's offset/limit after int()). */
export interface LinesRequest {
  /** 1-based first line; values below 1 mean 1. */
  offset: bigint;
  /** Lines to show; 0 or negative: to the end. */
  limit: bigint;
  /** Code points of the body to return; the rest is only counted. */
  maxChars: number;
}

/** Leaf's Read body (`<n>. <line>` joined by `\n`), computed next to the file. */
export interface LinesRead {
  /** The body's first `maxChars` code points. */
  text: string;
  /** The whole body's length in code points. */
  totalChars: number;
  /** The path with symlinks resolved, for display. */
  realPath: string;
}

export interface FileRead {
  data: Buffer;
  /** The path with symlinks resolved (Python's Path.resolve()), for display. */
  realPath: string;
}

export interface GlobMatch {
  /** The match as Python's glob.glob returns it. */
  path: string;
  /** The match with symlinks resolved, for display. */
  realPath: string;
}

export interface Sandbox {
  readonly kind: 'local' | 'docker';
  /** Repository root inside the sandbox, symlinks resolved (e.g. `/testbed`). */
  readonly workdir: string;
  /** $HOME of the sandbox user, for `~` in tool paths. */
  readonly homeDir: string;
  /** Runs `/bin/bash -lc <command>` in its own process group. Never throws for a failing command. */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** Throws PythonError (e.g. FileNotFoundError) for a failing path. */
  readFile(path: string): Promise<FileRead>;
  /**
   * Leaf's Read of a text file (UTF-8 with replacement, universal newlines, str.splitlines()),
   * streamed where the file is: the host only receives `maxChars` code points. Throws PythonError.
   */
  readLines(path: string, request: LinesRequest): Promise<LinesRead>;
  /**
   * Leaf's Edit after its argument checks: count `oldText`, refuse 0 or (without `replaceAll`)
   * several matches with Leaf's ValueError, else replace and write, where the file is.
   */
  editFile(
    path: string,
    oldText: string,
    newText: string,
    replaceAll: boolean,
  ): Promise<{ count: number; realPath: string }>;
  /** Creates parent directories. Returns the resolved path. Throws PythonError. */
  writeFile(path: string, data: Uint8Array): Promise<{ realPath: string }>;
  /** Python's glob.glob(pattern, recursive=True), keeping files only (is_file follows links). */
  glob(pattern: string): Promise<GlobMatch[]>;
  /**
   * Glob's observation made next to the files: the matches as Leaf displays them (relative to
   * `root` when under it), sorted by code point, the first `limit` of them and the count. A
   * sandbox that has it keeps a huge match list out of the host's memory.
   */
  globShown?(
    pattern: string,
    options: { root: string; limit: number },
  ): Promise<{ shown: string[]; total: number }>;
  /**
   * Replaces a lost sandbox (SandboxLost) with a new one started from the attempt's starting
   * image, with no network; the caller replays what the loop changed. Absent: cannot be rebuilt.
   */
  rebuild?(): Promise<void>;
  /** Idempotent; frees every resource (process, container, temp dir). */
  dispose(): Promise<void>;
}

/**
 * A failure a tool reports to the model as `<type>: <message>` in Python's words,
 * e.g. `FileNotFoundError: [Errno 2] No such file or directory: '/testbed/x.py'`.
 * Tool failures are data: the tool layer turns this into an observation string.
 */
export class PythonError extends Error {
  constructor(
    readonly pythonType: string,
    message: string,
  ) {
    super(message);
    this.name = 'PythonError';
  }

  toObservation(): string {
    return `${this.pythonType}: ${this.message}`;
  }
}

/**
 * The sandbox itself broke (container gone, helper process died): not something the
 * model did. The loop stops with `tool_error`.
 */
export class SandboxFailure extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SandboxFailure';
  }
}

/**
 * The sandbox is gone (its container died or was removed), not merely its tool helper: the loop
 * may rebuild it and replay its changes (leaf-protocol.md §8, item 8).
 */
export class SandboxLost extends SandboxFailure {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SandboxLost';
  }
}
