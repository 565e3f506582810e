// LocalSandbox: the Sandbox seam on the host, for tests and explicit development use only
// (it isolates files, not processes). It works on a temporary copy of the repository,
// never on the user's working copy, and runs every command in its own process group so a
// timeout or dispose() can kill everything the command started (local-exec.ts).
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { cp, lstat, mkdir, mkdtemp, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pythonGlob } from '../leaf/python-glob.js';
import {
  pathlibJoin,
  pathlibParent,
  pythonRealpath,
  type RealpathFileSystem,
} from '../leaf/python-path.js';
import { cpLength, fsencode, fsPath } from '../leaf/python-text.js';
import { z } from 'zod';
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
import { DEFAULT_PATH, LOCAL_EXEC_MARKER, runLocalCommand } from './local-exec.js';
import { runFileTool } from './local-file-tool.js';
import {
  pythonMkdirParents,
  readWhole,
  realpathFileSystem,
  refuseNul,
  removeTree,
} from './local-files.js';
import { killGroup, sweepUntilGone } from './local-processes.js';
import { nodeGlobFileSystem } from './node-glob-file-system.js';
import { pythonOSError } from './python-os-error.js';

export { LOCAL_EXEC_MARKER } from './local-exec.js';
export { nodeGlobFileSystem } from './node-glob-file-system.js';
export { pythonOSError } from './python-os-error.js';

export interface LocalSandboxOptions {
  /** The repository to work on; it is copied (with .git) and never modified. */
  sourceDir: string;
  /** Where the temporary directories go (default: the OS temp dir). */
  tempRoot?: string;
  /** Extra environment for every command, on top of the minimal one. */
  env?: Record<string, string>;
}

const LinesResult = z.object({
  text: z.string(),
  totalChars: z.number().int().nonnegative(),
  realPath: z.string(),
});
const EditResult = z.object({ count: z.number().int().positive(), realPath: z.string() });

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
    const cwd = options.cwd ?? this.workdir;
    const groups = this.groups;
    return runLocalCommand({ command, options, cwd, env, marker, started, groups }, exposeKill);
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

  /** Read and Edit with Python's own semantics, in another process (local-file-tool.ts). */
  private fileTool(request: Record<string, unknown>): Promise<unknown> {
    if (this.disposing) return Promise.reject(new SandboxFailure('the local sandbox was disposed'));
    return runFileTool(request, this);
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
