// HTML text escaping for everything a model, a tool or an issue author wrote: every such string
// reaches a page only through `text()`, which also redacts secrets the process knows of.
import { createHash } from 'node:crypto';
import { redactSecrets } from '../redact.js';

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for an element body or a quoted attribute value. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ENTITIES[c] as string);
}

/** Redacted, then escaped: the only way untrusted text enters markup. */
export function text(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  return escapeHtml(redactSecrets(String(value)));
}

/** A link target we made ourselves; anything but http(s) or a local path becomes inert. */
export function safeHref(url: string): string {
  return /^(https?:\/\/|\/|#|\.\/)/i.test(url) ? escapeHtml(url) : '#';
}

/** A CSP source for an inline <script> or <style> body. */
export function cspHash(body: string): string {
  return `'sha256-${createHash('sha256').update(body, 'utf8').digest('base64')}'`;
}

/**
 * JSON inside `<script type="application/json">`: `<`, `>`, `&` and the JS line separators are
 * escaped, so no string can close the element or open a comment.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '–';
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${Math.round(s % 60)}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
