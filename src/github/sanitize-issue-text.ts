// Issue text is data written by anyone who can open an issue. Before it reaches the model's
// prompt, everything a maintainer reading the rendered issue would NOT see is removed, so the
// model cannot be steered by instructions that no human reviewed:
//   - HTML comments `<!-- ... -->` (unterminated ones run to the end, as in a browser);
//   - invisible code points: zero-width characters, bidirectional controls (Trojan Source),
//     Unicode tag characters (ASCII smuggling), variation selectors, soft hyphens, other format
//     and control characters except newline and tab;
//   - elements that do not render or render hidden: script/style/template/noscript/iframe/
//     object/embed/svg/math, any element with a `hidden` attribute, `aria-hidden="true"`, or a
//     style that hides it (display:none, visibility:hidden, font-size:0, opacity:0);
//   - `<img>` and markdown images keep no alt/title text (it shows only when the image fails);
//   - markdown link reference definitions (`[//]: # (hidden)`), a popular comment trick;
//   - all remaining HTML tags, attributes included (titles and alt texts are tooltips at best);
//     the text between tags stays, because it is visible.
// A hidden region that STARTS in prose ends where HTML ends it, even past a code fence or a code
// span inside it (`<!--` + a fenced block + `-->` renders as one comment, the fence included).
// `<details>` is NOT hidden content: its summary is visible and one click shows the body, so its
// text is kept (the tags go). Code spans and fenced code blocks render literally, so HTML inside
// them is kept verbatim; invisible code points are removed everywhere, code included.
// The result is only ever placed in the prompt as data; it never reaches a shell.

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

const NEVER_RENDERED = [
  'script',
  'style',
  'template',
  'noscript',
  'iframe',
  'object',
  'embed',
  'svg',
  'math',
  'textarea',
  'select',
  'head',
  'title',
];

const VOID_ELEMENTS = [
  'area',
  'base',
  'br',
  'col',
  'embed',
  'hr',
  'img',
  'input',
  'link',
  'meta',
  'source',
  'track',
  'wbr',
];

const HIDING_STYLE =
  /(display\s*:\s*none|visibility\s*:\s*(hidden|collapse)|font-size\s*:\s*0(\.0*)?(px|em|rem|pt|%)?\s*(;|$|!)|opacity\s*:\s*0(\.0*)?\s*(;|$|!)|(width|height)\s*:\s*0(px)?\s*(;|$|!))/i;

