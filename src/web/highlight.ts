// A minimal syntax highlighter for diff lines: comments, strings, numbers and keywords of a few
// language families, one line at a time (no state across lines). It emits only <span class>
// around text it escaped itself. Secrets are redacted on the whole line before it is split, so a
// secret cannot slip through in pieces.
import { redactSecrets } from '../redact.js';
import { escapeHtml } from './html.js';

type Family = 'hash' | 'slash';

const FAMILY_BY_EXT: Record<string, Family> = {
  py: 'hash',
  pyi: 'hash',
  sh: 'hash',
  bash: 'hash',
  rb: 'hash',
  pl: 'hash',
  r: 'hash',
  yml: 'hash',
  yaml: 'hash',
  toml: 'hash',
  cfg: 'hash',
  ini: 'hash',
  js: 'slash',
  mjs: 'slash',
  cjs: 'slash',
  jsx: 'slash',
  ts: 'slash',
  tsx: 'slash',
  mts: 'slash',
  go: 'slash',
  rs: 'slash',
  java: 'slash',
  kt: 'slash',
  scala: 'slash',
  swift: 'slash',
  c: 'slash',
  h: 'slash',
  cc: 'slash',
  cpp: 'slash',
  hpp: 'slash',
  cs: 'slash',
  php: 'slash',
};

const KEYWORDS = new Set(
  (
    'def class return if elif else for while in not and or is None True False import from as with ' +
    'try except finally raise yield lambda pass break continue global nonlocal async await del assert ' +
    'function const let var new this typeof instanceof export default extends implements interface ' +
    'type enum public private protected static void null undefined true false switch case do catch ' +
    'throw package func go defer chan map struct fn impl pub use mod match mut self Self trait where ' +
    'then fi esac done local echo'
  ).split(' '),
);

const TOKEN = {
  hash: /(#.*$)|("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)|(\b\d[\w.]*)|([A-Za-z_$][\w$]*)|(\s+|[^\s\w"'#$]+|.)/g,
  slash:
    /(\/\/.*$|\/\*.*?(?:\*\/|$))|("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`(?:[^`\\]|\\.)*`?)|(\b\d[\w.]*)|([A-Za-z_$][\w$]*)|(\s+|[^\s\w"'`/$]+|.)/g,
};

export function languageOf(fileName: string): Family | undefined {
  const ext = /\.([A-Za-z0-9]+)$/.exec(fileName)?.[1]?.toLowerCase();
  return ext ? FAMILY_BY_EXT[ext] : undefined;
}

/** Escaped HTML of one line of code, with token spans when the language is known. */
export function highlightLine(line: string, family: Family | undefined): string {
  const clean = redactSecrets(line);
  if (!family) return escapeHtml(clean);
  let out = '';
  for (const m of clean.matchAll(TOKEN[family])) {
    const [token, comment, string, number, word] = m;
    const cls = comment
      ? 'tk-c'
      : string
        ? 'tk-s'
        : number
          ? 'tk-n'
          : word && KEYWORDS.has(word)
            ? 'tk-k'
            : undefined;
    out += cls ? `<span class="${cls}">${escapeHtml(token)}</span>` : escapeHtml(token);
  }
  return out;
}
