// Helpers for putting untrusted text (model output, test output, issue text) into Markdown we
// publish: it must not ping people, close or link issues, or break out of its code block.
import { oneLine } from '../one-line.js';
import { redactSecrets } from '../redact.js';

/** A fenced code block whose fence is longer than any backtick run inside; controls made visible. */
export function fence(untrusted: string, info = ''): string {
  const text = visibleControls(untrusted);
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  return `${ticks}${info}\n${text.replace(/\n$/, '')}\n${ticks}`;
}

/**
 * Output of a process (tests, setup) with nothing left to act on a terminal that shows it
 * (`cat summary.md`): colour codes dropped, every other control character shown as `\x1b`; tab
 * and newline kept, CRLF read as a newline (a lone carriage return could hide a line).
 */
export function visibleControls(text: string): string {
  return (
    text
      .replace(/\r\n/g, '\n')
      // eslint-disable-next-line no-control-regex -- SGR colour sequences are what is dropped
      .replace(/\u001b\[[0-9;:]*m/g, '')
      // eslint-disable-next-line no-control-regex -- these are the characters being made visible
      .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => {
        return `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
      })
  );
}

/** Inline code that survives backticks inside. */
export function inlineCode(text: string): string {
  // Every CommonMark line ending (a lone \r too): block structure is read before code spans,
  // so a line break inside one could start a heading or a quote.
  const flat = text.replace(/\s*(?:\r\n|\r|\n)\s*/g, ' ');
  const longest = Math.max(0, ...[...flat.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  const pad = flat.startsWith('`') || flat.endsWith('`') ? ' ' : '';
  return `${ticks}${pad}${flat}${pad}${ticks}`;
}

/**
 * Prose from the model: mentions and issue references (`#1`, `o/r#1`, `GH-1`, issue and pull
 * request URLs, which would put our bot in other issues' timelines) are defused with a
 * zero-width space entity, HTML is shown as text, images are shown as text (GitHub would fetch
 * their URL when the page is viewed: a channel out for whatever the URL carries), and secrets
 * are redacted.
 */
export function untrustedProse(text: string): string {
  return redactSecrets(text)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/!\[/g, '!\\[')
    .replace(/@(?=[A-Za-z0-9])/g, '@&#8203;')
    .replace(/(^|[^&\w])#(?=\d)/g, '$1#&#8203;')
    .replace(/\b([A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+)#(?=\d)/g, '$1#&#8203;')
    .replace(/\b(GH-)(?=\d)/gi, '$1&#8203;')
    .replace(/\/(issues|pull|pulls|discussions)\/(?=\d)/gi, '/$1/&#8203;');
}

/**
 * Untrusted text made literal: every character that could start Markdown structure is
 * backslash-escaped (emphasis, code, links, images, tables, strikethrough, math everywhere;
 * headings, quotes, alerts, lists, breaks and setext underlines at the start of a line), then
 * defused like `untrustedProse`, and bare URLs are kept from becoming links. It renders exactly as written, so it can never look like a
 * heading, an alert box, a table or a link of ours. Lines are split the way CommonMark splits
 * them (a lone `\r` ends a line too), so a caller can prefix each line safely.
 */
export function literalLines(text: string): string[] {
  return (
    redactSecrets(text)
      // Control characters (a terminal escape, a bell) would act on a terminal that shows
      // summary.md: shown as `\x1b` instead, like the CLI shows them.
      // eslint-disable-next-line no-control-regex -- these are the characters being made visible
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g, (c) => {
        return `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
      })
      .split(/\r\n|\r|\n/)
      .map((line) =>
        untrustedProse(
          line
            .replace(/[\\`*_[\]|~$]/g, '\\$&')
            .replace(/^([ \t]*)([#>+\-=:])/, '$1\\$2')
            .replace(/^([ \t]*\d+)([.)])/, '$1\\$2'),
        )
          // GFM turns bare URLs into links; a zero-width space keeps them text.
          .replace(/\b(https?|ftp)(?=:\/\/)/gi, '$1&#8203;')
          .replace(/\b(www)(?=\.)/gi, '$1&#8203;')
          // An alert is a quote whose text starts `[!TYPE]`; even read after unescaping, this one
          // starts with a zero-width space.
          .replace(/^([ \t]*)(?=\\\[!)/, '$1&#8203;'),
      )
  );
}

/**
 * Untrusted prose (the model's final message) as an inert block quote: literal text, one `> `
 * per line, so no line can leave the quote or turn into an alert (`[!IMPORTANT]`), a heading or
 * anything else that would read as the bot's own voice.
 */
export function inertQuote(text: string): string {
  return literalLines(text)
    .map((l) => (l === '' ? '>' : `> ${l}`))
    .join('\n');
}

/**
 * A file name quoted the way git quotes unusual names (`"evil\n## x"`): control, bidi and line
 * separator characters escaped, so the name is one line that shows what it really holds.
 */
export function quotePath(name: string): string {
  const unusual =
    // eslint-disable-next-line no-control-regex -- control characters are what is being escaped
    /[\u0000-\u001f\u007f-\u009f"\\\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
  if (!unusual.test(name)) return name;
  const quoted = [...name]
    .map((c) => {
      if (c === '"' || c === '\\') return `\\${c}`;
      if (c === '\n') return '\\n';
      if (c === '\t') return '\\t';
      if (c === '\r') return '\\r';
      return unusual.test(c) ? `\\u{${(c.codePointAt(0) ?? 0).toString(16)}}` : c;
    })
    .join('');
  return `"${quoted}"`;
}

/** A file name as inline code (see `quotePath`): one inert line whatever the name holds. */
export function fileName(name: string): string {
  return inlineCode(redactSecrets(quotePath(name)));
}

/**
 * A table cell of untrusted text: one line, literal (see `literalLines`), cut to `max`. Its
 * pipes are `&#124;`, not `\|`: table rows are split before anything else is read, and
 * renderers disagree on whether `\\|` ends a cell.
 */
export function textCell(text: string, max = 80): string {
  // Every `\|` here is literalLines' escape of a `|` (a `\` of the text became `\\`).
  return literalLines(oneLine(text, max)).join(' ').replace(/\\\|/g, '&#124;');
}

/**
 * A table cell of untrusted text as code, shown exactly (one line, controls made visible, cut
 * to `max`): a code span never links, pings or renders Markdown. But rows are split at `|`
 * before code spans are read (GFM splits inside them too), so no `|` is written at all: each
 * is `&#124;` between code spans.
 */
export function codeCell(text: string, max = 80): string {
  const cut = oneLine(visibleControls(redactSecrets(text).replace(/\s+/g, ' ')), max);
  return cut
    .split('|')
    .map((part) => (part === '' ? '' : codeSpan(part)))
    .join('&#124;');
}

/** A code span showing `text` exactly (one line): longer fences, padding where needed. */
function codeSpan(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  // One space is stripped from each end when both ends are spaces: pad to keep it.
  const stripped = /^ .*[^ ].* $/.test(text);
  const pad = text.startsWith('`') || text.endsWith('`') || stripped ? ' ' : '';
  return `${ticks}${pad}${text}${pad}${ticks}`;
}

/** Keep the last `max` characters of a log, cut at a line boundary when possible. */
export function tail(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(text.length - max);
  const nl = cut.indexOf('\n');
  const body = nl >= 0 && nl < max / 4 ? cut.slice(nl + 1) : cut;
  return `… (${text.length - body.length} earlier characters omitted)\n${body}`;
}

/** Every line as a block quote line (text that is already safe to publish). */
export function blockquote(text: string): string {
  return text
    .split(/\r\n|\r|\n/)
    .map((l) => `> ${l}`)
    .join('\n');
}

/** A collapsible block of output. */
export function details(summary: string, body: string): string {
  return `<details><summary>${summary}</summary>\n\n${body}\n\n</details>`;
}
