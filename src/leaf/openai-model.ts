// The Model seam on the `openai` SDK, pointed at any OpenAI-compatible server (vLLM, SGLang,
// llama.cpp). Sends exactly the request of leaf-protocol.md §2 and reduces the answer to the
// assistant-field whitelist of §1.
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { z } from 'zod';
import { registerSecret } from '../redact.js';
import type { AssistantMessage, ChatMessage, ToolCall } from './messages.js';
import { MAX_MODEL_RESPONSE_BYTES, modelEndpointFetch, readCappedText } from './model-fetch.js';
import type { Model, ModelResponse, TokenUsage } from './model.js';
import { DEFAULT_REQUEST, type ToolSchema } from './protocol.js';

// Fields the client sets itself; letting extraBody override them would silently change §2.
const RESERVED_BODY_FIELDS = [
  'model',
  'messages',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'temperature',
  'max_completion_tokens',
  'stream',
];

export const ModelConfig = z.object({
  /** e.g. `http://localhost:8000/v1` */
  baseUrl: z.url({ protocol: /^https?$/, error: 'baseUrl must be an http(s) URL' }),
  model: z.string().min(1).default(DEFAULT_REQUEST.model),
  /** Local servers usually need none; a placeholder is sent then (the SDK requires one). */
  apiKey: z.string().optional(),
  temperature: z.number().min(0).max(2).default(DEFAULT_REQUEST.temperature),
  maxCompletionTokens: z.number().int().positive().default(DEFAULT_REQUEST.maxCompletionTokens),
  parallelToolCalls: z.boolean().default(DEFAULT_REQUEST.parallelToolCalls),
  /** Sent at the top level of the body. Replaces the defaults as a whole when given. */
  extraBody: z
    .record(z.string(), z.unknown())
    .refine((body) => !RESERVED_BODY_FIELDS.some((key) => key in body), {
      error: `extraBody must not set ${RESERVED_BODY_FIELDS.join(', ')}: use the dedicated settings`,
    })
    .default(() => structuredClone(DEFAULT_REQUEST.extraBody) as Record<string, unknown>),
  /** Per attempt. */
  timeoutMs: z.number().int().positive().default(600_000),
  /** Extra HTTP headers on every request (never in the body, which stays Leaf-exact). */
  headers: z.record(z.string(), z.string()).optional(),
  /** Retries on connection errors, timeouts, 408/409/429 and 5xx, with exponential backoff. */
  maxRetries: z.number().int().min(0).max(20).default(4),
});
export type ModelConfig = z.infer<typeof ModelConfig>;
export type ModelConfigInput = z.input<typeof ModelConfig>;

/** vLLM without `--api-key` accepts any key; the SDK refuses to run without one. */
const PLACEHOLDER_API_KEY = 'EMPTY';

export function createOpenAIModel(input: ModelConfigInput): Model {
  const config = ModelConfig.parse(input);
  const client = createClient(config);

  return {
    async complete(messages, tools, signal): Promise<ModelResponse> {
      const started = performance.now();
      const completion = await client.chat.completions.create(
        requestBody(config, messages, tools),
        {
          signal,
        },
      );
      const latencyMs = performance.now() - started;
      return reduceCompletion(completion, latencyMs);
    },
  };
}

/** The §2 body, key order fixed: model, messages, tools, tool_choice, parallel_tool_calls, temperature, max_completion_tokens, extra body. */
function requestBody(
  config: ModelConfig,
  messages: readonly ChatMessage[],
  tools: readonly ToolSchema[],
): OpenAI.ChatCompletionCreateParamsNonStreaming {
  const body: Record<string, unknown> = {
    model: config.model,
    messages,
    tools,
    tool_choice: 'auto',
    parallel_tool_calls: config.parallelToolCalls,
    temperature: config.temperature,
    max_completion_tokens: config.maxCompletionTokens,
    ...config.extraBody,
  };
  // The SDK serializes the object as given; the extra sampling fields are vLLM/SGLang
  // extensions the SDK's types do not know.
  return body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
}

function createClient(config: ModelConfig): OpenAI {
  return new OpenAI({
    baseURL: config.baseUrl,
    apiKey: config.apiKey || PLACEHOLDER_API_KEY,
    // Explicit nulls keep OPENAI_ORG_ID / OPENAI_PROJECT_ID from the environment out of
    // requests to a third-party endpoint.
    organization: null,
    project: null,
    timeout: config.timeoutMs,
    maxRetries: config.maxRetries,
    ...(config.headers ? { defaultHeaders: config.headers } : {}),
    fetch: modelEndpointFetch({ credentials: endpointCredentials(config) }),
  });
}

