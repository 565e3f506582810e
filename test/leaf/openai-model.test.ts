import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/leaf/messages.js';
import {
  ModelConfig,
  checkModelEndpoint,
  createOpenAIModel,
  reduceCompletion,
} from '../../src/leaf/openai-model.js';
import { SYSTEM_PROMPT, TOOL_SCHEMAS } from '../../src/leaf/protocol.js';
import {
  contextOverflow,
  dropConnection,
  finalAnswer,
  rateLimited,
  serverError,
  startScriptedModelServer,
  toolCall,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';

const servers: ScriptedModelServer[] = [];
async function scripted(
  ...args: Parameters<typeof startScriptedModelServer>
): Promise<ScriptedModelServer> {
  const server = await startScriptedModelServer(...args);
  servers.push(server);
  return server;
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const HISTORY: ChatMessage[] = [
  { role: 'system', content: SYSTEM_PROMPT },
  { role: 'user', content: 'Fix the failing test.' },
];

describe('createOpenAIModel request', () => {
  it('sends exactly the §2 body, in order, with the extra body at the top level', async () => {
    const server = await scripted({ script: [finalAnswer('ok')] });
    const model = createOpenAIModel({ baseUrl: server.baseUrl });
    await model.complete(HISTORY, TOOL_SCHEMAS);

    const request = server.chatRequests[0]!;
    expect(request.path).toBe('/v1/chat/completions');
    const expected = {
      model: 'microsoft/FrogNano-4B-2609',
      messages: HISTORY,
      tools: TOOL_SCHEMAS,
      tool_choice: 'auto',
      parallel_tool_calls: true,
      temperature: 0.6,
      max_completion_tokens: 8192,
      top_p: 0.95,
      top_k: 20,
      min_p: 0,
      presence_penalty: 0,
      repetition_penalty: 1.0,
      chat_template_kwargs: { enable_thinking: true },
    };
    // Raw text equality: no other field, no other order, tools serialized byte for byte.
    expect(request.rawBody).toBe(JSON.stringify(expected));
    // A placeholder key is sent when none is configured (the servers accept any).
    expect(request.headers.authorization).toBe('Bearer EMPTY');
  });

  it('uses every configured value', async () => {
    const server = await scripted({ models: ['m'], script: [finalAnswer('ok')] });
    const model = createOpenAIModel({
      baseUrl: server.baseUrl,
      model: 'local/model',
      apiKey: 'secret-key-123',
      temperature: 0.2,
      maxCompletionTokens: 100,
      parallelToolCalls: false,
      extraBody: { top_p: 0.5, seed: 7 },
    });
    await model.complete(HISTORY, TOOL_SCHEMAS);
    const request = server.chatRequests[0]!;
    expect(request.headers.authorization).toBe('Bearer secret-key-123');
    expect(Object.keys(request.body!)).toEqual([
      'model',
      'messages',
      'tools',
      'tool_choice',
      'parallel_tool_calls',
      'temperature',
      'max_completion_tokens',
      'top_p',
      'seed',
    ]);
    expect(request.body).toMatchObject({
      model: 'local/model',
      parallel_tool_calls: false,
      temperature: 0.2,
      max_completion_tokens: 100,
      top_p: 0.5,
      seed: 7,
    });
  });

  it('rejects an extraBody that would override a §2 field', () => {
    expect(() =>
      ModelConfig.parse({ baseUrl: 'http://localhost:8000/v1', extraBody: { temperature: 1 } }),
    ).toThrow(/extraBody must not set/);
    expect(() => ModelConfig.parse({ baseUrl: 'ftp://x/v1' })).toThrow(/http/);
  });

  it('passes an assistant message with reasoning back unchanged', async () => {
    const server = await scripted({ script: [finalAnswer('ok')] });
    const model = createOpenAIModel({ baseUrl: server.baseUrl });
    const history: ChatMessage[] = [
      ...HISTORY,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'Bash', arguments: '{"command":"ls"}' } },
        ],
        reasoning: 'think',
      },
      { role: 'tool', tool_call_id: 'c1', content: 'Exit code: 0\nSTDOUT:\n\nSTDERR:\n' },
    ];
    await model.complete(history, TOOL_SCHEMAS);
    expect(server.chatRequests[0]!.rawBody).toContain(`"messages":${JSON.stringify(history)},`);
  });
});

