// The raw HTML of an issue, read by parse5's tokenizer (the HTML standard's, as a browser
// reads it): comments (unterminated ones run to the end; `--!>` closes one), bogus comments
// (`<!x>`, `<?x>`, `</1>`), tags with their attributes (quoted values may hold `>`), and
// character references. The pieces of raw HTML in a Markdown document are written to one
// tokenizer in order, so a comment, tag or hidden element opened in one piece goes on in the
// next, and the Markdown between them is hidden while it does. parse5's tree builder is not
// used: the Markdown between the pieces is no HTML it could read. What it would do and matters
// here is done below: a hidden element hides until its own end tag (same-name tags nested in
// it counted), and script, style and the other raw-text elements switch the tokenizer to read
// their content as text up to their end tag, as a browser's tree builder does.
// `Tokenizer` is exported by parse5 but marked internal in its typings (parse5-sax-parser is
// built on it): the tests in test/github/sanitize-issue-text.test.ts pin what is used of it.
import { ErrorCodes, Tokenizer, TokenizerMode, type Token, type TokenHandler } from 'parse5';

/** The elements that never show, whatever their attributes. */
const NEVER_RENDERED = new Set([
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
  // Every browser's stylesheet says `rp { display: none }` (ruby fallback); GitHub allows it.
  'rp',
]);

/** The hidden elements whose content a browser reads as text up to their end tag. */
const RAW_TEXT: Record<string, (typeof TokenizerMode)[keyof typeof TokenizerMode]> = {
  script: TokenizerMode.SCRIPT_DATA,
  style: TokenizerMode.RAWTEXT,
  iframe: TokenizerMode.RAWTEXT,
  noscript: TokenizerMode.RAWTEXT,
  textarea: TokenizerMode.RCDATA,
  title: TokenizerMode.RCDATA,
};

const VOID_ELEMENTS = new Set([
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
]);

const HIDING_STYLE =
  /(display\s*:\s*none|visibility\s*:\s*(hidden|collapse)|font-size\s*:\s*0(\.0*)?(px|em|rem|pt|%)?\s*(;|$|!)|opacity\s*:\s*0(\.0*)?\s*(;|$|!)|(width|height)\s*:\s*0(px)?\s*(;|$|!))/i;

/**
 * Written after each piece: the tokenizer looks up to 8 characters ahead (`<!doctype`, an end
 * tag, a character reference) and waits for more input before deciding; whitespace ends every
 * such wait the way the line ending or Markdown that follows in the rendered page would, and
 * changes no token: it separates attributes, and is text, or part of a value or comment.
 */
const PAD = ' '.repeat(8);

export interface RawHtmlReader {
  /**
   * Reads the next piece of raw HTML in the document; returns the text that shows, verbatim
   * from the source (character references undecoded): what lies between tags, outside hidden
   * regions, with `[image]` for an image. `last`: the document ends with it (what is still
   * open is read as a browser reads it at the end of input: `</` alone is text).
   */
  read(html: string, last: boolean): string;
  /** Whether the Markdown between pieces is hidden: a comment, tag or hidden element is open. */
  hiding(): boolean;
}

export function createRawHtmlReader(): RawHtmlReader {
  /** Everything written to the tokenizer: its offsets index this. */
  let stream = '';
  /** Where the piece being read lies in `stream` (the padding after it is not shown). */
  let pieceStart = 0;
  let pieceEnd = 0;
  let out = '';
  /** The outermost open hidden element, and how deep its own tag name is nested. */
  let hidden: { name: string; depth: number } | undefined;
  /** `</>`, which a browser drops (the text around it is one character token): not shown. */
  const dropped: number[] = [];
  const text = (token: Token.CharacterToken) => {
    const at = token.location;
    if (hidden || !at) return;
    let from = Math.max(at.startOffset, pieceStart);
    const to = Math.min(at.endOffset, pieceEnd);
    for (const start of dropped) {
      if (start < from || start >= to) continue;
      out += stream.slice(from, start);
      from = start + 3;
    }
    dropped.length = 0;
    if (from < to) out += stream.slice(from, to);
  };
  const handler: TokenHandler = {
    onCharacter: text,
    onWhitespaceCharacter: text,
    onNullCharacter: text,
    onComment: () => undefined,
    onDoctype: () => undefined,
    onEof: () => undefined,
    onParseError: (error) => {
      if (error.code === ErrorCodes.missingEndTagName) dropped.push(error.startOffset - 2);
    },
    onStartTag: (token) => {
      const name = token.tagName;
      const mode = RAW_TEXT[name];
      if (mode !== undefined) tokenizer.state = mode;
      if (hidden) {
        if (name === hidden.name && !VOID_ELEMENTS.has(name)) hidden.depth += 1;
        return;
      }
      // `/>` does not close a non-void HTML element: `<div hidden/>` hides what follows it.
      if (isHidden(name, token.attrs)) {
        if (!VOID_ELEMENTS.has(name)) hidden = { name, depth: 1 };
        return;
      }
      if (name === 'img') out += '[image]';
    },
    onEndTag: (token) => {
      if (!hidden || token.tagName !== hidden.name || VOID_ELEMENTS.has(hidden.name)) return;
      hidden.depth -= 1;
      if (hidden.depth === 0) hidden = undefined;
    },
  };
  const tokenizer = new Tokenizer({ sourceCodeLocationInfo: true }, handler);
  return {
    read(html, last) {
      out = '';
      pieceStart = stream.length;
      pieceEnd = pieceStart + html.length;
      const chunk = last ? html : html + PAD;
      stream += chunk;
      tokenizer.write(chunk, last);
      if (!last) tokenizer.flushCharacters();
      return out;
    },
    hiding: () => hidden !== undefined || tokenizer.state !== TokenizerMode.DATA,
  };
}

function isHidden(tag: string, attrs: Token.Attribute[]): boolean {
  if (NEVER_RENDERED.has(tag)) return true;
  const value = (name: string) => attrs.find((a) => a.name === name)?.value;
  if (value('hidden') !== undefined) return true;
  if (/^\s*true/i.test(value('aria-hidden') ?? '')) return true;
  if (tag === 'input' && /^\s*hidden/i.test(value('type') ?? '')) return true;
  return HIDING_STYLE.test(value('style') ?? '');
}
