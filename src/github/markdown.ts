// Helpers for putting untrusted text (model output, test output, issue text) into Markdown we
// publish: it must not ping people, close or link issues, or break out of its code block.
import { redactSecrets } from '../redact.js';

/** A fenced code block whose fence is longer than any backtick run inside the text. */
export function fence(text: string, info = ''): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  return `${ticks}${info}\n${text.replace(/\n$/, '')}\n${ticks}`;
}

/** Inline code that survives backticks inside. */
export function inlineCode(text: string): string {
  const flat = text.replace(/\s*\n\s*/g, ' ');
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

/** A table cell: one line, pipes escaped, no mentions. */
export function tableCell(text: string, max = 80): string {
  const one = untrustedProse(text).replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
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
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');
}

/** A collapsible block of output. */
export function details(summary: string, body: string): string {
  return `<details><summary>${summary}</summary>\n\n${body}\n\n</details>`;
}
