// Secrets are redacted everywhere: every secret the process learns (API keys, installation
// tokens) is registered here, and every log line and every text we publish passes through
// `redactSecrets`.

const secrets = new Set<string>();

// Token shapes GitHub and OpenAI-style servers hand out; caught even if never registered.
const TOKEN_PATTERNS: RegExp[] = [
  /\bgh[pousr]_[A-Za-z0-9]{20,}\b/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}\b/g,
  /\bv1\.[0-9a-f]{40}\b/g,
  /\bsk-[A-Za-z0-9_-]{16,}\b/g,
  /(authorization:\s*(?:basic|bearer|token)\s+)[A-Za-z0-9+/=._-]+/gi,
  /(https?:\/\/[^\s:/@]+:)[^\s@/]+@/gi,
];

export const REDACTED = '[REDACTED]';

/** Remember a secret so it is scrubbed from logs and published text. Short values are ignored. */
export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 8) secrets.add(value);
}

export function redactSecrets(text: string): string {
  let out = text;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  for (const pattern of TOKEN_PATTERNS) {
    out = out.replace(pattern, (match, prefix: unknown) =>
      typeof prefix === 'string' && match.startsWith(prefix)
        ? `${prefix}${REDACTED}${match.endsWith('@') ? '@' : ''}`
        : REDACTED,
    );
  }
  return out;
}
