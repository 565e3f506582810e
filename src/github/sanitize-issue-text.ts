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
  const out = splitCode(normalized)
    .map((part) => (part.code ? part.text : sanitizeProse(part.text)))
    .join('');
  return out
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
    // Code spans do not cross paragraphs; a blank line inside means it is not a span.
    if (/\n[ \t]*\n/.test(m[0])) continue;
    if (m.index > last) parts.push({ text: text.slice(last, m.index), code: false });
    parts.push({ text: m[0], code: true });
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push({ text: text.slice(last), code: false });
  return parts;
}

function sanitizeProse(text: string): string {
  let out = text.replace(/<!--[\s\S]*?(--!?>|$)/g, '');
  // A stray `<!` or `<?` opens a bogus comment in HTML that hides text up to the next `>`.
  out = out.replace(/<[!?][^>]*(>|$)/g, '');
  out = removeHiddenElements(out);
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
