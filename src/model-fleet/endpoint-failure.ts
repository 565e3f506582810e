// Which errors mean "this endpoint is not answering" (move the loop to another one) rather than
// "this request is wrong" (a context overflow, a refused key: the same anywhere).
import { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { ModelResponseTooLarge, TOO_LARGE_HEADER } from '../leaf/model-fetch.js';
import { oneLine } from '../one-line.js';

export type EndpointFailureKind = 'connection' | 'timeout' | 'server_error' | 'too_large';

/**
 * Connection refused or dropped, a timeout, or a 5xx, after the client's own retries; or an
 * answer (or error) over the response cap, which another endpoint may well not send.
 */
export function endpointFailureKind(error: unknown): EndpointFailureKind | undefined {
  if (error instanceof ModelResponseTooLarge) return 'too_large';
  if (error instanceof APIError && error.headers?.get(TOO_LARGE_HEADER)) return 'too_large';
  if (error instanceof APIConnectionTimeoutError) return 'timeout';
  if (error instanceof APIConnectionError) return 'connection';
  if (error instanceof APIError && typeof error.status === 'number' && error.status >= 500) {
    return 'server_error';
  }
  return undefined;
}

/**
 * The message and its causes on one line, e.g. `Connection error.: fetch failed: ECONNREFUSED`;
 * short, as a proxy's 5xx carries its whole HTML error page as the message.
 */
export function errorChain(error: unknown): string {
  return oneLine(causes(error));
}

function causes(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    const text = current instanceof Error ? current.message : String(current);
    const shown = text || (typeof code === 'string' ? code : '');
    if (shown && !parts.includes(shown)) parts.push(shown);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(': ') || 'unknown error';
}
