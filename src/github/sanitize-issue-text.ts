// Issue text is data written by anyone who can open an issue. Before it reaches the model's
// prompt, everything a maintainer reading the rendered issue would NOT see is removed, so the
// model cannot be steered by instructions that no human reviewed. The text is parsed as GitHub
// parses it (CommonMark + GFM, micromark), and the source is kept verbatim except for:
//   - invisible code points: zero-width characters, bidirectional controls (Trojan Source),
//     Unicode tag characters (ASCII smuggling), variation selectors, soft hyphens, other format
//     and control characters except newline and tab (removed everywhere, code included), and
//     character references that render as one of them (outside code);
//   - link reference definitions (`[//]: # (hidden)`, a popular comment trick), wherever the
//     parser finds one: inside `>` quotes and list items, with the title on the next line;
//   - raw HTML, read as a browser reads it across the whole document (parse5's tokenizer, in
//     raw-html-reader.ts): comments (unterminated ones run to the end), bogus comments (`<!x>`,
//     `<?x>`), elements that do not render or
//     render hidden (script/style/template/noscript/iframe/object/embed/svg/math, `hidden`,
//     `aria-hidden="true"`, hiding styles) with everything inside them, Markdown and code
//     included; the tags themselves go (attributes, titles and alt texts are tooltips at best)
//     and the text between them stays, because it is visible;
//   - images keep no alt or title text (it shows only when the image fails): `[image]`;
//   - link titles (tooltips);
//   - `%%` comment and directive lines of mermaid diagrams (GitHub draws the diagram; they
//     never show);
//   - math that shows nothing: `\phantom{…}` and its kin, and the hover-only second argument of
//     `\texttip`/`\mathtip`, outside code.
// `<details>` is NOT hidden content: its summary is visible and one click shows the body, so its
// text is kept (the tags go). Code spans and fenced code render literally, so HTML inside them is
// kept verbatim. Text CommonMark shows literally stays, even when it looks like markup (`<! x >`,
// or a `[x]: y` line continuing a paragraph, which is not a definition).
// The result is only ever placed in the prompt as data; it never reaches a shell.
import type { Nodes, Parent } from 'mdast';
import { fromMarkdown } from 'mdast-util-from-markdown';
import { gfmFromMarkdown } from 'mdast-util-gfm';
import { gfm } from 'micromark-extension-gfm';
import { quadraticShape } from './quadratic-shapes.js';
import { createRawHtmlReader, type RawHtmlReader } from './raw-html-reader.js';

const INVISIBLE =
  // C0 controls except \t \n, DEL, C1 controls
  '\\u0000-\\u0008\\u000B-\\u001F\\u007F-\\u009F' +
  // soft hyphen, combining grapheme joiner, Arabic letter mark, Hangul fillers, Mongolian vowel separator
  '\\u00AD\\u034F\\u061C\\u115F\\u1160\\u17B4\\u17B5\\u180B-\\u180F\\u3164\\uFFA0' +
  // zero-width space/joiners, LRM/RLM, line/paragraph separators, bidi embeddings and overrides
  '\\u200B-\\u200F\\u2028\\u2029\\u202A-\\u202E' +
  // word joiner, invisible operators, bidi isolates, deprecated format characters
  '\\u2060-\\u2064\\u2066-\\u206F' +
  // variation selectors, byte order mark, interlinear annotation, object replacement
  '\\uFE00-\\uFE0F\\uFEFF\\uFFF9-\\uFFFC' +
  // Unicode tags (ASCII smuggling), variation selectors supplement, shorthand format controls
  '\\u{E0000}-\\u{E007F}\\u{E0100}-\\u{E01EF}\\u{1BCA0}-\\u{1BCA3}\\u{1D173}-\\u{1D17A}';
// eslint-disable-next-line no-misleading-character-class -- a class of invisible code points, on purpose
const INVISIBLE_RE = new RegExp(`[${INVISIBLE}]`, 'gu');

// Character references that render as invisible code points (`&#8203;`, `&zwnj;`, `&#917569;`).
const INVISIBLE_ENTITY_RE =
  /&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|shy|zwj|zwnj|lrm|rlm|ZeroWidthSpace|NegativeVeryThinSpace|NegativeThinSpace|NegativeMediumSpace|NegativeThickSpace|NoBreak|InvisibleTimes|it|InvisibleComma|ic|ApplyFunction|af);/g;

