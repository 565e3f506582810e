// pathlib (POSIX) string semantics as Leaf uses them: `Path(s)` normalises `//` and `/./`
// but keeps `..`; error messages quote the joined path; displays use the resolved path.

interface ParsedPath {
  root: '' | '/' | '//';
  parts: string[];
}

function parse(path: string): ParsedPath {
  let root: ParsedPath['root'] = '';
  if (path.startsWith('/')) {
    // POSIX leaves exactly two leading slashes implementation-defined; pathlib keeps them.
    root = path.startsWith('//') && !path.startsWith('///') ? '//' : '/';
  }
  return { root, parts: path.split('/').filter((part) => part !== '' && part !== '.') };
}

function format({ root, parts }: ParsedPath): string {
  const text = root + parts.join('/');
  return text === '' ? '.' : text;
}

/** `str(PurePosixPath(path))`. */
export function pathlibNormalize(path: string): string {
  return format(parse(path));
}

/** `str(PurePosixPath(base) / other)`: an absolute `other` replaces `base`. */
export function pathlibJoin(base: string, other: string): string {
  const right = parse(other);
  if (right.root) return format(right);
  const left = parse(base);
  return format({ root: left.root, parts: [...left.parts, ...right.parts] });
}

/** `str(PurePosixPath(path).parent)`. */
export function pathlibParent(path: string): string {
  const parsed = parse(path);
  if (parsed.parts.length === 0) return format(parsed);
  return format({ root: parsed.root, parts: parsed.parts.slice(0, -1) });
}

export function isAbsolutePath(path: string): boolean {
  return path.startsWith('/');
}

/**
 * Leaf's `_display`: the resolved path relative to the (resolved) repo root, `.` for the
 * root itself; a path outside the root shows as `fallback` (`str(path)`, unresolved).
 */
export function displayPath(realPath: string, root: string, fallback: string): string {
  const real = pathlibNormalize(realPath);
  const base = pathlibNormalize(root);
  if (real === base) return '.';
  const prefix = base.endsWith('/') ? base : `${base}/`;
  return real.startsWith(prefix) ? real.slice(prefix.length) : fallback;
}

/** The first segment of a relative path when it asks for a home directory (`~`, `~user`). */
export function tildeSegment(path: string): string | undefined {
  const parsed = parse(path);
  const first = parsed.parts[0];
  return !parsed.root && first !== undefined && first.startsWith('~') ? first : undefined;
}

/** Replaces the leading `~…` segment of `path` by `home` (pathlib's expanduser). */
export function replaceTilde(path: string, home: string): string {
  const rest = parse(path).parts.slice(1);
  return pathlibJoin(home, rest.join('/'));
}

export interface RealpathFileSystem {
  /** true for a symlink, false for anything else, undefined when lstat fails. */
  isSymlink(path: string): Promise<boolean | undefined>;
  readlink(path: string): Promise<string>;
}

/**
 * Python's non-strict `os.path.realpath`: resolves symlinks as far as the path exists,
 * processes `..` after resolving what precedes it, and stops quietly on a symlink loop.
 */
export async function pythonRealpath(path: string, fs: RealpathFileSystem): Promise<string> {
  const seen = new Map<string, string | null>();
  const [resolved] = await joinReal('', path, seen, fs);
  return normpath(resolved.startsWith('/') ? resolved : `/${resolved}`);
}

/** posixpath.normpath of an absolute path: `..` collapses lexically, never above the root. */
function normpath(path: string): string {
  const { root, parts } = parse(path);
  const out: string[] = [];
  for (const part of parts) {
    if (part === '..') out.pop();
    else out.push(part);
  }
  return format({ root: root || '/', parts: out });
}

function splitLast(path: string): [string, string] {
  const cut = path.lastIndexOf('/') + 1;
  let head = path.slice(0, cut);
  if (head && head !== '/'.repeat(head.length)) head = head.replace(/\/+$/, '');
  return [head, path.slice(cut)];
}

function joinTwo(a: string, b: string): string {
  if (b.startsWith('/')) return b;
  if (a === '' || a.endsWith('/')) return a + b;
  return `${a}/${b}`;
}

async function joinReal(
  start: string,
  target: string,
  seen: Map<string, string | null>,
  fs: RealpathFileSystem,
): Promise<[string, boolean]> {
  let path = start;
  let rest = target;
  if (rest.startsWith('/')) {
    rest = rest.slice(1);
    path = '/';
  }
  while (rest) {
    const slash = rest.indexOf('/');
    const name = slash < 0 ? rest : rest.slice(0, slash);
    rest = slash < 0 ? '' : rest.slice(slash + 1);
    if (!name || name === '.') continue;
    if (name === '..') {
      if (path) {
        const [head, tail] = splitLast(path);
        path = tail === '..' ? joinTwo(joinTwo(head, '..'), '..') : head;
      } else {
        path = '..';
      }
      continue;
    }
    const next = joinTwo(path, name);
    if (!(await fs.isSymlink(next))) {
      path = next;
      continue;
    }
    if (seen.has(next)) {
      const cached = seen.get(next);
      if (cached !== null && cached !== undefined) {
        path = cached;
        continue;
      }
      return [joinTwo(next, rest), false];
    }
    seen.set(next, null);
    const [inner, ok] = await joinReal(path, await fs.readlink(next), seen, fs);
    if (!ok) return [joinTwo(inner, rest), false];
    path = inner;
    seen.set(next, inner);
  }
  return [path, true];
}
