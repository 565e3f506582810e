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

/**
 * Credentials the operator chose (an endpoint's URL password, the model API key) may be short.
 * A secret of 8 characters or more is replaced wherever it occurs. A shorter one, registered
 * with `short: true`, is replaced only where it stands alone (no letter, digit or `_` touching
 * it), and only from MIN_SHORT_SECRET characters up: "pw" or "a" alone would cut ordinary words
 * out of every log line and comment. Text that came from the endpoint itself goes through
 * `redactCredentials` with that endpoint's credentials, whatever their length.
 */
export const MIN_SHORT_SECRET = 3;
const MIN_SECRET = 8;
const shortSecrets = new Set<string>();

/** Remember a secret so it is scrubbed from logs and published text. */
export function registerSecret(value: string | undefined, options: { short?: boolean } = {}): void {
  if (!value) return;
  if (value.length >= MIN_SECRET) remember(secrets, value);
  else if (options.short && value.length >= MIN_SHORT_SECRET) remember(shortSecrets, value);
}

function remember(set: Set<string>, value: string): void {
  set.delete(value);
  set.add(value);
  for (const oldest of set) {
    if (set.size <= MAX_REGISTERED_SECRETS) break;
    set.delete(oldest);
  }
}

/** How many secrets are remembered (bounded by MAX_REGISTERED_SECRETS). */
export function registeredSecretCount(): number {
  return secrets.size;
}

/**
 * Text a party that holds these credentials wrote (an endpoint's error, which may echo the
 * request): each one replaced however short, where it stands alone, then `redactSecrets`.
 */
export function redactCredentials(text: string, credentials: readonly string[]): string {
  let out = text;
  for (const credential of credentials) {
    if (credential === '') continue;
    out =
      credential.length >= MIN_SECRET
        ? out.split(credential).join(REDACTED)
        : replaceStandalone(out, credential);
  }
  return redactSecrets(out);
}

const WORD_CHAR = /[A-Za-z0-9_]/;

/** Every occurrence of `value` with no word character right before or after it. */
function replaceStandalone(text: string, value: string): string {
  let out = '';
  let from = 0;
  for (let at = text.indexOf(value); at !== -1; at = text.indexOf(value, at + 1)) {
    if (at < from) continue;
    const before = text[at - 1];
    const after = text[at + value.length];
    if ((before && WORD_CHAR.test(before)) || (after && WORD_CHAR.test(after))) continue;
    out += text.slice(from, at) + REDACTED;
    from = at + value.length;
  }
  return out + text.slice(from);
}

export function redactSecrets(text: string): string {
  let out = text;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  for (const secret of shortSecrets) {
    if (out.includes(secret)) out = replaceStandalone(out, secret);
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

/**
 * A value as it may be shown (for messages about a bad one): the `user:password@` of every URL
 * in it replaced, whatever the scheme and whatever the password holds (a comma, a space, an
 * `@`: a bad value is bad because of such things), up to the last `@` before the path.
 */
export function hideUrlPasswords(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/]*@/gi, '$1***@');
}
