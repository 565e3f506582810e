// The App's private key from PRIVATE_KEY, however it arrives: `docker run --env-file` passes
// Probot's `PRIVATE_KEY="-----BEGIN…\n…"` line verbatim (quotes and literal `\n` included),
// hosting platforms mangle newlines or want base64, and some operators mount the file and
// give its path. A key that still cannot be read is refused here, at configuration, in words
// (signing with it later only fails as an opaque OpenSSL error behind "GET /app did not answer").
import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----/;
const FIX = "use the App's private key .pem from its settings";

/** The PEM text of `raw`, or why it is not a usable key (one clause, the key never shown). */
export function readPrivateKey(raw: string, cwd: string): { pem: string } | { problem: string } {
  const value = unquote(raw.trim());
  if (value.includes('-----BEGIN')) return checkPem(value.replace(/\\n/g, '\n'));
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  if (decoded.includes('-----BEGIN')) return checkPem(decoded);
  if (/^[^\s]+$/.test(value) && (value.includes('/') || value.endsWith('.pem'))) {
    const path = isAbsolute(value) ? value : resolve(cwd, value);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
      return {
        problem: `it names the file ${JSON.stringify(path)}, which cannot be read (${code})`,
      };
    }
    return checkPem(text);
  }
  return {
    problem:
      'it holds no "-----BEGIN … PRIVATE KEY-----" block, nor the base64 of one, nor the path of a readable file (set the .pem file\'s text, its base64 or its path)',
  };
}

/** One pair of matching surrounding quotes, as a .env line carries them. */
function unquote(value: string): string {
  const quote = value[0];
  if ((quote === '"' || quote === "'") && value.length >= 2 && value.endsWith(quote)) {
    return value.slice(1, -1);
  }
  return value;
}

/** The PEM text when OpenSSL reads an RSA private key from it. */
export function checkPem(text: string): { pem: string } | { problem: string } {
  const label = PEM_BLOCK.exec(text)?.[1];
  if (label === undefined) {
    return { problem: 'it holds no "-----BEGIN … PRIVATE KEY-----" block' };
  }
  if (!label.endsWith('PRIVATE KEY')) {
    return { problem: `it holds a ${label}, not a private key (${FIX})` };
  }
  let type: string | undefined;
  try {
    type = createPrivateKey(text).asymmetricKeyType;
  } catch (error) {
    const reason = (error as Error).message.split('\n')[0];
    return {
      problem: `OpenSSL cannot decode it (${reason}): copy the .pem file again, or generate a new private key in the App settings`,
    };
  }
  if (type !== 'rsa') {
    return { problem: `it is an ${type ?? 'unknown'} key, and GitHub Apps sign with RSA (${FIX})` };
  }
  return { pem: text };
}
