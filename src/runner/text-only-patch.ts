// The source change as text without its behaviour: applied to the original tree, every removed
// line stays as it was and every added line comes back as a line comment at its place. A test
// that passes there but fails on the original reads the source instead of running it (it
// finds its line in the file). Only what cannot run differs from the original, so a test that
// runs the changed code fails there exactly as on the original.
import path from 'node:path';
import { headerPaths } from './patch-names.js';

// Languages whose line comment, put before any text, holds it to the end of the line. Left
// out on purpose: those where a marker plus the line's first characters could open a block
// comment or leave the comment (Julia `#=`, Nim `#[`, CoffeeScript `###`, Lua `--[[`, Haskell
// `-->`, PHP `?>`, Groovy's unicode escapes).
const HASH = new Set('py pyi pyw rb sh bash zsh pl pm r ex exs cr yaml yml toml'.split(' '));
const SLASHES = new Set(
  'js mjs cjs jsx ts mts cts tsx go rs java kt kts scala swift cs dart zig sol c h cc cpp cxx hpp hh'.split(
    ' ',
  ),
);
// In these a comment that ends with a backslash goes on over the next line (code, here).
const CONTINUES = new Set('c h cc cpp cxx hpp hh'.split(' '));
// Java and Scala 2 read \u000a as a line end before they see comments.
const UNICODE_ESCAPES = new Set(['java', 'scala']);

/** The line-comment marker of a file, by its extension; undefined when none is known. */
function commentMarker(ext: string): string | undefined {
  if (HASH.has(ext)) return '#';
  if (SLASHES.has(ext)) return '//';
  return undefined;
}

/**
 * The text-only patch, or why the text-only tree cannot be built. `patch` is undefined when
 * every file stays as it was: the text-only tree is then the original one.
 */
export type TextOnly = { patch: string | undefined } | { unbuilt: string };

/**
 * The text-only version of `kept` (host git's full-index diff of the source change, without
 * renames), to apply on the original tree. A file with no known line comment (data, docs), a
 * deleted file or a link stays as it was, which is the original behaviour too. Code whose text
 * cannot be carried as comments (binary, a line a comment would not hold) or a patch this
 * cannot read means no text-only tree at all: the caller then gives the attempt's own tests
 * no credit, since a file left as it was would hide the text a test could be reading.
 */
export function textOnlyPatch(kept: string): TextOnly {
  const split = splitFiles(kept);
  if ('unbuilt' in split) return split;
  const out: string[] = [];
  for (const section of split.sections) {
    const made = textOnlyFile(section);
    if (typeof made === 'string') return { unbuilt: `${section.file}: ${made}` };
    out.push(...made);
  }
  return { patch: out.length === 0 ? undefined : `${out.join('\n')}\n` };
}

/** The file's text-only lines ([] to leave it as it was), or why its text cannot be carried. */
function textOnlyFile({ file, lines }: Section): string[] | string {
  const link = lines.some((l) => /^(?:new file|deleted file|old|new) mode 1[26]0000/.test(l));
  // A deleted file stays as it was; a mode change alone changes no text.
  if (link || lines.some((l) => l.startsWith('deleted file mode'))) return [];
  const ext = path.extname(file).slice(1).toLowerCase();
  const marker = commentMarker(ext);
  if (!marker) return [];
  if (lines.some((l) => /^(?:GIT binary patch|Binary files )/.test(l)))
    return 'a binary change to code';
  const head = lines.filter((l) => !l.startsWith('index '));
  const first = head.findIndex((l) => l.startsWith('@@'));
  if (first < 0) return [];
  let why = 'a hunk header it cannot read';
  const hunks = rewriteHunks(head.slice(first), (text) => {
    const made = commented(text, marker, ext);
    if (made === undefined) why = 'a line a comment would not hold';
    return made;
  });
  if (hunks === undefined) return why;
  // A new file's mode line stays; an old/new mode pair would change what runs.
  return [...head.slice(0, first).filter((l) => !/^(?:old|new) mode /.test(l)), ...hunks];
}

