// LocalSandbox: the Sandbox seam on the host, for tests and explicit development use only
// (it isolates files, not processes). It works on a temporary copy of the repository,
// never on the user's working copy, and runs every command in its own process group so a
// timeout or dispose() can kill everything the command started.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants as fsConstants, readdirSync, readFileSync } from 'node:fs';
import { constants as osConstants, setPriority, tmpdir } from 'node:os';
import {
  cp,
  lstat,
  mkdir,
  mkdtemp,
  open,
  opendir,
  readlink,
  realpath,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type GlobFileSystem, pythonGlob } from '../leaf/python-glob.js';
import {
  pathlibJoin,
  pathlibParent,
  pythonRealpath,
  type RealpathFileSystem,
} from '../leaf/python-path.js';
import { cpLength, fsencode, fsPath, pyRepr } from '../leaf/python-text.js';
import { z } from 'zod';
import { TOOL_HELPER_SOURCE } from './sandbox-tool-helper.js';
import {
  type ExecOptions,
  type ExecResult,
  type FileRead,
  type GlobMatch,
  type LinesRead,
  type LinesRequest,
  PythonError,
  type Sandbox,
  SandboxFailure,
} from '../leaf/sandbox.js';

export interface LocalSandboxOptions {
  /** The repository to work on; it is copied (with .git) and never modified. */
  sourceDir: string;
  /** Where the temporary directories go (default: the OS temp dir). */
  tempRoot?: string;
  /** Extra environment for every command, on top of the minimal one. */
  env?: Record<string, string>;
}

const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
const SANDBOX_NICENESS = 10;
// setTimeout fires at once for delays above 2^31-1 ms, so long timeouts are re-armed.
const MAX_TIMER_MS = 2 ** 31 - 1;
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** Every command's environment carries this with a per-command value, to find its strays. */
export const LOCAL_EXEC_MARKER = 'FROGNANO_SANDBOX_EXEC';
/** Read and Edit run in a Python process (the Docker tool helper's code): at most this long. */
const FILE_TOOL_TIMEOUT_MS = 120_000;
/** A Read reply holds at most its observation; anything bigger is not the helper talking. */
const MAX_FILE_TOOL_REPLY_BYTES = 8 * 1024 * 1024;

const LinesResult = z.object({
  text: z.string(),
  totalChars: z.number().int().nonnegative(),
  realPath: z.string(),
});
const EditResult = z.object({ count: z.number().int().positive(), realPath: z.string() });
const HelperReply = z.union([
  z.object({ ok: z.literal(true), result: z.unknown() }),
  z.object({
    ok: z.literal(false),
    error: z.object({ pythonType: z.string(), message: z.string() }),
  }),
]);

export async function createLocalSandbox(options: LocalSandboxOptions): Promise<LocalSandbox> {
  const source = await stat(options.sourceDir).catch(() => undefined);
  if (!source?.isDirectory()) throw new Error(`sourceDir is not a directory: ${options.sourceDir}`);
  const root = await mkdtemp(join(options.tempRoot ?? tmpdir(), 'frognano-local-'));
  try {
    const repoDir = join(root, 'repo');
    const homeDir = join(root, 'home');
    await cp(options.sourceDir, repoDir, {
      recursive: true,
      verbatimSymlinks: true,
      // FIFOs, sockets and devices are no part of a repository, and fs.cp refuses them.
      filter: async (path) => {
        const info = await lstat(path);
        return info.isFile() || info.isDirectory() || info.isSymbolicLink();
      },
    });
    await mkdir(homeDir);
    return new LocalSandbox(
      root,
      await realpath(repoDir),
      await realpath(homeDir),
      options.env ?? {},
    );
  } catch (error) {
    await rm(root, { recursive: true, force: true });
    throw error;
  }
}

export class LocalSandbox implements Sandbox {
  readonly kind = 'local' as const;
  /** Process groups that may still have members (leaders' pids). */
  private readonly groups = new Set<number>();
  /** Kill functions of the commands still running. */
  private readonly running = new Map<Promise<ExecResult>, () => void>();
  private disposing: Promise<void> | undefined;
  /** Starts every command's marker value, so dispose() finds all of this sandbox's processes. */
  private readonly markerPrefix = `${randomBytes(6).toString('hex')}-`;

