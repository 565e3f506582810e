// A scripted OpenAI-compatible chat-completions server on a real socket: the only stand-in
// for the GPU model in tests. It answers from a script and records every request as sent.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** The body exactly as received. */
  rawBody: string;
  /** The body parsed as JSON (undefined when empty or not JSON). */
  body: ChatRequestBody | undefined;
  /** 0-based index among chat-completions requests (undefined for other paths). */
  chatIndex?: number;
  /** `performance.now()` when the request's body had arrived. */
  receivedAt: number;
}

/** The parts of a chat-completions request body the tests look at; the rest stays unknown. */
export interface ChatRequestBody {
  model?: string;
  messages?: Record<string, unknown>[];
  tools?: unknown[];
  [key: string]: unknown;
}

export interface ScriptedToolCall {
  id?: string;
  name: string;
  /** A string is sent as is (it may be invalid JSON on purpose); an object is JSON-encoded. */
  arguments: string | Record<string, unknown>;
}

export interface UsageSpec {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}

/** A successful chat completion. */
export interface MessageSpec {
  kind?: 'message';
  content?: string | null;
  toolCalls?: ScriptedToolCall[];
  /** SGLang (and Leaf) name of the reasoning field. */
  reasoningContent?: string | null;
  /** Current vLLM name of the reasoning field. */
  reasoning?: string | null;
  /** Default: `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: string | null;
  /** Omitted from the response when undefined; `total_tokens` is filled in unless given. */
  usage?: UsageSpec;
  /** Send `"tool_calls": []` when there are none, as vLLM does (default true). */
  emptyToolCallsArray?: boolean;
  /** Extra fields on the message (e.g. `refusal`, `annotations`). */
  extraMessageFields?: Record<string, unknown>;
  /** Extra fields on the choice (e.g. SGLang's `matched_stop`). */
  extraChoiceFields?: Record<string, unknown>;
  delayMs?: number;
}

export interface ErrorSpec {
  kind: 'error';
  status: number;
  /** A JSON value (encoded) or a raw string body. */
  body?: unknown;
  headers?: Record<string, string>;
  delayMs?: number;
}

/** Destroy the socket without answering. */
export interface DropSpec {
  kind: 'drop';
  delayMs?: number;
}

/** Never answer (until the client gives up or the server closes). */
export interface HangSpec {
  kind: 'hang';
}

export type ResponseSpec = MessageSpec | ErrorSpec | DropSpec | HangSpec;

export type ScriptStep =
  ResponseSpec | ((request: RecordedRequest) => ResponseSpec | Promise<ResponseSpec>);

export interface ScriptedModelServerOptions {
  /** Model ids listed by `GET /v1/models` (default: FrogNano's id). */
  models?: string[];
  script?: ScriptStep[];
  /** Keep every request (default true). The benchmark turns this off to measure the harness only. */
  record?: boolean;
  /** When set, requests without `Authorization: Bearer <apiKey>` get a 401 (as `vllm serve --api-key`). */
  apiKey?: string;
  /** Answer once the script is used up (default: HTTP 400 `script exhausted`, which is never retried). */
  onExhausted?: ScriptStep;
  /** `max_model_len` in `GET /v1/models` (default 131072). */
  maxModelLen?: number;
  /** `root` in `GET /v1/models` (default: the id, as vLLM says for a model served by name). */
  root?: string;
  /** When set, `GET /version` answers `{"version": ...}` (as vLLM does). */
  version?: string;
  /**
   * Extra delay of an answer given the chat requests in flight when it arrived (itself
   * included): a GPU whose steps slow down as it batches more sequences.
   */
  latency?: (inFlight: number) => number;
}

export interface ScriptedModelServer {
  /** e.g. `http://127.0.0.1:43567/v1` */
  readonly baseUrl: string;
  readonly port: number;
  /** Every request, in arrival order (all paths). */
  readonly requests: RecordedRequest[];
  /** Only `POST /v1/chat/completions` requests. */
  readonly chatRequests: RecordedRequest[];
  /** Chat requests that arrived after the script was used up. */
  readonly exhaustedRequests: number;
  /** Chat requests being answered now, and the most there ever were at once. */
  readonly inFlight: number;
  readonly maxInFlight: number;
  /** Append steps to the script. */
  push(...steps: ScriptStep[]): void;
  /** Steps not consumed yet. */
  remaining(): number;
  close(): Promise<void>;
}

export const DEFAULT_SCRIPTED_MODEL = 'microsoft/FrogNano-4B-2609';

