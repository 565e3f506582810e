// Which errors mean "this endpoint is not answering" (move the loop to another one) rather than
// "this request is wrong" (a context overflow, a refused key: the same anywhere).
import { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';

export type EndpointFailureKind = 'connection' | 'timeout' | 'server_error';

/** Connection refused or dropped, a timeout, or a 5xx, after the client's own retries. */
export function endpointFailureKind(error: unknown): EndpointFailureKind | undefined {
  if (error instanceof APIConnectionTimeoutError) return 'timeout';
  if (error instanceof APIConnectionError) return 'connection';
  if (error instanceof APIError && typeof error.status === 'number' && error.status >= 500) {
    return 'server_error';
  }
  return undefined;
}

/** Longest errorChain: a proxy's 5xx carries its whole HTML error page as the message. */
const MAX_CHAIN_CHARS = 400;

/** The message and its causes on one line, e.g. `Connection error.: fetch failed: ECONNREFUSED`. */
export function errorChain(error: unknown): string {
  const line = causes(error).replace(/\s+/g, ' ').trim();
  return line.length > MAX_CHAIN_CHARS ? `${line.slice(0, MAX_CHAIN_CHARS - 1)}…` : line;
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
