// File names in a patch's text as `git apply -p1` reads them: the `diff --git` header (either
// side maybe C-quoted), and `---`/`+++`, `rename`/`copy` lines with git's C-style quoting.

/**
 * `a/x b/y`, either side maybe C-quoted. Unquoted names with spaces can only be split
 * when both sides name the same file; otherwise undefined (the other lines tell).
 */
export function headerPaths(rest: string): string[] | undefined {
  if (!rest.includes('"')) {
    const half = (rest.length - 1) / 2;
    if (Number.isInteger(half) && rest[half] === ' ') {
      const [a, b] = [stripComponent(rest.slice(0, half)), stripComponent(rest.slice(half + 1))];
      if (a === b) return [a];
    }
    return undefined;
  }
  const names: string[] = [];
  let s = rest;
  while (s.length > 0) {
    if (s.startsWith('"')) {
      const end = closingQuote(s);
      names.push(unquote(s.slice(0, end + 1)));
      s = s.slice(end + 1).replace(/^ /, '');
    } else {
      // One side unquoted, the other quoted: the unquoted one ends where the quote starts.
      const q = s.indexOf(' "');
      const cut = q >= 0 ? q : s.length;
      names.push(s.slice(0, cut));
      s = s.slice(cut).replace(/^ /, '');
    }
  }
  return names.map(stripComponent);
}

function closingQuote(s: string): number {
  for (let i = 1; i < s.length; i++) {
    if (s[i] === '\\') i++;
    else if (s[i] === '"') return i;
  }
  return s.length - 1;
}

/** `git apply -p1`: drop everything up to the first slash, whatever the prefix was. */
export function stripComponent(name: string): string {
  const slash = name.indexOf('/');
  return slash < 0 ? name : name.slice(slash + 1).replace(/^\/+/, '');
}

/** Git's C-style quoting: `"a/caf\303\251 \"x\".txt"` → bytes → UTF-8. */
export function unquote(name: string): string {
  if (!name.startsWith('"') || !name.endsWith('"') || name.length < 2) return name;
  const body = name.slice(1, -1);
  const bytes: number[] = [];
  const escapes: Record<string, number> = {
    a: 7,
    b: 8,
    t: 9,
    n: 10,
    v: 11,
    f: 12,
    r: 13,
    '"': 34,
    '\\': 92,
  };
  for (let i = 0; i < body.length; i++) {
    const ch = body[i]!;
    if (ch !== '\\') {
      bytes.push(...Buffer.from(ch, 'utf8'));
      continue;
    }
    const next = body[i + 1] ?? '';
    if (/[0-7]/.test(next)) {
      const oct = /^[0-7]{1,3}/.exec(body.slice(i + 1))![0];
      bytes.push(parseInt(oct, 8) & 0xff);
      i += oct.length;
    } else {
      bytes.push(escapes[next] ?? next.charCodeAt(0));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/**
 * The file a `---`/`+++` line names (`text` after the marker), `-p1` applied; undefined for
 * `/dev/null`. An unquoted name ends at a tab (git adds one after names with spaces; a name
 * holding a tab is always quoted).
 */
export function fileLineName(text: string): string | undefined {
  const name = unquote(text.replace(/\t.*$/, ''));
  return name === '/dev/null' ? undefined : stripComponent(name);
}