describe('createOpenAIModel response whitelist', () => {
  it('keeps role, content, non-empty tool_calls with raw argument strings; drops the rest', async () => {
    const server = await scripted({
      script: [
        toolCall('Bash', '{"command": "pytest",  "timeout": 5}', {
          id: 'call_a',
          content: 'Running tests.',
          usage: { prompt_tokens: 100, completion_tokens: 20 },
          extraMessageFields: { refusal: null, annotations: [], audio: null },
          extraChoiceFields: { matched_stop: 151645, stop_reason: null },
        }),
      ],
    });
    const model = createOpenAIModel({ baseUrl: server.baseUrl });
    const response = await model.complete(HISTORY, TOOL_SCHEMAS);
    expect(response.message).toStrictEqual({
      role: 'assistant',
      content: 'Running tests.',
      tool_calls: [
        {
          id: 'call_a',
          type: 'function',
          function: { name: 'Bash', arguments: '{"command": "pytest",  "timeout": 5}' },
        },
      ],
    });
    expect(Object.keys(response.message)).toEqual(['role', 'content', 'tool_calls']);
    expect(response.finishReason).toBe('tool_calls');
    expect(response.usage).toEqual({ promptTokens: 100, completionTokens: 20, totalTokens: 120 });
    expect(response.latencyMs).toBeGreaterThan(0);
  });

  it('keeps null content as null, and drops an empty tool_calls array', async () => {
    const server = await scripted({ script: [{ content: null, emptyToolCallsArray: true }] });
    const response = await createOpenAIModel({ baseUrl: server.baseUrl }).complete(
      HISTORY,
      TOOL_SCHEMAS,
    );
    expect(response.message).toStrictEqual({ role: 'assistant', content: null });
    expect(response.usage).toBeUndefined();
    expect(response.finishReason).toBe('stop');
  });

  it('keeps reasoning under the field name(s) the server used, only when non-empty', async () => {
    const server = await scripted({
      script: [
        finalAnswer('a', { reasoning: 'vllm thinking', reasoningContent: null }),
        finalAnswer('b', { reasoningContent: 'sglang thinking' }),
        finalAnswer('c', { reasoningContent: 'both', reasoning: 'both' }),
        finalAnswer('d', { reasoningContent: '', reasoning: '' }),
      ],
    });
    const model = createOpenAIModel({ baseUrl: server.baseUrl });
    const messages = [];
    for (let i = 0; i < 4; i++)
      messages.push((await model.complete(HISTORY, TOOL_SCHEMAS)).message);
    expect(messages).toStrictEqual([
      { role: 'assistant', content: 'a', reasoning: 'vllm thinking' },
      { role: 'assistant', content: 'b', reasoning_content: 'sglang thinking' },
      { role: 'assistant', content: 'c', reasoning_content: 'both', reasoning: 'both' },
      { role: 'assistant', content: 'd' },
    ]);
  });

  it('reports finish_reason length', async () => {
    const server = await scripted({
      script: [
        finalAnswer('cut', {
          finishReason: 'length',
          usage: { prompt_tokens: 5, completion_tokens: 8192 },
        }),
      ],
    });
    const response = await createOpenAIModel({ baseUrl: server.baseUrl }).complete(
      HISTORY,
      TOOL_SCHEMAS,
    );
    expect(response.finishReason).toBe('length');
  });

  it('refuses a response without choices', () => {
    expect(() => reduceCompletion({ choices: [] }, 1)).toThrow(/no choices/);
    expect(() => reduceCompletion({ id: 'x' }, 1)).toThrow(/malformed chat completion/);
  });

  it('encodes object arguments as JSON text and fills missing ids', () => {
    const response = reduceCompletion(
      {
        choices: [
          {
            message: {
              content: null,
              tool_calls: [{ function: { name: 'Read', arguments: { file_path: 'a.py' } } }],
            },
            finish_reason: 'tool_calls',
          },
        ],
      },
      1,
    );
    const call = response.message.tool_calls![0]!;
    expect(call.function.arguments).toBe('{"file_path":"a.py"}');
    expect(call.id).toMatch(/^call_/);
  });
});