  constructor(
    /** The temporary directory holding the copy and HOME; removed by dispose(). */
    readonly tempDir: string,
    readonly workdir: string,
    readonly homeDir: string,
    private readonly extraEnv: Record<string, string>,
  ) {}

  exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (this.disposing) return Promise.reject(new SandboxFailure('the local sandbox was disposed'));
    try {
      // Popen encodes argv first: an unencodable surrogate fails before a NUL byte does.
      fsencode(command);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    if (command.includes('\0'))
      return Promise.reject(new PythonError('ValueError', 'embedded null byte'));
    let killer: () => void = () => undefined;
    const promise = this.run(command, options, (kill) => (killer = kill));
    this.running.set(promise, () => killer());
    void promise.finally(() => this.running.delete(promise)).catch(() => undefined);
    return promise;
  }

  private run(
    command: string,
    options: ExecOptions,
    exposeKill: (kill: () => void) => void,
  ): Promise<ExecResult> {
    const started = performance.now();
    const cap = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const marker = `${this.markerPrefix}${randomBytes(8).toString('hex')}`;
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? DEFAULT_PATH,
      HOME: this.homeDir,
      LANG: 'C.UTF-8',
      TERM: 'dumb',
      ...this.extraEnv,
      ...options.env,
      [LOCAL_EXEC_MARKER]: marker,
    };
    return new Promise<ExecResult>((resolve, reject) => {
      let child: ChildProcess;
      try {
        child = spawn('/bin/bash', ['-lc', command], {
          cwd: options.cwd ?? this.workdir,
          env,
          detached: true,
          stdio: ['pipe', 'pipe', 'pipe'],
        });
      } catch (error) {
        reject(new SandboxFailure('could not start /bin/bash', { cause: error }));
        return;
      }
      const pid = child.pid;
      if (pid !== undefined) {
        this.groups.add(pid);
        // The agent's commands run on the bot's own CPUs: a lower priority (inherited by
        // everything they start) keeps webhook acknowledgements and other runs responsive.
        try {
          setPriority(pid, SANDBOX_NICENESS);
        } catch {
          // The process may already be gone; its result arrives through the usual events.
        }
      }
      const stdout = new CappedStream(cap);
      const stderr = new CappedStream(cap);
      child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
      child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(options.stdin === undefined ? undefined : Buffer.from(options.stdin));

      let timedOut = false;
      let killed = false;
      let timer: NodeJS.Timeout | undefined;
      let settled = false;

      const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        if (pid !== undefined && !groupAlive(pid)) this.groups.delete(pid);
        resolve({
          exitCode: signal ? -(osConstants.signals[signal] ?? 9) : (code ?? 0),
          stdout: stdout.buffer(),
          stderr: stderr.buffer(),
          stdoutDroppedChars: stdout.droppedChars,
          stderrDroppedChars: stderr.droppedChars,
          timedOut,
          durationMs: performance.now() - started,
        });
      };

      // Like Python's TimeoutExpired: keep what was read until now, kill, wait for bash
      // only (a process that escaped the group may hold the pipes open forever).
      const kill = (): void => {
        if (killed) return;
        killed = true;
        stdout.freeze();
        stderr.freeze();
        if (pid !== undefined) {
          // Found before the group dies and orphans them: descendants in other groups.
          const needle = Buffer.from(`\0${LOCAL_EXEC_MARKER}=${marker}\0`);
          killProcesses(strayProcesses(pid, needle));
          killGroup(pid);
          void sweepUntilGone(pid, needle);
        }
        if (child.exitCode !== null || child.signalCode !== null) {
          child.stdout?.destroy();
          child.stderr?.destroy();
          finish(child.exitCode, child.signalCode);
        }
      };
      const onAbort = (): void => kill();
      exposeKill(kill);

      child.on('error', (error) => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        reject(new SandboxFailure('could not run /bin/bash', { cause: error }));
      });
      child.on('exit', (code, signal) => {
        if (!killed) return;
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish(code, signal);
      });
      // Normal completion waits for the pipes too, as Python's communicate() does.
      child.on('close', (code, signal) => finish(code, signal));