function decodesToInvisible(entity: string): boolean {
  const body = entity.slice(1, -1);
  if (!body.startsWith('#')) return true;
  const code = /^#[xX]/.test(body) ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
  // NUL and out-of-range references render as U+FFFD, which is visible.
  if (!(code > 0 && code <= 0x10ffff)) return false;
  INVISIBLE_RE.lastIndex = 0;
  return INVISIBLE_RE.test(String.fromCodePoint(code));
}

/**
 * The longest text read: GitHub's limit for an issue body or comment (65536), plus room for the
 * title joined before the body. Longer text never comes from GitHub.
 */
export const MAX_ISSUE_TEXT = 65536 + 1024;

/**
 * Quote and list markers opening one line deeper than this, and longer runs of one emphasis or
 * bracket character, are refused before parsing: nobody writes them, and the parser spends
 * quadratic time on them, then overflows its stack.
 */
export const MAX_NESTING = 100;

/** The visible text, or why none of it can be used (one line, for the status comment). */
export type IssueTextRead = { ok: true; text: string } | { ok: false; reason: string };

/** The text a reader of the rendered issue sees; '' when it cannot be read safely. */
export function sanitizeIssueText(text: string): string {
  const read = readIssueText(text);
  return read.ok ? read.text : '';
}

/** Like `sanitizeIssueText`, but says why a text was not read. Never throws. */
export function readIssueText(text: string): IssueTextRead {
  if (text.length > MAX_ISSUE_TEXT) {
    return {
      ok: false,
      reason: `the issue text is longer than GitHub allows (${text.length} characters, at most 65536 for a body)`,
    };
  }
  const normalized = text.replace(/\r\n?/g, '\n').replace(INVISIBLE_RE, '');
  const depth = containerDepth(normalized);
  if (depth > MAX_NESTING) {
    return {
      ok: false,
      reason: `the issue text nests quotes or lists ${depth} levels deep (at most ${MAX_NESTING})`,
    };
  }
  const run = /([*_~[\]])\1{100,}/.exec(normalized);
  if (run) {
    return {
      ok: false,
      reason: `the issue text has a run of ${run[0].length} \`${run[1]}\` characters (at most ${MAX_NESTING})`,
    };
  }
  const costly = quadraticShape(normalized);
  if (costly) return { ok: false, reason: costly };
  try {
    const visible = applyEdits(normalized, hiddenParts(normalized))
      .replace(/[ \t]+$/gm, '')
      .replace(/\n{3,}/g, '\n\n')
      .trim();
    return { ok: true, text: visible };
  } catch (error) {
    // Deep inline nesting (emphasis, images in images) can still overflow the parser's stack:
    // nothing of a text that was not fully read can be shown to be visible.
    if (!(error instanceof RangeError)) throw error;
    return { ok: false, reason: 'the issue text nests Markdown too deeply to be read safely' };
  }
}

/** The most quote or list markers opening any one line (an upper bound of its nesting). */
function containerDepth(text: string): number {
  let most = 0;
  let depth = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 10) {
      depth = 0;
      i += 1;
      continue;
    }
    if (c === 32 || c === 9) {
      i += 1;
      continue;
    }
    let marker = 0;
    if (c === 62 /* > */) marker = 1;
    else if (c === 45 || c === 43 || c === 42 /* - + * */) marker = spaceAt(text, i + 1) ? 1 : 0;
    else if (c >= 48 && c <= 57) {
      let j = i;
      while (j < n && j - i < 10 && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j += 1;
      const d = text.charCodeAt(j);
      if ((d === 46 || d === 41) /* . ) */ && spaceAt(text, j + 1)) marker = j + 1 - i;
    }
    if (marker === 0) {
      // The rest of the line is content.
      const nl = text.indexOf('\n', i);
      i = nl < 0 ? n : nl;
      continue;
    }
    depth += 1;
    if (depth > most) most = depth;
    i += marker;
  }
  return most;
}

function spaceAt(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  return Number.isNaN(c) || c === 32 || c === 9 || c === 10;
}

/**
 * Code from a pull request (a diff hunk, a previous diff, a path) treated as issue text treats
 * code: it renders literally, so nothing in it is hidden markup, but invisible and control
 * characters (Trojan Source, ASCII smuggling) go. Whitespace is kept: it is part of a diff.
 */
export function sanitizeCode(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(INVISIBLE_RE, '');
}

/** A replacement of `source.slice(start, end)`. */
interface Edit {
  start: number;
  end: number;
  text: string;
}