describe('createOpenAIModel retries', () => {
  const fast = { maxRetries: 2 };

  it('retries a 500 and then succeeds', async () => {
    const server = await scripted({
      script: [serverError(500), serverError(503), finalAnswer('ok')],
    });
    const model = createOpenAIModel({ baseUrl: server.baseUrl, ...fast });
    const response = await model.complete(HISTORY, TOOL_SCHEMAS);
    expect(response.message.content).toBe('ok');
    expect(server.chatRequests).toHaveLength(3);
    // every retry is the same request
    expect(new Set(server.chatRequests.map((r) => r.rawBody)).size).toBe(1);
  });

  it('gives up after maxRetries with the server message', async () => {
    const server = await scripted({
      script: [serverError(500, 'boom 1'), serverError(500, 'boom 2'), serverError(500, 'boom 3')],
    });
    const model = createOpenAIModel({ baseUrl: server.baseUrl, maxRetries: 2 });
    await expect(model.complete(HISTORY, TOOL_SCHEMAS)).rejects.toThrow('500 boom 3');
    expect(server.chatRequests).toHaveLength(3);
  });

  it('retries a 429 after the retry-after delay', async () => {
    const server = await scripted({ script: [rateLimited(1), finalAnswer('ok')] });
    const model = createOpenAIModel({ baseUrl: server.baseUrl, ...fast });
    const started = Date.now();
    await model.complete(HISTORY, TOOL_SCHEMAS);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(server.chatRequests).toHaveLength(2);
  });

  it('retries a dropped connection', async () => {
    const server = await scripted({ script: [dropConnection(), finalAnswer('ok')] });
    const model = createOpenAIModel({ baseUrl: server.baseUrl, ...fast });
    expect((await model.complete(HISTORY, TOOL_SCHEMAS)).message.content).toBe('ok');
    expect(server.chatRequests).toHaveLength(2);
  });

  it('does not retry a 400 and surfaces the context-overflow text (nested vLLM body)', async () => {
    const server = await scripted({ script: [contextOverflow(), finalAnswer('never')] });
    const model = createOpenAIModel({ baseUrl: server.baseUrl, ...fast });
    await expect(model.complete(HISTORY, TOOL_SCHEMAS)).rejects.toThrow(
      /^400 This model's maximum context length is 131072 tokens/,
    );
    expect(server.chatRequests).toHaveLength(1);
  });

  it('surfaces the message of a flat (SGLang / older vLLM) error body', async () => {
    const server = await scripted({ script: [contextOverflow({ shape: 'flat' })] });
    const model = createOpenAIModel({ baseUrl: server.baseUrl, ...fast });
    await expect(model.complete(HISTORY, TOOL_SCHEMAS)).rejects.toThrow(
      /maximum context length is 131072 tokens.*reduce the length/,
    );
  });

  it('surfaces a plain-text error body', async () => {
    const server = await scripted({ script: [{ kind: 'error', status: 400, body: 'bad things' }] });
    const model = createOpenAIModel({ baseUrl: server.baseUrl, ...fast });
    await expect(model.complete(HISTORY, TOOL_SCHEMAS)).rejects.toThrow('400 bad things');
  });

  it('does not retry a 401', async () => {
    const server = await scripted({
      script: [
        { kind: 'error', status: 401, body: { error: { message: 'invalid api key' } } },
        finalAnswer('never'),
      ],
    });
    const model = createOpenAIModel({ baseUrl: server.baseUrl, ...fast });
    await expect(model.complete(HISTORY, TOOL_SCHEMAS)).rejects.toThrow('401 invalid api key');
    expect(server.chatRequests).toHaveLength(1);
  });

  it('times out a slow reply per attempt and retries it', async () => {
    const server = await scripted({ script: [{ kind: 'hang' }, finalAnswer('ok')] });
    const model = createOpenAIModel({ baseUrl: server.baseUrl, timeoutMs: 300, maxRetries: 1 });
    expect((await model.complete(HISTORY, TOOL_SCHEMAS)).message.content).toBe('ok');
    expect(server.chatRequests).toHaveLength(2);
  });

  it('fails with a timeout error when every attempt is too slow', async () => {
    const server = await scripted({ script: [finalAnswer('late', { delayMs: 2000 })] });
    const model = createOpenAIModel({ baseUrl: server.baseUrl, timeoutMs: 200, maxRetries: 0 });
    await expect(model.complete(HISTORY, TOOL_SCHEMAS)).rejects.toThrow(/timed out/i);
  });

  it('stops at once when the signal aborts', async () => {
    const server = await scripted({ script: [{ kind: 'hang' }] });
    const model = createOpenAIModel({ baseUrl: server.baseUrl });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    await expect(model.complete(HISTORY, TOOL_SCHEMAS, controller.signal)).rejects.toThrow(
      /abort/i,
    );
    expect(server.chatRequests).toHaveLength(1);
  });
});

