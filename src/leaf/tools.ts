// Leaf's five tools (leaf-protocol.md §3–4) over the Sandbox seam. Every observation and
// error string is what Leaf's Python tool runner returns for the same arguments; a tool
// never throws for a failure the model caused (only a broken sandbox escapes).
import {
  BASH_OUTPUT_LIMIT,
  DEFAULT_BASH_TIMEOUT_SEC,
  GLOB_RESULT_LIMIT,
  READ_OUTPUT_LIMIT,
} from './protocol.js';
import { type PyDict, type PyValue, pyJsonLoads } from './python-json.js';
import {
  displayPath,
  isAbsolutePath,
  pathlibJoin,
  pathlibNormalize,
  replaceTilde,
  tildeSegment,
} from './python-path.js';
import {
  cpLength,
  cpSlice,
  decodeUtf8,
  encodeUtf8,
  fsencode,
  pyFloat,
  pyFormatFixed1,
  pyInt,
  pyMax,
  pyStr,
  pyTruthy,
  translateNewlines,
  truthy,
} from './python-text.js';
import { type ExecResult, PythonError, type Sandbox, SandboxFailure } from './sandbox.js';
import { shellQuote } from '../shell-quote.js';

/**
 * Bytes kept per Bash stream. Far above the 30000 code points an observation shows, so the
 * visible part is always exact; beyond it only the dropped count can differ from Python
 * (by `\r\n` pairs and invalid bytes in the drained tail).
 */
export const BASH_STREAM_CAP_BYTES = 1024 * 1024;

/** Leaf's `_parse_arguments`: Python's json.loads; anything but a JSON object becomes `{}`. */
export function parseToolArguments(raw: string | null | undefined): PyDict {
  if (!raw) return new Map();
  try {
    const value = pyJsonLoads(raw);
    return value instanceof Map ? value : new Map();
  } catch {
    return new Map();
  }
}

export interface ExecuteToolOptions {
  /** Cancels a running Bash command (its process group is killed). */
  signal?: AbortSignal;
  /**
   * The run's remaining wall-clock budget: a Bash timeout is clamped to it (**Ours**). The
   * observation still names the timeout the model asked for, as Leaf would print it.
   */
  timeLeftMs?: number;
}

/** Runs one tool call and returns its observation. Throws only SandboxFailure. */
export async function executeTool(
  sandbox: Sandbox,
  name: string,
  rawArguments: string | null | undefined,
  options: ExecuteToolOptions = {},
): Promise<string> {
  const args = parseToolArguments(rawArguments);
  try {
    switch (name) {
      case 'Read':
        return await read(sandbox, args);
      case 'Write':
        return await write(sandbox, args);
      case 'Edit':
        return await edit(sandbox, args);
      case 'Glob':
        return await glob(sandbox, args);
      case 'Bash':
        return await bash(sandbox, args, options);
      default:
        return `Unknown tool: ${name}`;
    }
  } catch (error) {
    if (error instanceof SandboxFailure) throw error;
    if (error instanceof PythonError) return error.toObservation();
    if (error instanceof Error) return `${error.name}: ${error.message}`;
    return `Exception: ${String(error)}`;
  }
}

/** `args.get(key) or fallback` with Python truthiness. */
function orElse(args: PyDict, key: string, fallback: PyValue): PyValue {
  const value = args.get(key);
  return pyTruthy(value) ? (value as PyValue) : fallback;
}

/** Leaf's `_path`: the key, else `path`, resolved against the repo root. */
async function toolPath(sandbox: Sandbox, args: PyDict, key: string): Promise<string> {
  const value = orElse(args, key, orElse(args, 'path', null));
  if (!pyTruthy(value)) throw new PythonError('ValueError', `${key} is required`);
  return resolvePath(sandbox, pyStr(value as PyValue));
}

/** Leaf's `_resolve`: expanduser, then relative paths join the repo root. */
async function resolvePath(sandbox: Sandbox, value: string): Promise<string> {
  let path = pathlibNormalize(value);
  const tilde = tildeSegment(path);
  if (tilde !== undefined) path = replaceTilde(path, await homeDirectory(sandbox, tilde));
  return isAbsolutePath(path) ? path : pathlibJoin(sandbox.workdir, path);
}

/** os.path.expanduser of one `~` or `~user` segment (trailing slashes stripped, as Python). */
async function homeDirectory(sandbox: Sandbox, segment: string): Promise<string> {
  let home: string | undefined;
  if (segment === '~') {
    home = sandbox.homeDir;
  } else {
    const user = segment.slice(1);
    if (user.includes('\0')) throw new PythonError('ValueError', 'embedded null character');
    // pwd.getpwnam reads the same NSS database getent does; getent also accepts a
    // numeric uid, which getpwnam does not, hence the name check.
    const result = await sandbox.exec(`getent passwd -- ${shellQuote(user)}`, {
      timeoutMs: 10_000,
    });
    for (const line of result.stdout.toString('utf8').split('\n')) {
      const fields = line.split(':');
      if (fields.length >= 7 && fields[0] === user) home = fields[5];
    }
    if (home === undefined)
      throw new PythonError('RuntimeError', 'Could not determine home directory.');
  }
  return home.replace(/\/+$/, '') || '/';
}

