// The local sandbox keeps the repository in a temporary directory, but the model was trained on
// (and the Docker sandbox gives it) `/testbed`. This layer shows the model the Docker paths:
// `/testbed/...` in tool paths, glob patterns, working directories and command text is mapped to
// the copy, and the copy's path in results, error messages and command output is shown as
// `/testbed`. It is a translation, not a mount: a path built at run time inside a program the
// model wrote (e.g. `os.path.join("/", "testbed")`) still names a directory that does not exist
// on this machine.
import {
  type ExecOptions,
  type ExecResult,
  type FileRead,
  type GlobMatch,
  type LinesRead,
  type LinesRequest,
  PythonError,
  type Sandbox,
} from '../leaf/sandbox.js';
import { SANDBOX_WORKDIR } from './docker-sandbox.js';

/** `sandbox` as the model sees the Docker sandbox: its repository root at `shownRoot`. */
export function withTestbedPaths(sandbox: Sandbox, shownRoot: string = SANDBOX_WORKDIR): Sandbox {
  const hostRoot = sandbox.workdir;
  if (hostRoot === shownRoot) return sandbox;
  const toHost = (path: string): string =>
    path === shownRoot || path.startsWith(`${shownRoot}/`)
      ? hostRoot + path.slice(shownRoot.length)
      : path;
  const toShown = (text: string): string => text.split(hostRoot).join(shownRoot);
  // `/testbed` as a whole path segment, not `/testbed2` or `x/testbed`.
  const inCommand = new RegExp(`(?<![\\w.~/-])${escapeRegExp(shownRoot)}(?![\\w.-])`, 'g');
  const hostBytes = Buffer.from(hostRoot);
  const shownBytes = Buffer.from(shownRoot);
  const shownError = (error: unknown): unknown =>
    error instanceof PythonError
      ? new PythonError(error.pythonType, toShown(error.message))
      : error;

  return {
    kind: sandbox.kind,
    workdir: shownRoot,
    homeDir: sandbox.homeDir,
    async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
      const result = await sandbox.exec(command.replace(inCommand, hostRoot), {
        ...options,
        ...(options.cwd === undefined ? {} : { cwd: toHost(options.cwd) }),
      });
      return {
        ...result,
        stdout: replaceBytes(result.stdout, hostBytes, shownBytes),
        stderr: replaceBytes(result.stderr, hostBytes, shownBytes),
      };
    },
    async readFile(path: string): Promise<FileRead> {
      try {
        const read = await sandbox.readFile(toHost(path));
        return { ...read, realPath: toShown(read.realPath) };
      } catch (error) {
        throw shownError(error);
      }
    },
    async readLines(path: string, request: LinesRequest): Promise<LinesRead> {
      try {
        const read = await sandbox.readLines(toHost(path), request);
        return { ...read, realPath: toShown(read.realPath) };
      } catch (error) {
        throw shownError(error);
      }
    },
    async editFile(path: string, oldText: string, newText: string, replaceAll: boolean) {
      try {
        const edited = await sandbox.editFile(toHost(path), oldText, newText, replaceAll);
        return { ...edited, realPath: toShown(edited.realPath) };
      } catch (error) {
        throw shownError(error);
      }
    },
    async writeFile(path: string, data: Uint8Array): Promise<{ realPath: string }> {
      try {
        const written = await sandbox.writeFile(toHost(path), data);
        return { realPath: toShown(written.realPath) };
      } catch (error) {
        throw shownError(error);
      }
    },
    async glob(pattern: string): Promise<GlobMatch[]> {
      try {
        const matches = await sandbox.glob(toHost(pattern));
        return matches.map((m) => ({ path: toShown(m.path), realPath: toShown(m.realPath) }));
      } catch (error) {
        throw shownError(error);
      }
    },
    dispose: () => sandbox.dispose(),
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Every occurrence of `from` in `buffer` replaced by `to`, byte for byte (output need not be UTF-8). */
function replaceBytes(buffer: Buffer, from: Buffer, to: Buffer): Buffer {
  let at = buffer.indexOf(from);
  if (at < 0) return buffer;
  const parts: Buffer[] = [];
  let last = 0;
  while (at >= 0) {
    parts.push(buffer.subarray(last, at), to);
    last = at + from.length;
    at = buffer.indexOf(from, last);
  }
  parts.push(buffer.subarray(last));
  return Buffer.concat(parts);
}