describe('checkModelEndpoint', () => {
  it('passes when the model is listed', async () => {
    const server = await scripted({ models: ['other', 'microsoft/FrogNano-4B-2609'] });
    await expect(checkModelEndpoint({ baseUrl: server.baseUrl })).resolves.toBeUndefined();
    expect(server.requests[0]).toMatchObject({ method: 'GET', path: '/v1/models' });
  });

  it('names what the server serves when the model is missing', async () => {
    const server = await scripted({ models: ['Qwen/Qwen3-8B', 'foo'] });
    const error = await checkModelEndpoint({ baseUrl: server.baseUrl }).catch((e: Error) => e);
    expect(String(error)).toContain(
      `does not serve microsoft/FrogNano-4B-2609 (it serves: Qwen/Qwen3-8B, foo)`,
    );
    expect((error as Error).message.split('\n')).toHaveLength(1);
  });

  it('says how to start a server when nothing listens', async () => {
    const server = await scripted();
    const baseUrl = server.baseUrl;
    await server.close();
    const error = await checkModelEndpoint({ baseUrl }).catch((e: Error) => e);
    expect((error as Error).message).toMatch(
      new RegExp(
        `^model endpoint ${baseUrl.replace(/[.]/g, '\\.')} is unreachable \\(ECONNREFUSED\\).*vllm serve microsoft/FrogNano-4B-2609`,
      ),
    );
    expect((error as Error).message.split('\n')).toHaveLength(1);
  });

  it('reports a server that is not OpenAI-compatible', async () => {
    const http = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>hello</html>');
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    try {
      const port = (http.address() as AddressInfo).port;
      await expect(checkModelEndpoint({ baseUrl: `http://127.0.0.1:${port}/v1` })).rejects.toThrow(
        /did not answer GET \/models with a model list/,
      );
    } finally {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    }
  });

  it('reports a 404 and a refused key', async () => {
    const server = await scripted();
    await expect(
      checkModelEndpoint({ baseUrl: `http://127.0.0.1:${server.port}/nope` }),
    ).rejects.toThrow(/answered HTTP 404 to GET \/models/);
    const guarded = await scripted({ apiKey: 'right-key-000' });
    await expect(
      checkModelEndpoint({ baseUrl: guarded.baseUrl, apiKey: 'wrong-key' }),
    ).rejects.toThrow(/refused the API key \(HTTP 401 on GET \/models\)/);
    await expect(
      checkModelEndpoint({ baseUrl: guarded.baseUrl, apiKey: 'right-key-000' }),
    ).resolves.toBeUndefined();
  });
});