      if (options.signal?.aborted) kill();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      const timeoutMs = options.timeoutMs;
      if (timeoutMs !== undefined && Number.isFinite(timeoutMs)) {
        const deadline = started + Math.max(0, timeoutMs);
        const arm = (): void => {
          const left = deadline - performance.now();
          if (left <= 0) {
            timedOut = true;
            kill();
          } else {
            timer = setTimeout(arm, Math.min(Math.ceil(left), MAX_TIMER_MS));
          }
        };
        arm();
      }
    });
  }

  async readFile(path: string): Promise<FileRead> {
    const target = this.absolute(path);
    // open() encodes the path before it looks for a NUL byte.
    fsencode(path);
    refuseNul(path, 'embedded null byte');
    let data: Buffer;
    try {
      data = await readWhole(target, path);
    } catch (error) {
      throw error instanceof PythonError ? error : pythonOSError(error, path);
    }
    return { data, realPath: await this.realPath(target) };
  }

  async readLines(path: string, request: LinesRequest): Promise<LinesRead> {
    const maxChars = Math.max(0, Math.floor(request.maxChars));
    const result = LinesResult.parse(
      await this.fileTool({
        op: 'read_lines',
        path: this.absolute(path),
        offset: request.offset.toString(),
        limit: request.limit.toString(),
        maxChars,
      }),
    );
    if (cpLength(result.text) > maxChars) throw new SandboxFailure('Read returned too many lines');
    return result;
  }

  async editFile(
    path: string,
    oldText: string,
    newText: string,
    replaceAll: boolean,
  ): Promise<{ count: number; realPath: string }> {
    return EditResult.parse(
      await this.fileTool({
        op: 'edit',
        path: this.absolute(path),
        old: oldText,
        new: newText,
        replaceAll,
      }),
    );
  }

  /**
   * One request to the Docker tool helper's code run on the host (`python3 --once`), so Read
   * and Edit work on the file in another process with Python's own semantics, and this
   * process only receives the bounded observation.
   */
  private fileTool(request: Record<string, unknown>): Promise<unknown> {
    if (this.disposing) return Promise.reject(new SandboxFailure('the local sandbox was disposed'));
    const body = Buffer.from(JSON.stringify({ id: 1, ...request }), 'utf8');
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length, 0);
    return new Promise((resolve, reject) => {
      const child = spawn(
        'python3',
        ['-I', '-S', '-c', TOOL_HELPER_SOURCE, this.workdir, '--once'],
        {
          cwd: this.workdir,
          env: { PATH: process.env.PATH ?? DEFAULT_PATH, HOME: this.homeDir, LANG: 'C.UTF-8' },
          stdio: ['pipe', 'pipe', 'pipe'],
        },
      );
      const chunks: Buffer[] = [];
      let size = 0;
      let stderr = '';
      let failure: Error | undefined;
      const timer = setTimeout(() => {
        failure = new SandboxFailure(
          `the local file tool did not finish within ${FILE_TOOL_TIMEOUT_MS} ms`,
        );
        child.kill('SIGKILL');
      }, FILE_TOOL_TIMEOUT_MS);
      child.stdout.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_FILE_TOOL_REPLY_BYTES) {
          failure ??= new SandboxFailure('the local file tool sent an oversized reply');
          child.kill('SIGKILL');
        } else chunks.push(chunk);
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr = (stderr + chunk.toString('utf8')).slice(-2000);
      });
      child.stdin.on('error', () => undefined);
      child.on('error', (error) => {
        failure ??=
          errorCode(error) === 'ENOENT'
            ? new SandboxFailure(
                'the local sandbox runs Read and Edit with python3; install python3',
                {
                  cause: error,
                },
              )
            : new SandboxFailure('could not start python3 for a file tool', { cause: error });
      });
      child.on('close', () => {
        clearTimeout(timer);
        if (failure) return reject(failure);
        const reply = Buffer.concat(chunks);
        const length = reply.length >= 4 ? reply.readUInt32BE(0) : -1;
        let parsed: z.infer<typeof HelperReply> | undefined;
        if (length >= 0 && reply.length === 4 + length) {
          try {
            parsed = HelperReply.parse(JSON.parse(reply.subarray(4).toString('utf8')));
          } catch {
            parsed = undefined;
          }
        }
        if (!parsed) {
          return reject(
            new SandboxFailure(`the local file tool failed: ${stderr.trim() || 'no reply'}`),
          );
        }
        if (parsed.ok) resolve(parsed.result);
        else reject(new PythonError(parsed.error.pythonType, parsed.error.message));
      });
      child.stdin.end(Buffer.concat([header, body]));
    });
  }

  async writeFile(path: string, data: Uint8Array): Promise<{ realPath: string }> {
    const target = this.absolute(path);
    // pathlib makes the parents before open() looks at the file name, so a bad name still
    // leaves them behind.
    const parent = pathlibParent(target);
    fsencode(parent);
    refuseNul(parent, 'embedded null byte');
    await pythonMkdirParents(parent);
    fsencode(target);
    refuseNul(path, 'embedded null byte');
    try {
      await writeFile(fsPath(target), data);
    } catch (error) {
      throw pythonOSError(error, path);
    }
    return { realPath: await this.realPath(target) };
  }

  async glob(pattern: string): Promise<GlobMatch[]> {
    const matches: GlobMatch[] = [];
    // Matches share their directories: look each prefix up once per call.
    const symlinks = new Map<string, Promise<boolean | undefined>>();
    const cached: RealpathFileSystem = {
      isSymlink: (path) => {
        let known = symlinks.get(path);
        if (!known) {
          known = realpathFileSystem.isSymlink(path);
          symlinks.set(path, known);
        }
        return known;
      },
      readlink: realpathFileSystem.readlink,
    };
    const paths = await pythonGlob(pattern, this.globFileSystem);
    // Batches keep libuv's thread pool busy without flooding it; order is preserved.
    for (let start = 0; start < paths.length; start += 64) {
      const batch = await Promise.all(
        paths.slice(start, start + 64).map(async (path): Promise<GlobMatch | undefined> => {
          const target = this.absolute(path);
          // Path.is_file(): follows symlinks; any error means "not a file".
          const isFile = await stat(target).then(
            (info) => info.isFile(),
            () => false,
          );
          return isFile ? { path, realPath: await pythonRealpath(target, cached) } : undefined;
        }),
      );
      for (const match of batch) if (match) matches.push(match);
    }
    return matches;
  }

  /** Idempotent: kills every process group still alive, then removes the temp dirs. */
  dispose(): Promise<void> {
    this.disposing ??= (async () => {
      for (const kill of this.running.values()) kill();
      for (const pid of this.groups) killGroup(pid);
      this.groups.clear();
      // Whatever a command left running outside its group (a setsid'd server, a daemon).
      await sweepUntilGone(undefined, Buffer.from(`\0${LOCAL_EXEC_MARKER}=${this.markerPrefix}`));
      await Promise.allSettled([...this.running.keys()]);
      await removeTree(this.tempDir);
    })();
    return this.disposing;
  }

  private absolute(path: string): string {
    return path.startsWith('/') ? path : pathlibJoin(this.workdir, path);
  }

  private realPath(path: string): Promise<string> {
    return pythonRealpath(path, realpathFileSystem);
  }

  private readonly globFileSystem = nodeGlobFileSystem((path) => this.absolute(path));
}