function applyEdits(source: string, edits: Edit[]): string {
  let out = '';
  let at = 0;
  for (const edit of edits.sort((a, b) => a.start - b.start)) {
    if (edit.start < at) {
      // Overlapping a hidden part already cut: whatever of it is left goes too.
      at = Math.max(at, edit.end);
      continue;
    }
    out += source.slice(at, edit.start) + edit.text;
    at = edit.end;
  }
  return out + source.slice(at);
}

function hiddenParts(source: string): Edit[] {
  const tree = fromMarkdown(source, {
    extensions: [gfm()],
    mdastExtensions: [gfmFromMarkdown()],
  });
  const walk: Walk = { source, edits: [], literal: [], html: createRawHtmlReader() };
  visitChildren(walk, tree);
  walk.edits.push(...outside(walk.literal, hiddenMath(source)));
  return walk.edits;
}

/** What a walk over the tree has found so far. */
interface Walk {
  source: string;
  edits: Edit[];
  /** Code spans and code blocks render literally: math commands inside them show as written. */
  literal: { start: number; end: number }[];
  html: RawHtmlReader;
}

function range(node: Nodes): { start: number; end: number } {
  return { start: node.position?.start.offset ?? 0, end: node.position?.end.offset ?? 0 };
}

function remove(walk: Walk, node: Nodes, text = ''): void {
  walk.edits.push({ ...range(node), text });
}

function visitChildren(walk: Walk, node: Parent): void {
  for (const child of node.children) visit(walk, child);
}

function visit(walk: Walk, node: Nodes): void {
  if (node.type === 'html') {
    const last = range(node).end >= walk.source.length;
    remove(walk, node, withoutInvisibleEntities(walk.html.read(node.value, last)));
    return;
  }
  if (walk.html.hiding()) {
    // Inside a hidden region: gone, unless raw HTML inside it may end the region.
    if ('children' in node && containsHtml(node)) visitChildren(walk, node);
    else remove(walk, node);
    return;
  }
  switch (node.type) {
    case 'definition':
      remove(walk, node);
      return;
    case 'image':
    case 'imageReference':
      remove(walk, node, '[image]');
      return;
    case 'link':
    case 'linkReference':
      // A link with no text renders as nothing: its destination would be a hidden channel.
      if (!showsSomething(node)) {
        remove(walk, node);
        return;
      }
      visitChildren(walk, node);
      if (node.type === 'linkReference') return;
      if (node.title !== null && node.title !== undefined) {
        dropLinkTitle(walk.source, node, walk.edits);
      }
      return;
    case 'code':
      if (/^mermaid$/i.test(node.lang ?? ''))
        walk.edits.push(...mermaidComments(walk.source, node));
      if (!/^math$/i.test(node.lang ?? '')) walk.literal.push(range(node));
      return;
    case 'inlineCode':
      walk.literal.push(range(node));
      return;
    case 'table':
      visitTable(walk, node);
      return;
    case 'text': {
      const { start, end } = range(node);
      const slice = walk.source.slice(start, end);
      const clean = withoutInvisibleEntities(slice);
      if (clean !== slice) walk.edits.push({ start, end, text: clean });
      return;
    }
    default:
      if ('children' in node) visitChildren(walk, node);
  }
}

/** GFM drops the cells of a row beyond the header's count: they never show. */
function visitTable(walk: Walk, node: Extract<Nodes, { type: 'table' }>): void {
  const columns = node.children[0]?.children.length ?? 0;
  for (const row of node.children) {
    const excess = row.children.slice(columns);
    if (excess.length > 0) {
      walk.edits.push({
        start: range(excess[0]!).start,
        end: range(excess.at(-1)!).end,
        text: '',
      });
    }
    for (const cell of row.children.slice(0, columns)) visit(walk, cell);
  }
}

/** The edits that do not start inside one of the (disjoint) ranges; one sweep over both, sorted. */
function outside(ranges: { start: number; end: number }[], edits: Edit[]): Edit[] {
  const sorted = [...ranges].sort((a, b) => a.start - b.start);
  let r = 0;
  return edits
    .sort((a, b) => a.start - b.start)
    .filter((edit) => {
      while (r < sorted.length && sorted[r]!.end <= edit.start) r += 1;
      const range = sorted[r];
      return !(range && range.start <= edit.start);
    });
}