function display(sandbox: Sandbox, realPath: string, joinedPath: string): string {
  return displayPath(realPath, sandbox.workdir, pathlibNormalize(joinedPath));
}

/** Leaf's `_optional_int`: None and "" mean the default, anything else goes through int(). */
function optionalInt(value: PyValue | undefined, fallback: bigint): bigint {
  if (value === undefined || value === null || value === '') return fallback;
  return pyInt(value);
}

async function read(sandbox: Sandbox, args: PyDict): Promise<string> {
  const path = await toolPath(sandbox, args, 'file_path');
  let offset: bigint;
  let limit: bigint;
  try {
    offset = bigMax(1n, optionalInt(args.get('offset'), 1n));
    limit = optionalInt(args.get('limit'), 0n);
  } catch (error) {
    // Leaf reads the file before it converts the arguments: a file error comes first.
    await sandbox.readLines(path, { offset: 1n, limit: 1n, maxChars: 0 });
    throw error;
  }
  // The sandbox numbers the lines next to the file and sends only what can be shown, so a
  // huge file never reaches the host's memory (**Ours**; the text is Leaf's).
  const lines = await sandbox.readLines(path, { offset, limit, maxChars: READ_OUTPUT_LIMIT });
  const visible = `${display(sandbox, lines.realPath, path)}\n${lines.text}`;
  const total = cpLength(visible) - cpLength(lines.text) + lines.totalChars;
  if (total <= READ_OUTPUT_LIMIT) return visible;
  return `${cpSlice(visible, 0, READ_OUTPUT_LIMIT)}\n[truncated ${total - READ_OUTPUT_LIMIT} chars]`;
}

async function write(sandbox: Sandbox, args: PyDict): Promise<string> {
  const path = await toolPath(sandbox, args, 'file_path');
  // `args.get("content", "")`: an explicit null is str(None) == "None".
  const content = args.has('content') ? pyStr(args.get('content') as PyValue) : '';
  // Refused before touching the file (Python would already have truncated it).
  const data = encodeUtf8(content);
  const { realPath } = await sandbox.writeFile(path, data);
  return `Wrote ${display(sandbox, realPath, path)} (${cpLength(content)} bytes).`;
}

async function edit(sandbox: Sandbox, args: PyDict): Promise<string> {
  const path = await toolPath(sandbox, args, 'file_path');
  const oldText = pyStr(orElse(args, 'old_string', ''));
  const newText = pyStr(orElse(args, 'new_string', ''));
  if (!oldText) throw new PythonError('ValueError', 'old_string must be non-empty');
  // Counted and replaced where the file is, so the host never holds the file (**Ours**).
  const { count, realPath } = await sandbox.editFile(
    path,
    oldText,
    newText,
    truthy(args.get('replace_all')),
  );
  return `Edited ${display(sandbox, realPath, path)} (${count} replacement${count === 1 ? '' : 's'}).`;
}

async function glob(sandbox: Sandbox, args: PyDict): Promise<string> {
  const pattern = pyStr(orElse(args, 'pattern', ''));
  if (!pattern) throw new PythonError('ValueError', 'pattern is required');
  const root = await resolvePath(sandbox, pyStr(orElse(args, 'path', '.')));
  if (sandbox.globShown) {
    const { shown, total } = await sandbox.globShown(pathlibJoin(root, pattern), {
      root: sandbox.workdir,
      limit: GLOB_RESULT_LIMIT,
    });
    if (total === 0) return 'No files matched.';
    const more = total <= GLOB_RESULT_LIMIT ? '' : `\n... ${total - GLOB_RESULT_LIMIT} more files`;
    return shown.join('\n') + more;
  }
  const matches = await sandbox.glob(pathlibJoin(root, pattern));
  const shown = matches
    .map((match) => display(sandbox, match.realPath, match.path))
    .sort(compareCodePoints);
  if (shown.length === 0) return 'No files matched.';
  const suffix =
    shown.length <= GLOB_RESULT_LIMIT ? '' : `\n... ${shown.length - GLOB_RESULT_LIMIT} more files`;
  return shown.slice(0, GLOB_RESULT_LIMIT).join('\n') + suffix;
}

/**
 * Python orders strings by code point. JavaScript's default sort compares UTF-16 units, which
 * puts astral characters before U+E000–U+FFFF; a lone surrogate (Python's escape for an
 * undecodable byte in a file name) is a code point of its own.
 */