/**
 * The file system Python's glob sees, on the host: directory order as the OS lists it
 * (libuv's readdir sorts, opendir does not), symlinks followed for directories.
 */
export function nodeGlobFileSystem(
  absolute: (path: string) => string = (path) => path,
): GlobFileSystem {
  return {
    listdir: async (path, dirsOnly) => {
      // os.scandir raises ValueError here (glob does not catch it); lexists/isdir say False.
      refuseNul(path, 'scandir: embedded null character in path');
      const dir = absolute(path);
      const names: string[] = [];
      try {
        for await (const entry of await opendir(dir)) {
          if (!dirsOnly) {
            names.push(entry.name);
            continue;
          }
          const mayBeDir =
            entry.isDirectory() ||
            entry.isSymbolicLink() ||
            !(
              entry.isFile() ||
              entry.isFIFO() ||
              entry.isSocket() ||
              entry.isBlockDevice() ||
              entry.isCharacterDevice()
            );
          const isDir =
            mayBeDir &&
            (await stat(join(dir, entry.name)).then(
              (info) => info.isDirectory(),
              () => false,
            ));
          if (isDir) names.push(entry.name);
        }
      } catch {
        // Python's _iterdir swallows OSError, keeping the names listed so far.
      }
      return names;
    },
    lexists: (path) =>
      path.includes('\0')
        ? Promise.resolve(false)
        : lstat(absolute(path)).then(
            () => true,
            () => false,
          ),
    isdir: (path) =>
      path.includes('\0')
        ? Promise.resolve(false)
        : stat(absolute(path)).then(
            (info) => info.isDirectory(),
            () => false,
          ),
  };
}

