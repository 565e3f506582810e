// The one way a credential reaches host git: an Authorization header scoped to the remote's
// origin, handed over as GIT_CONFIG_KEY/VALUE environment entries by the caller. Never argv,
// never a remote URL, never a config file; the encoded value is registered for redaction.
import { registerSecret } from '../redact.js';

export interface GitCredential {
  username: string;
  password: string;
}

/** `[key, value]` for `http.<origin>/.extraHeader`, or undefined for non-http(s) remotes. */
export function gitAuthHeader(
  url: string,
  credential: GitCredential | undefined,
): [string, string] | undefined {
  if (!credential || !/^https?:\/\//i.test(url)) return undefined;
  const basic = basicCredential(credential);
  registerSecret(credential.password);
  registerSecret(basic);
  return [`http.${new URL(url).origin}/.extraHeader`, `Authorization: Basic ${basic}`];
}

/** The `user:password` pair as HTTP Basic encodes it (also how it may show up in messages). */
export function basicCredential(credential: GitCredential): string {
  return Buffer.from(`${credential.username}:${credential.password}`).toString('base64');
}