/**
 * What of a configuration is secret, longest first: the API key, the Authorization header's
 * token and, for Basic, `user:password`, the password and its URL-encoded form. Each is
 * registered, however short (see redact.ts for how short ones are matched).
 */
export function endpointCredentials(config: ModelConfig): string[] {
  const found = new Set<string>();
  if (config.apiKey) found.add(config.apiKey);
  const header = Object.entries(config.headers ?? {}).find(
    ([name]) => name.toLowerCase() === 'authorization',
  )?.[1];
  const [, scheme, token] = /^(\S+)\s+(.+)$/.exec(header ?? '') ?? [];
  if (token) {
    found.add(token);
    if (scheme?.toLowerCase() === 'basic') {
      const pair = Buffer.from(token, 'base64').toString('utf8');
      const password = pair.slice(pair.indexOf(':') + 1);
      for (const value of [pair, password, encodeURIComponent(password)]) found.add(value);
    }
  }
  const list = [...found].filter((value) => value !== '').sort((a, b) => b.length - a.length);
  for (const value of list) registerSecret(value, { short: true });
  return list;
}

const RawToolCall = z.object({
  id: z.string().nullish(),
  type: z.string().nullish(),
  function: z.object({
    name: z.string(),
    // Some servers send an object instead of the JSON string the API specifies.
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
  }),
});

const RawCompletion = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          tool_calls: z.array(RawToolCall).nullish(),
          reasoning_content: z.string().nullish(),
          reasoning: z.string().nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1, { error: 'the model response has no choices' }),
  usage: z
    .object({
      prompt_tokens: z.number().nullish(),
      completion_tokens: z.number().nullish(),
      total_tokens: z.number().nullish(),
    })
    .nullish(),
});