// Reading a device such as /dev/zero would grow without end (Python dies of MemoryError).
const MAX_SPECIAL_FILE_BYTES = 64 * 1024 * 1024;

/**
 * open() + read() as Python's read_text does them, but safe for the host: a directory is
 * IsADirectoryError (Python checks after open), a FIFO without a writer reads as empty
 * instead of blocking a thread forever, and an endless device stops with MemoryError.
 */
async function readWhole(target: string, shownPath: string): Promise<Buffer> {
  const handle = await open(fsPath(target), fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  try {
    const info = await handle.stat();
    if (info.isDirectory()) {
      throw pythonOSError(Object.assign(new Error('EISDIR'), { code: 'EISDIR' }), shownPath);
    }
    if (info.isFile()) return await handle.readFile();
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(64 * 1024);
      let bytesRead: number;
      try {
        ({ bytesRead } = await handle.read(chunk, 0, chunk.length, null));
      } catch (error) {
        if (errorCode(error) === 'EAGAIN') break;
        throw error;
      }
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > MAX_SPECIAL_FILE_BYTES) throw new PythonError('MemoryError', '');
    }
    return Buffer.concat(chunks, total);
  } finally {
    await handle.close();
  }
}

/** Bytes kept up to a cap; beyond it only counted, as code points (UTF-8 lead bytes). */
class CappedStream {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private frozen = false;
  droppedChars = 0;

  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    if (this.frozen) return;
    const room = Math.max(0, this.cap - this.kept);
    if (room > 0) {
      const taken = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.chunks.push(taken);
      this.kept += taken.length;
    }
    for (let i = room; i < chunk.length; i++) {
      if (((chunk[i] as number) & 0xc0) !== 0x80) this.droppedChars++;
    }
  }

  freeze(): void {
    this.frozen = true;
  }

  buffer(): Buffer {
    return Buffer.concat(this.chunks, this.kept);
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * After a timeout or abort, what left the command's process group (setsid, a daemon, an
 * escaped fork bomb) is killed too: its descendants by parent pid and every process that still
 * carries its environment marker. Swept until none is left, as a fork bomb may still be
 * forking (bounded). Linux only (/proc); elsewhere the process group is all that is killed.
 */
async function sweepUntilGone(root: number | undefined, needle: Buffer): Promise<void> {
  for (let round = 0; round < 100; round++) {
    if (killProcesses(strayProcesses(root, needle)) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function killProcesses(pids: number[]): number {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already, or not ours.
    }
  }
  return pids.length;
}

/** Descendants of `root` and processes whose environment holds `needle` (e.g. `\0NAME=value`). */
function strayProcesses(root: number | undefined, needle: Buffer): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const parents = new Map<number, number>();
  const victims = new Set<number>();
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z' || fields[0] === 'X') continue;
      parents.set(pid, Number(fields[1]));
      // The marker sits between NULs; a leading NUL is added so the first entry matches too.
      const environ = Buffer.concat([
        Buffer.from([0]),
        readFileSync(`/proc/${name}/environ`),
        Buffer.from([0]),
      ]);
      if (environ.includes(needle)) victims.add(pid);
    } catch {
      // Gone, or another user's process (its environ is not readable): not ours.
    }
  }
  if (root === undefined) return [...victims];
  const children = new Map<number, number[]>();
  for (const [pid, parent] of parents) {
    const list = children.get(parent);
    if (list) list.push(pid);
    else children.set(parent, [pid]);
  }
  const seen = new Set([root]);
  const stack = [root];
  while (stack.length > 0) {
    for (const child of children.get(stack.pop() as number) ?? []) {
      if (seen.has(child)) continue;
      seen.add(child);
      victims.add(child);
      stack.push(child);
    }
  }
  victims.delete(process.pid);
  return [...victims];
}

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

function refuseNul(path: string, message: string): void {
  if (path.includes('\0')) throw new PythonError('ValueError', message);
}

