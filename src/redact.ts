// Secrets are redacted everywhere: every secret the process learns (API keys, installation
// tokens) is registered here, and every log line and every text we publish passes through
// `redactSecrets`.

const secrets = new Set<string>();
// Every run registers fresh installation tokens (they expire within the hour) and every log line
// scans all known secrets: the set keeps the most recently registered ones, so a long-lived App
// neither grows without bound nor slows each log line down run after run. Long-lived secrets
// (the model API key) are registered again by every run, which keeps them recent.
export const MAX_REGISTERED_SECRETS = 2048;

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
  if (!value || value.length < 8) return;
  secrets.delete(value);
  secrets.add(value);
  for (const oldest of secrets) {
    if (secrets.size <= MAX_REGISTERED_SECRETS) break;
    secrets.delete(oldest);
  }
}

/** How many secrets are remembered (bounded by MAX_REGISTERED_SECRETS). */
export function registeredSecretCount(): number {
  return secrets.size;
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
