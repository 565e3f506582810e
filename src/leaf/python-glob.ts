// The semantics of Python 3's `glob.glob(pattern, recursive=True)` (what Leaf's Glob tool
// runs), over an injectable file system so it can be tested and reused by any sandbox.
// Rules reproduced: `**` as a whole segment spans zero or more directories; `*`, `?` and
// classes never match a leading `.` unless the pattern segment starts with `.`; `**` does
// not descend into hidden directories; magic-free segments are checked with lexists;
// symlinks are followed; results come in directory order, not sorted.

export interface GlobFileSystem {
  /** Names in a directory in the order the OS lists them; `[]` when it cannot be listed. */
  listdir(path: string, dirsOnly: boolean): Promise<string[]>;
  /** os.path.lexists: true for a broken symlink too. */
  lexists(path: string): Promise<boolean>;
  /** os.path.isdir: follows symlinks. */
  isdir(path: string): Promise<boolean>;
}

const MAGIC = /[*?[]/;

export function hasMagic(pattern: string): boolean {
  return MAGIC.test(pattern);
}

/** Python's `glob.glob(pattern, recursive=True)`. */
export async function pythonGlob(pattern: string, fs: GlobFileSystem): Promise<string[]> {
  const results: string[] = [];
  for await (const path of iglob(pattern, false, fs)) results.push(path);
  // A relative pattern starting with `**` yields the current directory as '' first; Python drops it.
  if ((pattern === '' || pattern.startsWith('**')) && results[0] === '') results.shift();
  return results;
}

async function* iglob(
  pathname: string,
  dirsOnly: boolean,
  fs: GlobFileSystem,
): AsyncGenerator<string> {
  const [dirname, basename] = splitPath(pathname);
  if (!hasMagic(pathname)) {
    if (basename ? await fs.lexists(pathname) : await fs.isdir(dirname)) yield pathname;
    return;
  }
  if (!dirname) {
    yield* globInDir(basename, '', basename, dirsOnly, fs);
    return;
  }
  const dirs: AsyncIterable<string> | string[] =
    dirname !== pathname && hasMagic(dirname) ? iglob(dirname, true, fs) : [dirname];
  for await (const dir of dirs) {
    for await (const name of globInDir(basename, dir, basename, dirsOnly, fs)) {
      yield joinPath(dir, name);
    }
  }
}

async function* globInDir(
  segment: string,
  dir: string,
  pattern: string,
  dirsOnly: boolean,
  fs: GlobFileSystem,
): AsyncGenerator<string> {
  if (segment === '**') {
    // Zero directories first (the directory itself), then everything below, depth first.
    yield '';
    yield* walk(dir, dirsOnly, fs);
    return;
  }
  if (hasMagic(pattern)) {
    const regex = translate(pattern);
    const hiddenAllowed = pattern.startsWith('.');
    for (const name of await fs.listdir(dir || '.', dirsOnly)) {
      if (!hiddenAllowed && name.startsWith('.')) continue;
      if (regex.test(name)) yield name;
    }
    return;
  }
  if (pattern) {
    if (await fs.lexists(joinPath(dir, pattern))) yield pattern;
  } else if (await fs.isdir(dir)) {
    // A pattern ending in '/' matches directories only.
    yield pattern;
  }
}

async function* walk(dir: string, dirsOnly: boolean, fs: GlobFileSystem): AsyncGenerator<string> {
  const names = await fs.listdir(dir || '.', dirsOnly);
  for (const name of names) {
    if (name.startsWith('.')) continue;
    yield name;
    const path = dir ? joinPath(dir, name) : name;
    for await (const below of walk(path, dirsOnly, fs)) yield joinPath(name, below);
  }
}

/** os.path.split: the head keeps a root of slashes but loses trailing ones. */
export function splitPath(path: string): [string, string] {
  const cut = path.lastIndexOf('/') + 1;
  let head = path.slice(0, cut);
  const tail = path.slice(cut);
  if (head && head !== '/'.repeat(head.length)) head = head.replace(/\/+$/, '');
  return [head, tail];
}

/** os.path.join of two parts. */
export function joinPath(a: string, b: string): string {
  if (b.startsWith('/')) return b;
  if (a === '' || a.endsWith('/')) return a + b;
  return `${a}/${b}`;
}

/** fnmatch.translate for one name: `*`, `?`, `[...]`/`[!...]`, everything else literal. */
export function translate(pattern: string): RegExp {
  let out = '';
  let i = 0;
  const n = pattern.length;
  while (i < n) {
    const ch = pattern[i] as string;
    i++;
    if (ch === '*') {
      // Consecutive stars mean the same as one.
      if (!out.endsWith('.*')) out += '.*';
    } else if (ch === '?') {
      out += '.';
    } else if (ch === '[') {
      let j = i;
      if (j < n && pattern[j] === '!') j++;
      if (j < n && pattern[j] === ']') j++;
      while (j < n && pattern[j] !== ']') j++;
      if (j >= n) {
        out += '\\[';
        continue;
      }
      out += classToRegex(pattern.slice(i, j));
      i = j + 1;
    } else {
      out += escapeRegex(ch);
    }
  }
  return new RegExp(`^(?:${out})$`, 'su');
}

/** The inside of a `[...]` (without brackets) as a regex class, ranges as Python reads them. */
function classToRegex(body: string): string {
  let negate = false;
  let rest = body;
  if (rest.startsWith('!')) {
    negate = true;
    rest = rest.slice(1);
  }
  // Items are single characters or ranges a-b; a ']' first and a '-' first or last are literal.
  const chars = [...rest];
  const items: Array<[number, number]> = [];
  let k = 0;
  while (k < chars.length) {
    const first = chars[k] as string;
    if (k + 2 < chars.length && chars[k + 1] === '-') {
      const last = chars[k + 2] as string;
      items.push([first.codePointAt(0) as number, last.codePointAt(0) as number]);
      k += 3;
    } else {
      const codePoint = first.codePointAt(0) as number;
      items.push([codePoint, codePoint]);
      k += 1;
    }
  }
  // Python drops empty (reversed) ranges; a class left empty matches nothing.
  const ranges = items.filter(([low, high]) => low <= high);
  if (ranges.length === 0) return negate ? '.' : '(?!)';
  const inner = ranges
    .map(([low, high]) =>
      low === high ? escapeClassChar(low) : `${escapeClassChar(low)}-${escapeClassChar(high)}`,
    )
    .join('');
  return `[${negate ? '^' : ''}${inner}]`;
}

function escapeClassChar(codePoint: number): string {
  return `\\u{${codePoint.toString(16)}}`;
}

function escapeRegex(ch: string): string {
  return ch.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}
