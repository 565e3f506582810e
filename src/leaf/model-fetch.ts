// Every HTTP answer from a model endpoint passes through here: its body is read only up to a
// cap (a completion of 8–32k tokens is well under a megabyte, and one 450 MB answer must not take
// the process past its memory), and an error body is redacted of the endpoint's own credentials
// before anything keeps it (a gateway may echo the request it got, Authorization header and all).
import { redactCredentials } from '../redact.js';

/** The most bytes read of one response body from a model endpoint (README: model endpoints). */
export const MAX_MODEL_RESPONSE_BYTES = 8 * 1024 * 1024;

/** A model endpoint answered more than the cap: that request fails, and the endpoint with it. */
export class ModelResponseTooLarge extends Error {
  constructor(what: string, maxBytes: number) {
    super(
      `the model endpoint's ${what} exceeded the ${formatBytes(maxBytes)} response cap (a chat completion is far smaller): the endpoint or a proxy in front of it is misbehaving; check its log`,
    );
    this.name = 'ModelResponseTooLarge';
  }
}

/** Marks an error response made from an oversized body, so the failure counts as the endpoint's. */
export const TOO_LARGE_HEADER = 'x-frognano-response-too-large';

export interface ModelFetchOptions {
  /** The endpoint's credentials (API key, Basic token, user:password, password). */
  credentials: readonly string[];
  maxBytes?: number;
}

/**
 * A `fetch` for the OpenAI client: success bodies stream through a byte cap (the SDK's parse
 * then fails with ModelResponseTooLarge); error bodies are read up to the cap, redacted, and put
 * in the `error` envelope the SDK reads (SGLang and older vLLM answer `{"object":"error",
 * "message":...}` without it, and a context overflow must be recognisable from its text, §5).
 */
export function modelEndpointFetch(options: ModelFetchOptions): typeof fetch {
  const maxBytes = options.maxBytes ?? MAX_MODEL_RESPONSE_BYTES;
  return async (url, init) => {
    const response = await fetch(url, init);
    const headers = new Headers(response.headers);
    headers.delete('content-length');
    headers.delete('content-encoding');
    if (response.ok) {
      return new Response(cappedBody(response, maxBytes, 'answer'), {
        status: response.status,
        statusText: response.statusText,
        headers,
      });
    }
    const read = await readCappedText(response, maxBytes);
    if (read.tooLarge) {
      // Asking again would only read another 8 MiB: the loop moves to another endpoint now.
      headers.set('x-should-retry', 'false');
      headers.set(TOO_LARGE_HEADER, '1');
    }
    const text = read.tooLarge
      ? JSON.stringify({
          error: { message: new ModelResponseTooLarge('error body', maxBytes).message },
        })
      : normalizeErrorBody(read.text, options.credentials);
    return new Response(text, {
      status: response.status,
      statusText: redactCredentials(response.statusText, options.credentials),
      headers,
    });
  };
}

/** The body as text, or that it is over the cap (the rest is never read: the socket closes). */
export async function readCappedText(
  response: Response,
  maxBytes: number = MAX_MODEL_RESPONSE_BYTES,
): Promise<{ text: string; tooLarge: boolean }> {
  if (!response.body) return { text: '', tooLarge: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return { text: '', tooLarge: true };
    }
    chunks.push(value);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), tooLarge: false };
}

/** The body as a stream that errors with ModelResponseTooLarge past `maxBytes`. */
function cappedBody(response: Response, maxBytes: number, what: string): ReadableStream | null {
  if (!response.body) return null;
  const declared = Number(response.headers.get('content-length') ?? NaN);
  const reader = response.body.getReader();
  let size = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (declared > maxBytes) {
        await reader.cancel().catch(() => undefined);
        controller.error(new ModelResponseTooLarge(what, maxBytes));
        return;
      }
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => undefined);
        controller.error(new ModelResponseTooLarge(what, maxBytes));
        return;
      }
      controller.enqueue(value);
    },
    async cancel(reason) {
      await reader.cancel(reason);
    },
  });
}

function normalizeErrorBody(raw: string, credentials: readonly string[]): string {
  let parsed: unknown;
  try {
    // Redacted after decoding: an encoder's escapes (`\/`, `\u00e4`) would hide a credential
    // from a match on the raw text, and the SDK's parse would then turn it back.
    parsed = redactStrings(JSON.parse(raw), credentials);
  } catch {
    parsed = undefined;
  }
  const text = parsed === undefined ? redactCredentials(raw, credentials) : JSON.stringify(parsed);
  if (isRecord(parsed)) {
    if (isRecord(parsed.error)) return text;
    if (typeof parsed.error === 'string')
      return JSON.stringify({ error: { message: parsed.error } });
    if (typeof parsed.message === 'string') return JSON.stringify({ error: parsed });
    if (typeof parsed.detail === 'string')
      return JSON.stringify({ error: { message: parsed.detail } });
  }
  const message = text.trim() === '' ? 'empty error body' : text.trim().slice(0, 2000);
  return JSON.stringify({ error: { message } });
}

/** A parsed JSON value with every string in it (keys too) redacted of the credentials. */
function redactStrings(value: unknown, credentials: readonly string[]): unknown {
  if (typeof value === 'string') return redactCredentials(value, credentials);
  if (Array.isArray(value)) return value.map((item) => redactStrings(item, credentials));
  if (!isRecord(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [
      redactCredentials(key, credentials),
      redactStrings(item, credentials),
    ]),
  );
}

function formatBytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