const realpathFileSystem: RealpathFileSystem = {
  isSymlink: (path) =>
    lstat(fsPath(path)).then(
      (info) => info.isSymbolicLink(),
      () => undefined,
    ),
  readlink: (path) => readlink(fsPath(path)),
};

/** pathlib's `mkdir(parents=True, exist_ok=True)`, with its errors and their paths. */
async function pythonMkdirParents(path: string): Promise<void> {
  await pythonMkdir(path, true);
}

async function pythonMkdir(path: string, parents: boolean): Promise<void> {
  try {
    await mkdir(fsPath(path), 0o777);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') {
      const parent = pathlibParent(path);
      if (!parents || parent === path) throw pythonOSError(error, path);
      await pythonMkdir(parent, true);
      await pythonMkdir(path, false);
      return;
    }
    const isDir = await stat(fsPath(path)).then(
      (info) => info.isDirectory(),
      () => false,
    );
    // exist_ok=True: any failure on an existing directory is fine, as in pathlib.
    if (!isDir) throw pythonOSError(error, path);
  }
}

async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true });
  } catch {
    // A command may have made directories read-only; give the owner write access back.
    spawnSync('chmod', ['-R', 'u+rwX', path], { stdio: 'ignore' });
    await rm(path, { recursive: true, force: true });
  }
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

// glibc's strerror() for the errors file operations produce.
const STRERROR: Record<string, string> = {
  EPERM: 'Operation not permitted',
  ENOENT: 'No such file or directory',
  EIO: 'Input/output error',
  ENXIO: 'No such device or address',
  EBADF: 'Bad file descriptor',
  EAGAIN: 'Resource temporarily unavailable',
  ENOMEM: 'Cannot allocate memory',
  EACCES: 'Permission denied',
  EBUSY: 'Device or resource busy',
  EEXIST: 'File exists',
  EXDEV: 'Invalid cross-device link',
  ENODEV: 'No such device',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  EINVAL: 'Invalid argument',
  ENFILE: 'Too many open files in system',
  EMFILE: 'Too many open files',
  ETXTBSY: 'Text file busy',
  EFBIG: 'File too large',
  ENOSPC: 'No space left on device',
  ESPIPE: 'Illegal seek',
  EROFS: 'Read-only file system',
  EMLINK: 'Too many links',
  ENAMETOOLONG: 'File name too long',
  ENOTEMPTY: 'Directory not empty',
  ELOOP: 'Too many levels of symbolic links',
  EDQUOT: 'Disk quota exceeded',
  EOVERFLOW: 'Value too large for defined data type',
};

// Python raises these OSError subclasses for these errno values (PEP 3151).
const OS_ERROR_TYPES: Record<string, string> = {
  EAGAIN: 'BlockingIOError',
  EALREADY: 'BlockingIOError',
  EINPROGRESS: 'BlockingIOError',
  ECHILD: 'ChildProcessError',
  EPIPE: 'BrokenPipeError',
  ESHUTDOWN: 'BrokenPipeError',
  ECONNABORTED: 'ConnectionAbortedError',
  ECONNREFUSED: 'ConnectionRefusedError',
  ECONNRESET: 'ConnectionResetError',
  EEXIST: 'FileExistsError',
  ENOENT: 'FileNotFoundError',
  EISDIR: 'IsADirectoryError',
  ENOTDIR: 'NotADirectoryError',
  EINTR: 'InterruptedError',
  EACCES: 'PermissionError',
  EPERM: 'PermissionError',
  ESRCH: 'ProcessLookupError',
  ETIMEDOUT: 'TimeoutError',
};

/** The OSError Python raises for a failed call on `path`: `[Errno N] strerror: 'path'`. */
export function pythonOSError(error: unknown, path: string): PythonError {
  const code = errorCode(error);
  const errno = code ? (osConstants.errno as Record<string, number | undefined>)[code] : undefined;
  if (code === undefined || errno === undefined) {
    return new PythonError('OSError', error instanceof Error ? error.message : String(error));
  }
  const text = STRERROR[code] ?? code;
  return new PythonError(
    OS_ERROR_TYPES[code] ?? 'OSError',
    `[Errno ${errno}] ${text}: ${pyRepr(path)}`,
  );
}
