// The webhook endpoint's body guard. Probot's webhook middleware reads the whole body into memory
// before it checks the signature, so anyone could make it buffer gigabytes: every request Probot
// would route to the webhook handler is read here instead, counting bytes as they arrive.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';

/** GitHub caps webhook payloads at 25 MB; anything bigger is not GitHub. */
export const MAX_WEBHOOK_BYTES = 25 * 1024 * 1024;
/** All webhook bodies being read at once may hold at most this much memory. */
export const MAX_WEBHOOK_BYTES_IN_FLIGHT = 4 * MAX_WEBHOOK_BYTES;

/**
 * GitHub gives up on a delivery that takes more than 10 s; a body still arriving after that is
 * not GitHub's, and would hold its share of the in-flight budget for Node's 5-minute request
 * timeout: four such senders would turn every real delivery away.
 */
export const WEBHOOK_BODY_TIMEOUT_MS = 10_000;

/** The raw body of the webhook request being handled (its hash detects replays). */
const webhookBody = new AsyncLocalStorage<{ sha256: string }>();

/**
 * @octokit/webhooks' path test, verbatim: trailing slashes dropped, then resolved as a URL, so
 * `/api/github/webhooks/`, `/api/github/x/../webhooks` and `//host/api/github/webhooks` all
 * reach the webhook handler. Whatever it routes there, we guard.
 */
function webhookPathname(url: string): string | undefined {
  try {
    return new URL(url.replace(/\/+$/, '') || '/', 'http://localhost').pathname;
  } catch {
    return undefined;
  }
}

/**
 * A declared length over the cap is refused unread, and a body (chunked or not) that grows past
 * it is cut off at the cap, the connection closed. The body read is handed to Probot as
 * `rawBody` (which its middleware takes instead of reading the stream), and its SHA-256 to our
 * handler.
 */
export function guardWebhookBodies(
  server: HttpServer,
  webhookPath: string,
  log: Logger,
  bodyTimeoutMs: number,
): void {
  const target = webhookPathname(webhookPath);
  const listeners = server.listeners('request') as ((
    req: IncomingMessage,
    res: ServerResponse,
  ) => void)[];
  const budget: InFlight = { bytes: 0 };
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const forward = () => {
      for (const listener of listeners) listener.call(server, req, res);
    };
    if (webhookPathname(req.url ?? '/') !== target) return forward();
    readBody(req, res, { log, bodyTimeoutMs, budget, forward });
  });
}

/** Bytes of all webhook bodies being read at once. */
interface InFlight {
  bytes: number;
}

interface BodyReading {
  log: Logger;
  bodyTimeoutMs: number;
  budget: InFlight;
  forward: () => void;
}

function refuse(
  req: IncomingMessage,
  res: ServerResponse,
  log: Logger,
  refusal: { status: number; why: string; bytes: number },
): void {
  const { status, why, bytes } = refusal;
  // Nothing of the body is kept or logged; connection: close makes Node drop the socket once
  // the answer is out instead of reading on.
  log.warn({ url: (req.url ?? '').slice(0, 200), bytes, status }, why);
  if (!res.headersSent) {
    res.writeHead(status, { connection: 'close', 'content-type': 'text/plain' });
    res.end(status === 413 ? 'payload too large\n' : status === 408 ? 'too slow\n' : 'busy\n');
  }
}

function readBody(req: IncomingMessage, res: ServerResponse, reading: BodyReading): void {
  const { log, budget } = reading;
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_WEBHOOK_BYTES) {
    refuse(req, res, log, {
      status: 413,
      why: 'webhook body over the size cap refused unread',
      bytes: declared,
    });
    return;
  }
  const chunks: Buffer[] = [];
  let received = 0;
  let done = false;
  const stop = () => {
    done = true;
    clearTimeout(slow);
    budget.bytes -= received;
    req.removeListener('data', onData);
    req.removeListener('end', onEnd);
    chunks.length = 0;
  };
  const cut = (status: number, why: string) => {
    stop();
    req.pause();
    refuse(req, res, log, { status, why, bytes: received });
  };
  const slow = setTimeout(() => {
    if (done) return;
    cut(408, 'webhook body slower than GitHub sends: connection cut');
    req.socket.destroy();
  }, reading.bodyTimeoutMs).unref();
  const onData = (chunk: Buffer) => {
    if (done) return;
    received += chunk.length;
    budget.bytes += chunk.length;
    if (received > MAX_WEBHOOK_BYTES) return cut(413, 'webhook body over the size cap cut off');
    if (budget.bytes > MAX_WEBHOOK_BYTES_IN_FLIGHT) {
      return cut(503, 'too many webhook bytes in flight: connection cut');
    }
    chunks.push(chunk);
  };
  const onEnd = () => {
    if (done) return;
    const body = Buffer.concat(chunks);
    stop();
    const sha256 = createHash('sha256').update(body).digest('hex');
    // @octokit/webhooks' getPayload uses `rawBody` when `body` is an object.
    Object.assign(req, { rawBody: body, body: {} });
    webhookBody.run({ sha256 }, reading.forward);
  };
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', () => {
    if (!done) stop();
  });
  req.on('close', () => {
    if (!done) stop();
  });
}

/** The SHA-256 of the webhook body being handled; read before the handler's first await. */
export function webhookBodySha256(): string | undefined {
  return webhookBody.getStore()?.sha256;
}
