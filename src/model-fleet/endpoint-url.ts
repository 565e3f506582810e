// One entry of FROGNANO_MODEL_URL (a comma-separated list): the base URL the client talks to,
// without credentials; a name for logs, metrics and records (no credentials either); and the
// basic-auth header a proxy in front of the server may want (`http://user:password@host/v1`).
import { registerSecret } from '../redact.js';

export interface EndpointSpec {
  /** e.g. `gpu-a.lan:8000`; unique within the list, safe to show. */
  name: string;
  /** The URL as the client uses it: no `user:password@`, no trailing slash. */
  baseUrl: string;
  /** `Basic …` when the URL carried credentials; sent as the Authorization header. */
  authorization?: string;
}

const URL_SHAPE = /^https?:\/\/[^\s,]+$/;

/** Splits a comma-separated list (one URL is a list of one); empty entries are ignored. */
export function splitModelUrls(raw: string): string[] {
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

/**
 * Why a value is not a list of http(s) URLs the client can use (the config check), or undefined
 * when it is. The client appends `/chat/completions` to each URL's path: a query or fragment
 * would end up in front of it, and every request would miss.
 */
export function modelUrlListProblem(raw: string): string | undefined {
  const parts = splitModelUrls(raw);
  const usable = (part: string) => URL_SHAPE.test(part) && URL.canParse(part);
  if (parts.length > 0 && parts.every(usable)) {
    if (!parts.some((part) => /[?#]/.test(new URL(part).href))) return undefined;
    return 'must be http(s) URLs without a query (?…) or fragment (#…), such as http://gpu-a:8000/v1: the client adds /chat/completions to the path';
  }
  return raw.includes(',')
    ? 'must be http(s) URLs separated by commas, such as http://gpu-a:8000/v1,http://gpu-b:8000/v1 (write a comma inside a password as %2C)'
    : 'must be an http(s) URL such as http://localhost:8000/v1';
}

/** The entries as endpoints: credentials moved to a header and registered as secrets. */
export function parseEndpoints(urls: readonly string[]): EndpointSpec[] {
  const seen = new Map<string, number>();
  return urls.map((raw) => {
    const url = new URL(raw.trim());
    const user = decodeURIComponent(url.username);
    const password = decodeURIComponent(url.password);
    url.username = '';
    url.password = '';
    let name = endpointName(url);
    const count = (seen.get(name) ?? 0) + 1;
    seen.set(name, count);
    if (count > 1) name = `${name}#${count}`;
    const spec: EndpointSpec = { name, baseUrl: url.toString().replace(/\/+$/, '') };
    if (user !== '' || password !== '') {
      const token = Buffer.from(`${user}:${password}`).toString('base64');
      registerSecret(password);
      registerSecret(token);
      spec.authorization = `Basic ${token}`;
    }
    return spec;
  });
}

/** host:port, then the path when it is not the usual `/v1` (two proxies on one host differ). */
function endpointName(url: URL): string {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const path = url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  return `${url.hostname}:${port}${path}`;
}