export function compareCodePoints(a: string, b: string): number {
  let index = 0;
  while (index < a.length && index < b.length) {
    const x = a.codePointAt(index) as number;
    const y = b.codePointAt(index) as number;
    if (x !== y) return x - y;
    index += x > 0xffff ? 2 : 1;
  }
  return a.length - b.length;
}

/** Leaf's `_timeout_seconds`. */
export function bashTimeoutSeconds(args: PyDict): number {
  const timeoutMs = args.get('timeout_ms');
  if (timeoutMs !== undefined && timeoutMs !== null) return pyMax(0.1, pyFloat(timeoutMs) / 1000);
  const raw = args.get('timeout');
  if (raw === undefined || raw === null) return DEFAULT_BASH_TIMEOUT_SEC;
  const value = pyFloat(raw);
  return pyMax(0.1, value > 1000 ? value / 1000 : value);
}

async function bash(sandbox: Sandbox, args: PyDict, options: ExecuteToolOptions): Promise<string> {
  const command = pyStr(orElse(args, 'command', ''));
  if (!command) throw new PythonError('ValueError', 'command is required');
  const timeout = bashTimeoutSeconds(args);
  // Popen encodes argv first: an unencodable surrogate fails before a NUL byte does.
  fsencode(command);
  if (command.includes('\0')) throw new PythonError('ValueError', 'embedded null byte');
  refuseOversizedTimeout(pyMax(0.1, timeout));
  const asked = pyMax(0.1, timeout) * 1000;
  const { signal, timeLeftMs } = options;
  const result = await sandbox.exec(command, {
    // A command never outlives the run: the timeout is cut to the budget left.
    timeoutMs: timeLeftMs === undefined ? asked : Math.min(asked, Math.max(0, timeLeftMs)),
    maxOutputBytes: BASH_STREAM_CAP_BYTES,
    ...(signal ? { signal } : {}),
  });
  if (result.runnerExit) {
    // Upstream's environment turns a runner that exited non-zero into this observation.
    return `Tool runner exited with code ${result.runnerExit.code}.\n${result.runnerExit.output}`;
  }
  if (result.timedOut) {
    // TimeoutExpired carries the raw bytes read so far: decoded, but no newline translation.
    return bashObservation(`Timed out after ${pyFormatFixed1(timeout)}s`, result, (text) => text);
  }
  return bashObservation(`Exit code: ${result.exitCode}`, result, translateNewlines);
}

/**
 * subprocess.run waits with poll(), whose timeout must fit a C int of milliseconds; Python
 * raises OverflowError at the first wait, right after starting the command. We refuse
 * before starting it, with the same message.
 */
function refuseOversizedTimeout(seconds: number): void {
  if (seconds === Number.POSITIVE_INFINITY) {
    throw new PythonError('OverflowError', 'cannot convert float infinity to integer');
  }
  const milliseconds = Math.ceil(seconds * 1000);
  if (milliseconds * 1e6 > 2 ** 63 - 1) {
    throw new PythonError('OverflowError', 'timestamp too large to convert to C _PyTime_t');
  }
  if (milliseconds > 2 ** 31 - 1) throw new PythonError('OverflowError', 'timeout is too large');
}

function bashObservation(
  status: string,
  result: ExecResult,
  finish: (text: string) => string,
): string {
  const observation = leafBashObservation(status, result, finish);
  const notes = result.notes ?? [];
  // The sandbox's notes end stderr; when truncation cut them off, they follow the marker.
  if (notes.length === 0 || observation.endsWith(notes.join('\n') + '\n')) return observation;
  return `${observation}\n${notes.join('\n')}`;
}

function leafBashObservation(
  status: string,
  result: ExecResult,
  finish: (text: string) => string,
): string {
  const stdout = finish(decodeUtf8(result.stdout));
  const stderr = finish(decodeUtf8(result.stderr));
  const head = `${status}\nSTDOUT:\n${stdout}`;
  const full = `${head}\nSTDERR:\n${stderr}`;
  const dropped = result.stdoutDroppedChars + result.stderrDroppedChars;
  if (dropped === 0) {
    const length = cpLength(full);
    if (length <= BASH_OUTPUT_LIMIT) return full;
    return `${cpSlice(full, 0, BASH_OUTPUT_LIMIT)}\n[truncated ${length - BASH_OUTPUT_LIMIT} chars]`;
  }
  // Output was drained: the kept bytes still hold the visible prefix; the dropped count
  // adds the code points that were only counted.
  const total = cpLength(full) + dropped;
  const visible = result.stdoutDroppedChars > 0 ? head : full;
  if (total <= BASH_OUTPUT_LIMIT) return full;
  return `${cpSlice(visible, 0, BASH_OUTPUT_LIMIT)}\n[truncated ${total - BASH_OUTPUT_LIMIT} chars]`;
}

function bigMax(a: bigint, b: bigint): bigint {
  return b > a ? b : a;
}
