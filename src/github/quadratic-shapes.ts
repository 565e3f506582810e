// micromark spends time quadratic in the input on a few shapes, and a 64 KB issue body of one
// of them takes minutes (measured in bench/sanitize-issue-text.bench.ts). Each is bounded here
// by the work it would cause, counted in one pass before parsing, so the clock is never the
// only bound. An over-estimate refuses more, never less: honest issues stay far below.
//   - A setext heading (a line over `===` or `---`) rewrites the event list of everything above
//     it: the work is, per underline, the lines before it.
//   - An emphasis or strikethrough delimiter that may close (`*`, `_`, `~`) searches back
//     through its paragraph for an opener and splices the paragraph's events when it finds one:
//     the work is, per paragraph, closers times the paragraph's length (a table row and a
//     list item count as a paragraph each).
//   - A `]` searches back through its paragraph for a `[` still open: the work is the distance.

/**
 * Setext underlines times the lines above each: 1e6 is at most about 0.6 s of CPU here (990
 * headings in a row, or 49 under 20,000 lines), and ~1,000 headings in a 2,000-line text.
 */
export const MAX_SETEXT_WORK = 1_000_000;

/**
 * Closing delimiters times the characters of their paragraph: 4e7 is at most about 1.2 s of
 * CPU here (the costliest shape per closer, `]*` repeated, in one 9 KB paragraph; `a*` about
 * half that), and ~600 closers in a 64 KB paragraph with no blank line or list item.
 */
export const MAX_DELIMITER_WORK = 40_000_000;

const UNDERLINE = /^[ \t>]*(?:=+|-+)[ \t]*$/;
const CONTAINER_ONLY = /^[ \t>]*$/;
const BULLET = /^ {0,3}[-+*][ \t]+\S/;
/** `|---|:--:|`, which opens a GFM table under its header row. */
const TABLE_DELIMITER_ROW = /^[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+(?:[ \t]*:?-+:?[ \t]*)?$/;

/** Why the parser would take too long on this (normalized) text, or undefined. */
export function quadraticShape(text: string): string | undefined {
  const lines = text.split('\n');
  let setextWork = 0;
  let underlines = 0;
  let delimiterWork = 0;
  let bracketWork = 0;
  let worst = newParagraph();
  let worstBrackets = worst;
  let paragraph = worst;
  /** The indentation of the table being read, if any. */
  let table: number | undefined;
  const endParagraph = () => {
    delimiterWork += paragraph.closers * paragraph.length;
    bracketWork += paragraph.walk;
    if (paragraph.closers * paragraph.length > worst.closers * worst.length) worst = paragraph;
    if (paragraph.walk > worstBrackets.walk) worstBrackets = paragraph;
    paragraph = newParagraph();
  };
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i]!;
    if (i > 0 && UNDERLINE.test(line) && !CONTAINER_ONLY.test(lines[i - 1]!)) {
      underlines += 1;
      setextWork += i;
    }
    // A paragraph never runs across a blank line; a quote's `>` alone ends one too, but
    // counting on only makes the estimate larger.
    if (/^[ \t]*$/.test(line)) {
      endParagraph();
      table = undefined;
      continue;
    }
    // A table's cells are read one by one: each row is its own unit. Only a table that
    // certainly is one counts so (see `opensTable`); its rows start with `|` no less indented
    // than its head (a lazy line is no row); any other line counts on.
    const row = table !== undefined && indent(line) >= table && /^[ \t]*\|/.test(line);
    if (!row) table = undefined;
    // A bullet with text at most three spaces in starts a list item, never a paragraph's line.
    if (row || BULLET.test(line)) endParagraph();
    paragraph.closers += closers(line);
    walkBrackets(paragraph, line);
    paragraph.length += line.length + 1;
    if (row) endParagraph();
    else if (i > 0 && opensTable(lines[i - 2], lines[i - 1]!, line)) {
      endParagraph();
      table = indent(line);
    }
  }
  endParagraph();
  if (setextWork > MAX_SETEXT_WORK) {
    return `the issue text has too many setext headings (a line over \`===\` or \`---\`) to be read in time: ${underlines} across ${lines.length} lines`;
  }
  if (delimiterWork > MAX_DELIMITER_WORK) {
    return `the issue text has too many \`*\`, \`_\` or \`~\` that may close emphasis to be read in time: ${worst.closers} in one paragraph of ${worst.length} characters`;
  }
  if (bracketWork > MAX_DELIMITER_WORK) {
    return `the issue text has too many \`]\` far from any \`[\` to be read in time: ${worstBrackets.ends} in one paragraph of ${worstBrackets.length} characters`;
  }
  return undefined;
}