interface Section {
  file: string;
  lines: string[];
}

// Git quotes a side whose name holds `"`, a backslash, a control or non-ASCII byte (C escapes,
// octal UTF-8 bytes); an unquoted side holds no quote.
const QUOTED_HEADER = /^(?:"a\/(?:[^"\\]|\\.)*"|a\/[^"]*) (?:"b\/(?:[^"\\]|\\.)*"|b\/[^"]*)$/;

/** The patch per file, by git's `diff --git` headers (names maybe C-quoted, as git writes them). */
function splitFiles(patch: string): { sections: Section[] } | { unbuilt: string } {
  const sections: Section[] = [];
  const lines = patch.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (const line of lines) {
    if (line.startsWith('diff --git ')) {
      const rest = line.slice('diff --git '.length);
      const names = QUOTED_HEADER.test(rest) || !rest.includes('"') ? headerPaths(rest) : undefined;
      // Without renames both sides name one file.
      if (names === undefined || names.some((n) => n !== names[0]))
        return { unbuilt: `a diff --git header it cannot read: ${JSON.stringify(line)}` };
      sections.push({ file: names[0]!, lines: [line] });
    } else if (sections.length === 0) {
      return { unbuilt: `text before the first diff --git header: ${JSON.stringify(line)}` };
    } else sections.at(-1)!.lines.push(line);
  }
  return { sections };
}

/**
 * Hunks with removed lines made context and added lines made comments, placed before the
 * lines they replace (so that a last line without a newline stays last); headers recounted.
 */
function rewriteHunks(
  lines: string[],
  comment: (text: string) => string | undefined,
): string[] | undefined {
  const out: string[] = [];
  let shift = 0;
  let i = 0;
  while (i < lines.length) {
    const header = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@(.*)$/.exec(lines[i] ?? '');
    if (!header) return undefined;
    const oldStart = Number(header[1]);
    const oldCount = header[2] === undefined ? 1 : Number(header[2]);
    i++;
    const body: string[] = [];
    let added: string[] = [];
    let removed: string[] = [];
    const flush = () => {
      body.push(...added, ...removed);
      added = [];
      removed = [];
    };
    let count = 0;
    for (; i < lines.length && !lines[i]!.startsWith('@@'); i++) {
      const line = lines[i]!;
      if (line.startsWith('+')) {
        const text = comment(line.slice(1));
        if (text === undefined) return undefined;
        added.push(`+${text}`);
        count++;
      } else if (line.startsWith('-')) {
        removed.push(` ${line.slice(1)}`);
      } else if (line.startsWith('\\')) {
        // "No newline at end of file": of the original's last line it stays; a comment line
        // always ends in one.
        if (removed.length > 0 && lines[i - 1]?.startsWith('-')) removed.push(line);
        else if (!lines[i - 1]?.startsWith('+')) body.push(line);
      } else {
        flush();
        body.push(line);
      }
    }
    flush();
    const newCount = oldCount + count;
    const newStart = oldStart === 0 ? (newCount > 0 ? 1 : 0) : oldStart + shift;
    out.push(`@@ -${oldStart},${oldCount} +${newStart},${newCount} @@${header[3] ?? ''}`, ...body);
    shift += count;
  }
  return out;
}

/** The line as a comment, or undefined when a line comment would not hold all of it. */
function commented(text: string, marker: string, ext: string): string | undefined {
  const line = text.endsWith('\r') ? text.slice(0, -1) : text;
  // Line ends a comment would stop at: Python and JavaScript count a lone CR, JavaScript
  // U+2028/U+2029 too.
  if (/[\r\u2028\u2029\u0085]/.test(line)) return undefined;
  // A backslash (or the trigraph ??/) then blanks at the end continues a C comment.
  if (CONTINUES.has(ext) && /(?:\\|\?\?\/)\s*$/.test(line)) return undefined;
  if (UNICODE_ESCAPES.has(ext) && /\\u+000[aAdD]/.test(line)) return undefined;
  return `${marker}${text}`;
}