export async function startScriptedModelServer(
  options: ScriptedModelServerOptions = {},
): Promise<ScriptedModelServer> {
  const models = options.models ?? [DEFAULT_SCRIPTED_MODEL];
  const script: ScriptStep[] = [...(options.script ?? [])];
  const record = options.record ?? true;
  const requests: RecordedRequest[] = [];
  const chatRequests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let chatCount = 0;
  let exhausted = 0;
  let closing = false;
  let inFlight = 0;
  let maxInFlight = 0;

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      handle(req, res, rawBody).catch((error: unknown) => {
        if (!res.headersSent && !res.destroyed) {
          sendJson(res, 500, { error: { message: `scripted server failed: ${String(error)}` } });
        }
      });
    });
  });
  // keep-alive sockets must not keep close() waiting
  server.keepAliveTimeout = 1000;

  async function handle(req: IncomingMessage, res: ServerResponse, rawBody: string): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    const isChat = method === 'POST' && path === '/v1/chat/completions';
    const needParse = isChat && record;
    const recorded: RecordedRequest = {
      method,
      path,
      headers: req.headers,
      rawBody: record ? rawBody : '',
      body: needParse ? parseJson(rawBody) : undefined,
      receivedAt: performance.now(),
    };
    if (isChat) recorded.chatIndex = chatCount++;
    if (record) {
      requests.push(recorded);
      if (isChat) chatRequests.push(recorded);
    }

    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      sendJson(res, 401, {
        error: { message: 'Unauthorized', type: 'AuthenticationError', code: 401 },
      });
      return;
    }
    if (method === 'GET' && path === '/v1/models') {
      sendJson(res, 200, {
        object: 'list',
        data: models.map((id) => ({
          id,
          object: 'model',
          created: 1_700_000_000,
          owned_by: 'scripted',
          root: options.root ?? id,
          max_model_len: options.maxModelLen ?? 131072,
        })),
      });
      return;
    }
    if (method === 'GET' && path === '/version' && options.version !== undefined) {
      sendJson(res, 200, { version: options.version });
      return;
    }
    if (!isChat) {
      sendJson(res, 404, { error: { message: `no route ${method} ${path}`, code: 404 } });
      return;
    }

    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      await answerChat(req, res, rawBody, recorded);
    } finally {
      inFlight--;
    }
  }

  async function answerChat(
    req: IncomingMessage,
    res: ServerResponse,
    rawBody: string,
    recorded: RecordedRequest,
  ): Promise<void> {
    let step = script.shift();
    if (step === undefined) {
      exhausted++;
      step = options.onExhausted ?? {
        kind: 'error',
        status: 400,
        body: {
          error: {
            message: `scripted server: script exhausted after ${chatCount - 1} requests`,
            type: 'BadRequestError',
            code: 400,
          },
        },
      };
    }
    if (recorded.body === undefined && typeof step === 'function') {
      recorded.body = parseJson(rawBody);
    }
    const load = inFlight;
    const spec = typeof step === 'function' ? await step(recorded) : step;
    if (spec.kind === 'hang') {
      // Counted in flight until the client gives up or the server closes.
      await new Promise<void>((resolve) => res.once('close', resolve));
      return;
    }
    const delayMs =
      (spec.delayMs ?? 0) +
      (options.latency && (spec.kind ?? 'message') === 'message' ? options.latency(load) : 0);
    if (delayMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          resolve();
        }, delayMs);
        timers.add(timer);
      });
    }
    if (closing || res.destroyed) return;
    if (spec.kind === 'drop') {
      req.socket.destroy();
      return;
    }
    if (spec.kind === 'error') {
      const body = typeof spec.body === 'string' ? spec.body : JSON.stringify(spec.body ?? {});
      res.writeHead(spec.status, {
        'content-type': typeof spec.body === 'string' ? 'text/plain' : 'application/json',
        ...spec.headers,
      });
      res.end(body);
      return;
    }
    sendJson(res, 200, completionBody(spec, recorded.chatIndex ?? 0, models[0] ?? ''));
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    chatRequests,
    get exhaustedRequests() {
      return exhausted;
    },
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    push: (...steps) => {
      script.push(...steps);
    },
    remaining: () => script.length,
    close: async () => {
      if (closing) return;
      closing = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // hanging and delayed requests hold their sockets open: end them all now
      server.closeAllConnections();
      await closed;
    },
  };
}