export function sanitizeIssueText(text: string): string {
  const normalized = text.replace(/\r\n?/g, '\n').replace(INVISIBLE_RE, '');
  return sanitizeMarkdown(normalized)
    .replace(/[ \t]+$/gm, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

interface Part {
  text: string;
  code: boolean;
}

/** Splits markdown into fenced code blocks / code spans (rendered literally) and prose. */
function splitCode(text: string): Part[] {
  const parts: Part[] = [];
  const lines = text.split(/(?<=\n)/);
  let prose = '';
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? '';
    const open = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (!open) {
      prose += line;
      i += 1;
      continue;
    }
    const fence = open[1] ?? '```';
    let block = line;
    i += 1;
    while (i < lines.length) {
      const inner = lines[i] ?? '';
      block += inner;
      i += 1;
      const close = new RegExp(`^ {0,3}${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
      if (close.test(inner.replace(/\n$/, ''))) break;
    }
    if (prose) parts.push(...splitSpans(prose));
    prose = '';
    parts.push({ text: block, code: true });
  }
  if (prose) parts.push(...splitSpans(prose));
  return parts;
}

function splitSpans(text: string): Part[] {
  const parts: Part[] = [];
  // A code span: a run of N backticks, content, the same run of N backticks.
  const re = /(`+)([\s\S]*?[^`])\1(?!`)/g;
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    // Code spans do not cross paragraphs; a blank line inside means it is not a span, and so
    // does a line starting with `<` (an HTML block, e.g. a comment, can interrupt a paragraph).
    if (/\n[ \t]*\n/.test(m[0]) || /\n {0,3}</.test(m[0])) continue;
    if (m.index > last) parts.push({ text: text.slice(last, m.index), code: false });
    parts.push({ text: m[0], code: true });
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push({ text: text.slice(last), code: false });
  return parts;
}

// Past this many hidden regions that swallow code, the rest of the text is dropped: that many is
// an attack, not an issue, and each costs a re-split of the rest.
const MAX_CODE_SWALLOWING_REGIONS = 200;

/**
 * Code keeps its text; prose is sanitized. A hidden region (comment, bogus comment, hidden
 * element) that starts in prose but ends beyond its prose part swallows the code in between,
 * as HTML does; markdown resumes on the line after the region's end.
 */
function sanitizeMarkdown(text: string): string {
  let out = '';
  // `lead` is the rest of the line a hidden region ended on: prose, never a fence opener.
  let lead = '';
  let rest = text;
  for (let regions = 0; regions <= MAX_CODE_SWALLOWING_REGIONS; regions += 1) {
    const whole = lead + rest;
    const parts = lead ? [{ text: lead, code: false }, ...splitCode(rest)] : splitCode(rest);
    const cut = firstSwallowingRegion(whole, parts);
    if (!cut) return out + parts.map(sanitizePart).join('');
    let offset = 0;
    for (const part of parts) {
      if (offset + part.text.length > cut.start) {
        out += sanitizeProse(part.text.slice(0, cut.start - offset));
        break;
      }
      out += sanitizePart(part);
      offset += part.text.length;
    }
    const nl = whole.indexOf('\n', cut.end);
    lead = nl < 0 ? whole.slice(cut.end) : whole.slice(cut.end, nl + 1);
    rest = nl < 0 ? '' : whole.slice(nl + 1);
    if (lead === '' && rest === '') return out;
  }
  return out;
}

function sanitizePart(part: Part): string {
  return part.code ? part.text : sanitizeProse(part.text);
}

/** The first hidden region starting in a prose part and ending beyond it. */
function firstSwallowingRegion(
  whole: string,
  parts: readonly Part[],
): { start: number; end: number } | undefined {
  let offset = 0;
  for (const part of parts) {
    const partStart = offset;
    const partEnd = offset + part.text.length;
    offset = partEnd;
    if (part.code) continue;
    // Ends are found only for starts not inside an earlier region: linear, not quadratic.
    let covered = partStart;
    for (const candidate of hiddenStarts(whole, partStart, partEnd)) {
      if (candidate.start < covered) continue;
      const end = candidate.end();
      if (end > partEnd) return { start: candidate.start, end };
      covered = Math.max(end, candidate.start + 1);
    }
  }
  return undefined;
}

/** Where hidden regions may start in [from, to), in order, each with a way to find its end. */
function hiddenStarts(
  whole: string,
  from: number,
  to: number,
): { start: number; end: () => number }[] {
  const found: { start: number; end: () => number }[] = [];
  const opener = /<!--|<[!?]/g;
  opener.lastIndex = from;
  for (let m = opener.exec(whole); m && m.index < to; m = opener.exec(whole)) {
    const start = m.index;
    if (m[0] === '<!--') {
      found.push({
        start,
        end: () => {
          const close = /--!?>/g;
          close.lastIndex = start + 4;
          const c = close.exec(whole);
          return c ? c.index + c[0].length : whole.length;
        },
      });
    } else {
      found.push({
        start,
        end: () => {
          const gt = whole.indexOf('>', start);
          return gt >= 0 ? gt + 1 : whole.length;
        },
      });
    }
  }
  const tags = new RegExp(OPEN_TAG.source, 'g');
  tags.lastIndex = from;
  for (let m = tags.exec(whole); m && m.index < to; m = tags.exec(whole)) {
    const tag = (m[1] ?? '').toLowerCase();
    if (!isHidden(tag, m[2] ?? '')) continue;
    const start = m.index;
    const openEnd = start + m[0].length;
    const selfClosing = m[3] === '/' || VOID_ELEMENTS.includes(tag);
    found.push({ start, end: () => (selfClosing ? openEnd : findClose(whole, tag, openEnd)) });
  }
  return found.sort((x, y) => x.start - y.start);
}

function sanitizeProse(text: string): string {
  let out = text.replace(/<!--[\s\S]*?(--!?>|$)/g, '');
  // A stray `<!` or `<?` opens a bogus comment in HTML that hides text up to the next `>`.
  out = out.replace(/<[!?][^>]*(>|$)/g, '');
  out = removeHiddenElements(out);
  out = out.replace(INVISIBLE_ENTITY_RE, (entity: string) =>
    decodesToInvisible(entity) ? '' : entity,
  );
  // Link titles show only as a tooltip: `[text](url "title")` keeps text and URL.
  out = out.replace(
    /(\]\(\s*(?:<[^>\n]*>|[^\s()]+))\s+(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\((?:[^()\\]|\\.)*\))\s*\)/g,
    '$1)',
  );
  // Images: alt and title show only when the image fails to load.
  out = out.replace(/!\[(?:[^\]\\]|\\.)*\]\((?:[^)\\]|\\.)*\)/g, '[image]');
  out = out.replace(/!\[(?:[^\]\\]|\\.)*\]\[[^\]]*\]/g, '[image]');
  // Link reference definitions never render (`[//]: # (a hidden comment)`).
  out = out.replace(/^ {0,3}\[[^\]\n]+\]:[^\n]*(\n|$)/gm, '');
  // Remaining tags: keep the visible text between them, drop the tags and their attributes.
  out = out.replace(/<img\b[^>]*>/gi, '[image]');
  out = out.replace(/<\/?[A-Za-z][A-Za-z0-9-]*(?:\s(?:[^>"']|"[^"]*"|'[^']*')*)?\/?>/g, '');
  return out;
}

const OPEN_TAG = /<([A-Za-z][A-Za-z0-9-]*)((?:\s(?:[^>"']|"[^"]*"|'[^']*')*)?)(\/?)>/g;

function isHidden(tag: string, attributes: string): boolean {
  if (NEVER_RENDERED.includes(tag)) return true;
  if (/(^|\s)hidden(\s|=|$|\/)/i.test(attributes)) return true;
  if (/aria-hidden\s*=\s*["']?true/i.test(attributes)) return true;
  if (/^input$/i.test(tag) && /type\s*=\s*["']?hidden/i.test(attributes)) return true;
  const style = /style\s*=\s*("([^"]*)"|'([^']*)'|([^\s>]+))/i.exec(attributes);
  const css = style ? (style[2] ?? style[3] ?? style[4] ?? '') : '';
  return HIDING_STYLE.test(css);
}

/** Removes hidden elements with everything inside them, honouring nesting of the same tag. */
function removeHiddenElements(text: string): string {
  let out = text;
  for (let guard = 0; guard < 10_000; guard += 1) {
    OPEN_TAG.lastIndex = 0;
    let found: { start: number; end: number } | undefined;
    for (let m = OPEN_TAG.exec(out); m; m = OPEN_TAG.exec(out)) {
      const tag = (m[1] ?? '').toLowerCase();
      if (!isHidden(tag, m[2] ?? '')) continue;
      const openEnd = m.index + m[0].length;
      const selfClosing = m[3] === '/' || VOID_ELEMENTS.includes(tag);
      found = { start: m.index, end: selfClosing ? openEnd : findClose(out, tag, openEnd) };
      break;
    }
    if (!found) return out;
    out = out.slice(0, found.start) + out.slice(found.end);
  }
  return out;
}

function findClose(text: string, tag: string, from: number): number {
  const re = new RegExp(`<(/?)${tag}\\b[^>]*>`, 'gi');
  re.lastIndex = from;
  let depth = 1;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    depth += m[1] === '/' ? -1 : 1;
    if (depth === 0) return m.index + m[0].length;
  }
  // Unclosed: a browser hides everything after it.
  return text.length;
}