/**
 * GitHub renders `$…$`, `$$…$$` and ```` ```math ```` blocks with MathJax, where `\phantom{…}`
 * (and `\hphantom`, `\vphantom`) takes space but shows nothing, and the second argument of
 * `\texttip`/`\mathtip` shows only on hover. Both are cut wherever they are found outside code
 * (outside math they show literally; the model loses nothing it needs). A group that never
 * closes runs to the end of its paragraph. The first argument of a tooltip shows, so what it
 * hides in turn is cut too: the scan goes on inside it.
 */
function hiddenMath(source: string): Edit[] {
  const edits: Edit[] = [];
  const ends = groupEnds(source);
  const command = /\\(?:([hv]?phantom)|texttip|mathtip)\s*\{/g;
  const tipOpen = /\s*\{/y;
  for (let m = command.exec(source); m; m = command.exec(source)) {
    const firstEnd = ends[m.index + m[0].length - 1] ?? source.length;
    if (m[1]) {
      edits.push({ start: m.index, end: firstEnd, text: '' });
      command.lastIndex = firstEnd;
      continue;
    }
    tipOpen.lastIndex = firstEnd;
    const tip = tipOpen.exec(source);
    if (!tip) continue;
    edits.push({
      start: firstEnd,
      end: ends[firstEnd + tip[0].length - 1] ?? source.length,
      text: '',
    });
  }
  return edits;
}

/**
 * For each `{`, the index just past the `}` closing its group; a group that never closes ends
 * at its paragraph's end (a blank line) or the text's. One pass, so many open groups cost no more.
 */
function groupEnds(source: string): Int32Array {
  const ends = new Int32Array(source.length);
  const open: number[] = [];
  for (let i = 0; i < source.length; i++) {
    const c = source.charCodeAt(i);
    if (c === 92 /* \ */) i++;
    else if (c === 123 /* { */) open.push(i);
    else if (c === 125 /* } */) {
      const o = open.pop();
      if (o !== undefined) ends[o] = i + 1;
    } else if (c === 10 && source.charCodeAt(i + 1) === 10) {
      for (const o of open) ends[o] = i;
      open.length = 0;
    }
  }
  for (const o of open) ends[o] = source.length;
  return ends;
}

function showsSomething(node: Nodes): boolean {
  if (node.type === 'text') return /\S/.test(node.value);
  if (['inlineCode', 'image', 'imageReference', 'html'].includes(node.type)) return true;
  return 'children' in node && node.children.some((child) => showsSomething(child));
}

function containsHtml(node: Nodes): boolean {
  if (node.type === 'html') return true;
  return 'children' in node && node.children.some((child) => containsHtml(child));
}

/** `[text](url "title")` keeps text and URL; the title is only ever a tooltip. */
function dropLinkTitle(
  source: string,
  node: Extract<Nodes, { type: 'link' }>,
  edits: Edit[],
): void {
  const start = node.position?.start.offset;
  const end = node.position?.end.offset;
  if (start === undefined || end === undefined) return;
  const last = node.children.at(-1)?.position?.end.offset ?? start + 1;
  const tail = source.slice(last, end);
  // `](` destination (`<...>` or a run without spaces, balanced parentheses), then the title.
  const m = /^\]\(\s*(<[^>\n]*>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*)/.exec(tail);
  const destination = m ? (m[1] ?? '') : `<${node.url}>`;
  edits.push({ start: last, end, text: `](${destination})` });
}

/** Lines of a mermaid block that start with `%%` (comments and directives) never show. */
function mermaidComments(source: string, node: Extract<Nodes, { type: 'code' }>): Edit[] {
  const start = node.position?.start.offset;
  const end = node.position?.end.offset;
  if (start === undefined || end === undefined) return [];
  const edits: Edit[] = [];
  const line = /[^\n]*(\n|$)/g;
  line.lastIndex = start;
  let first = true;
  for (let m = line.exec(source); m && m.index < end; m = line.exec(source)) {
    if (m[0] === '') break;
    // The fence line opens the block; container prefixes (`>`, list indentation) come first.
    if (!first && /^[ \t>]*%%/.test(m[0])) {
      edits.push({ start: m.index, end: Math.min(m.index + m[0].length, end + 1), text: '' });
    }
    first = false;
  }
  return edits;
}

function withoutInvisibleEntities(text: string): string {
  return text.replace(INVISIBLE_ENTITY_RE, (entity: string) =>
    decodesToInvisible(entity) ? '' : entity,
  );
}