function completionBody(spec: MessageSpec, index: number, model: string): Record<string, unknown> {
  const toolCalls = (spec.toolCalls ?? []).map((call, i) => ({
    id: call.id ?? `call_${index}_${i}`,
    type: 'function',
    function: {
      name: call.name,
      arguments:
        typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: spec.content === undefined ? null : spec.content,
  };
  if (toolCalls.length > 0 || (spec.emptyToolCallsArray ?? true)) message.tool_calls = toolCalls;
  if (spec.reasoningContent !== undefined) message.reasoning_content = spec.reasoningContent;
  if (spec.reasoning !== undefined) message.reasoning = spec.reasoning;
  Object.assign(message, spec.extraMessageFields);
  const choice: Record<string, unknown> = {
    index: 0,
    message,
    logprobs: null,
    finish_reason:
      spec.finishReason === undefined
        ? toolCalls.length > 0
          ? 'tool_calls'
          : 'stop'
        : spec.finishReason,
    ...spec.extraChoiceFields,
  };
  const body: Record<string, unknown> = {
    id: `chatcmpl-scripted-${index}`,
    object: 'chat.completion',
    created: 1_700_000_000 + index,
    model,
    choices: [choice],
  };
  if (spec.usage) {
    const prompt = spec.usage.prompt_tokens;
    const completion = spec.usage.completion_tokens;
    body.usage = {
      ...spec.usage,
      total_tokens:
        spec.usage.total_tokens ??
        (prompt !== undefined && completion !== undefined ? prompt + completion : undefined),
    };
  }
  return body;
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function parseJson(text: string): ChatRequestBody | undefined {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as ChatRequestBody;
  } catch {
    return undefined;
  }
}

// ---- helpers for common responses ----

/** One tool call in `tool_calls`. */
export function toolCall(
  name: string,
  args: Record<string, unknown> | string,
  extra: Omit<MessageSpec, 'kind' | 'toolCalls'> & { id?: string } = {},
): MessageSpec {
  const { id, ...rest } = extra;
  return { content: null, ...rest, toolCalls: [{ id, name, arguments: args }] };
}

/** Several tool calls in one assistant turn (parallel tool calls). */
export function toolCalls(
  calls: ScriptedToolCall[],
  extra: Omit<MessageSpec, 'kind' | 'toolCalls'> = {},
): MessageSpec {
  return { content: null, ...extra, toolCalls: calls };
}

/** A final answer: content and no tool calls, which ends the run with `agent`. */
export function finalAnswer(
  content: string,
  extra: Omit<MessageSpec, 'kind' | 'content'> = {},
): MessageSpec {
  return { ...extra, content };
}

/** The Qwen3-Coder XML tool-call block, as the model writes it. */
export function qwenXmlToolCall(name: string, params: Record<string, unknown>): string {
  const parts = Object.entries(params).map(
    ([key, value]) =>
      `<parameter=${key}>\n${typeof value === 'string' ? value : JSON.stringify(value)}\n</parameter>\n`,
  );
  return `<tool_call>\n<function=${name}>\n${parts.join('')}</function>\n</tool_call>`;
}

/** The Hermes-style JSON tool-call block. */
export function qwenJsonToolCall(name: string, args: Record<string, unknown>): string {
  return `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
}

/**
 * vLLM's context-overflow 400. `shape: 'nested'` is current vLLM (`{"error": {...}}`);
 * `flat` is SGLang and older vLLM (`{"object": "error", "message": ...}`).
 */
export function contextOverflow(
  options: { shape?: 'nested' | 'flat'; message?: string } = {},
): ErrorSpec {
  const message =
    options.message ??
    "This model's maximum context length is 131072 tokens. However, you requested 8192 output tokens and your prompt contains at least 124000 input tokens, for a total of at least 132192 tokens. Please reduce the length of the input prompt or the number of requested output tokens. None";
  const info = { message, type: 'BadRequestError', param: null, code: 400 };
  return {
    kind: 'error',
    status: 400,
    body: options.shape === 'flat' ? { object: 'error', ...info } : { error: info },
  };
}

export function serverError(status = 500, message = 'scripted internal error'): ErrorSpec {
  return {
    kind: 'error',
    status,
    body: { error: { message, type: 'InternalServerError', code: status } },
  };
}

export function rateLimited(retryAfterSeconds: number): ErrorSpec {
  return {
    kind: 'error',
    status: 429,
    headers: { 'retry-after': String(retryAfterSeconds) },
    body: { error: { message: 'scripted rate limit', type: 'RateLimitError', code: 429 } },
  };
}

export function dropConnection(delayMs = 0): DropSpec {
  return { kind: 'drop', delayMs };
}
