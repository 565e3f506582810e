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
  /** Creates parent directories. Returns the resolved path. Throws PythonError. */
  writeFile(path: string, data: Uint8Array): Promise<{ realPath: string }>;
  /** Python's glob.glob(pattern, recursive=True), keeping files only (is_file follows links). */
  glob(pattern: string): Promise<GlobMatch[]>;
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