interface Paragraph {
  /** Delimiter runs that may close, and the characters so far. */
  closers: number;
  length: number;
  /** `[` that a later `]` may still take, as offsets in the paragraph. */
  starts: number[];
  /** The `]` seen, and how far back they search for a `[`, summed. */
  ends: number;
  walk: number;
}

function newParagraph(): Paragraph {
  return { closers: 0, length: 0, starts: [], ends: 0, walk: 0 };
}

/**
 * A `]` searches back through its paragraph for the nearest `[` not yet taken (micromark's label
 * end): the walk is the distance to it, or to the paragraph's start. A `` ` ``, `>` or `)` may
 * end a code span, tag, autolink or destination holding a `[` that is no label start, so the
 * `[` before them are forgotten (the walk only grows).
 */
function walkBrackets(paragraph: Paragraph, line: string): void {
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i];
    if (c === '\\') i += 1;
    else if (c === '[') paragraph.starts.push(paragraph.length + i);
    else if (c === '`' || c === '>' || c === ')') paragraph.starts.length = 0;
    else if (c === ']') {
      const start = paragraph.starts.pop() ?? 0;
      paragraph.ends += 1;
      paragraph.walk += paragraph.length + i - start;
    }
  }
}

/**
 * Whether `delimiter` under `head` opens a GFM table for certain: the head follows a blank line
 * (so it continues no paragraph, lazily or not), both start with `|` at most three spaces in
 * (neither is in a quote, a list marker's line or code), with the same number of cells.
 * Anything else counts as part of the paragraph, which only overestimates.
 */
function opensTable(before: string | undefined, head: string, delimiter: string): boolean {
  if (before !== undefined && !/^[ \t]*$/.test(before)) return false;
  if (!TABLE_DELIMITER_ROW.test(delimiter)) return false;
  if (!/^ {0,3}\|/.test(head) || !/^ {0,3}\|/.test(delimiter)) return false;
  return cells(head) === cells(delimiter) && indent(delimiter) >= indent(head);
}

function cells(row: string): number {
  const pipes = row.trim().replace(/\\./g, '').split('|').length - 1;
  return pipes - (row.trim().endsWith('|') ? 1 : 0);
}

function indent(line: string): number {
  return /^ */.exec(line)![0].length;
}

/** Character classes as micromark's `classifyCharacter`: 1 whitespace, 2 punctuation, 0 other. */
function kind(c: string | undefined): 0 | 1 | 2 {
  if (c === undefined || /\s/u.test(c)) return 1;
  return /[\p{P}\p{S}]/u.test(c) ? 2 : 0;
}

/**
 * Runs of `*`, `_` or `~` in one line that micromark may take as closing delimiters (an upper
 * bound: code spans and other constructs are not told apart).
 */
function closers(line: string): number {
  let count = 0;
  for (let i = 0; i < line.length;) {
    const c = line[i]!;
    if (c !== '*' && c !== '_' && c !== '~') {
      i += 1;
      continue;
    }
    let end = i + 1;
    while (line[end] === c) end += 1;
    const before = kind(line[i - 1]);
    const after = kind(line[end]);
    // After another delimiter, micromark's rules let almost anything close: count it.
    const close = before !== 1;
    const open = after !== 1 && (after !== 2 || before !== 0);
    if (c === '*' && close) count += 1;
    else if (c === '_' && close && (after !== 0 || !open)) count += 1;
    else if (c === '~' && end - i <= 2 && close) count += 1;
    i = end;
  }
  return count;
}
