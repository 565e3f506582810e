// Cookie sessions: the value is sealed with AES-256-GCM (authenticated, so it is signed, and the
// user's GitHub token inside stays unreadable), with its expiry inside the sealed payload.
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';

export class SessionSealer {
  readonly #key: Buffer;
  readonly #macKey: Buffer;

  /** Keys are derived from a secret only the server knows (the OAuth client secret). */
  constructor(secret: string) {
    if (secret.length < 16) throw new Error('the session secret must be at least 16 characters');
    this.#key = Buffer.from(hkdfSync('sha256', secret, 'frognano-session', 'seal', 32));
    this.#macKey = Buffer.from(hkdfSync('sha256', secret, 'frognano-session', 'csrf', 32));
  }

  seal(value: object, maxAgeSec: number): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const body = JSON.stringify({ v: value, exp: Date.now() + maxAgeSec * 1000 });
    const sealed = Buffer.concat([cipher.update(body, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
  }

  /** Undefined for anything not sealed by this key, tampered with, or expired. */
  unseal<T>(token: string | undefined): T | undefined {
    if (!token) return undefined;
    try {
      const raw = Buffer.from(token, 'base64url');
      if (raw.length < 29) return undefined;
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      const body = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]);
      const parsed = JSON.parse(body.toString('utf8')) as { v: T; exp: number };
      return parsed.exp > Date.now() ? parsed.v : undefined;
    } catch {
      return undefined;
    }
  }

  /** A token bound to one session cookie, for forms that change state. */
  csrfToken(sessionCookie: string): string {
    return createHmac('sha256', this.#macKey).update(sessionCookie).digest('base64url');
  }

  checkCsrf(sessionCookie: string, token: string | undefined): boolean {
    if (!token) return false;
    const expected = Buffer.from(this.csrfToken(sessionCookie));
    const got = Buffer.from(token);
    return expected.length === got.length && timingSafeEqual(expected, got);
  }
}

export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (!(name in out)) out[name] = part.slice(eq + 1).trim();
  }
  return out;
}

export function serializeCookie(
  name: string,
  value: string,
  options: { maxAgeSec: number; secure: boolean; path: string },
): string {
  return [
    `${name}=${value}`,
    `Path=${options.path}`,
    `Max-Age=${options.maxAgeSec}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}