/** Reduces a completion to the §1 whitelist. Exported for tests. */
export function reduceCompletion(completion: unknown, latencyMs: number): ModelResponse {
  const parsed = RawCompletion.safeParse(completion);
  if (!parsed.success) {
    throw new Error(
      `malformed chat completion from the model server: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
    );
  }
  const choice = parsed.data.choices[0]!;
  const raw = choice.message;
  const message: AssistantMessage = { role: 'assistant', content: raw.content ?? null };
  const toolCalls: ToolCall[] = (raw.tool_calls ?? []).map((call, index) => ({
    // ids pair tool messages with calls; a server that sends none still needs unique ones
    id: call.id || `call_${randomBytes(6).toString('hex')}_${index}`,
    type: 'function',
    function: {
      name: call.function.name,
      arguments:
        typeof call.function.arguments === 'string'
          ? call.function.arguments
          : call.function.arguments == null
            ? ''
            : JSON.stringify(call.function.arguments),
    },
  }));
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  // Echo reasoning under the name(s) the server used: vLLM reads only `reasoning`,
  // SGLang only `reasoning_content` (leaf-protocol.md §1).
  if (raw.reasoning_content) message.reasoning_content = raw.reasoning_content;
  if (raw.reasoning) message.reasoning = raw.reasoning;

  const usage = parsed.data.usage;
  const response: ModelResponse = {
    message,
    finishReason: choice.finish_reason ?? null,
    latencyMs,
  };
  if (usage) {
    const reduced: TokenUsage = {};
    if (typeof usage.prompt_tokens === 'number') reduced.promptTokens = usage.prompt_tokens;
    if (typeof usage.completion_tokens === 'number')
      reduced.completionTokens = usage.completion_tokens;
    if (typeof usage.total_tokens === 'number') reduced.totalTokens = usage.total_tokens;
    response.usage = reduced;
  }
  return response;
}

const ModelList = z.object({
  data: z.array(
    z.object({
      id: z.string(),
      // vLLM and SGLang also say where the weights came from and the context length.
      root: z.string().nullish().catch(null),
      max_model_len: z.number().nullish().catch(null),
      owned_by: z.string().nullish().catch(null),
    }),
  ),
});

/** What `GET /models` says of the configured model. */
export interface ServedModel {
  id: string;
  root: string | null;
  maxModelLen: number | null;
  ownedBy: string | null;
}

/** The endpoint cannot serve this run; the message is the one line to show the user. */
export class ModelEndpointError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelEndpointError';
  }
}

/**
 * Fails fast, in one actionable line, when the endpoint is down or does not serve the
 * configured model. `GET {baseUrl}/models`.
 */
export async function checkModelEndpoint(
  input: ModelConfigInput,
  options: { timeoutMs?: number } = {},
): Promise<void> {
  await inspectModelEndpoint(input, options);
}

/** checkModelEndpoint, returning what the endpoint says of the configured model. */
export async function inspectModelEndpoint(
  input: ModelConfigInput,
  options: { timeoutMs?: number } = {},
): Promise<ServedModel> {
  const config = ModelConfig.parse(input);
  endpointCredentials(config);
  const url = `${config.baseUrl.replace(/\/+$/, '')}/models`;
  const startHint = `start an OpenAI-compatible server there first, e.g. \`vllm serve ${config.model} --enable-auto-tool-choice --tool-call-parser qwen3_coder --reasoning-parser qwen3\`, or point the model URL at a running one`;
  const timeoutMs = options.timeoutMs ?? 10_000;
  let response: Response;
  try {
    response = await fetch(url, {
      // The configured headers win, as on chat requests (a proxy's basic auth).
      headers: {
        authorization: `Bearer ${config.apiKey || PLACEHOLDER_API_KEY}`,
        ...config.headers,
      },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    // No answer in time is not "nothing there": starting a server would not help.
    if (error instanceof Error && error.name === 'TimeoutError') {
      throw new ModelEndpointError(
        `model endpoint ${config.baseUrl} did not answer GET /models within ${Math.round(timeoutMs / 1000)} s (stuck, overloaded, or behind a firewall that drops packets): check the server's log and that its port is open from this host`,
      );
    }
    // Fetch refuses a few ports outright (6000, 6667, …): no server there would ever be reached.
    if (causeText(error) === 'bad port') {
      const port = new URL(config.baseUrl).port;
      throw new ModelEndpointError(
        `model endpoint ${config.baseUrl} cannot be used (Node's fetch refuses port ${port}, a "bad port" of the Fetch standard, whatever listens there): serve the model on another port, such as 8000`,
      );
    }
    throw new ModelEndpointError(
      `model endpoint ${config.baseUrl} is unreachable (${causeText(error)}): ${startHint}`,
    );
  }
  if (response.status === 401 || response.status === 403) {
    // A URL's `user:password@` becomes a Basic header (for a proxy): then those were refused.
    const basic = /^basic /i.test(config.headers?.authorization ?? '');
    throw new ModelEndpointError(
      basic
        ? `model endpoint ${config.baseUrl} refused the credentials of its URL (HTTP ${response.status} on GET /models): correct the user:password@ in FROGNANO_MODEL_URL (a proxy's basic auth)`
        : `model endpoint ${config.baseUrl} refused the API key (HTTP ${response.status} on GET /models): set the key the server was started with`,
    );
  }
  const read = await readCappedText(response).catch(() => ({ text: '', tooLarge: false }));
  if (read.tooLarge) {
    throw new ModelEndpointError(
      `model endpoint ${config.baseUrl} answered GET /models with more than ${MAX_MODEL_RESPONSE_BYTES / (1024 * 1024)} MiB (a model list is a few hundred bytes): check that the URL points at an OpenAI-compatible server, not a file or a misbehaving proxy`,
    );
  }
  const text = read.text;
  const notApi = `(no OpenAI-compatible API at that path): check that the URL ends in /v1 and points at an OpenAI-compatible server`;
  if (response.status >= 500) {
    // A 502/503 is a proxy whose server is down or a server still loading: the URL is right.
    throw new ModelEndpointError(
      `model endpoint ${config.baseUrl} answered HTTP ${response.status} to GET /models (the server, or a proxy in front of it, failed): check the server's log (it may still be loading the model), and that a proxy points at a running one`,
    );
  }
  if (!response.ok) {
    throw new ModelEndpointError(
      `model endpoint ${config.baseUrl} answered HTTP ${response.status} to GET /models ${notApi}`,
    );
  }
  let list: z.infer<typeof ModelList>;
  try {
    list = ModelList.parse(JSON.parse(text));
  } catch {
    throw new ModelEndpointError(
      `model endpoint ${config.baseUrl} did not answer GET /models with a model list ${notApi}`,
    );
  }
  const entry = list.data.find((e) => e.id === config.model);
  if (!entry) {
    const ids = list.data.map((e) => e.id);
    const served = ids.length > 0 ? ids.join(', ') : 'nothing';
    throw new ModelEndpointError(
      `model endpoint ${config.baseUrl} does not serve ${config.model} (it serves: ${served}): configure one of those models or serve ${config.model} there`,
    );
  }
  return {
    id: entry.id,
    root: entry.root ?? null,
    maxModelLen: entry.max_model_len ?? null,
    ownedBy: entry.owned_by ?? null,
  };
}

function causeText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause;
    if (cause instanceof Error) {
      const code = (cause as NodeJS.ErrnoException).code;
      return code ? `${code}` : cause.message;
    }
    return error.message;
  }
  return String(error);
}
