import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runLeaf, isContextOverflowError, type LeafRunOptions } from '../../src/leaf/loop.js';
import type { ChatMessage } from '../../src/leaf/messages.js';
import type { Model } from '../../src/leaf/model.js';
import { modelConfigFrom } from '../../src/model-fleet/model-config-from.js';
import { loadProcessConfig } from '../../src/config.js';
import { createOpenAIModel } from '../../src/leaf/openai-model.js';
import { DEFAULT_REQUEST, SYSTEM_PROMPT, TOOL_SCHEMAS } from '../../src/leaf/protocol.js';
import { SandboxFailure, type Sandbox } from '../../src/leaf/sandbox.js';
import { Trajectory } from '../../src/leaf/trajectory.js';
import { createLocalSandbox } from '../../src/sandbox/local-sandbox.js';
import {
  contextOverflow,
  finalAnswer,
  qwenXmlToolCall,
  startScriptedModelServer,
  toolCall,
  toolCalls,
  type ScriptStep,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';

const TASK = 'Fix add() in calc.py\n\nadd(2, 3) returns -1 instead of 5.';

let workDir: string;
let repoDir: string;
const cleanups: (() => Promise<void>)[] = [];

beforeEach(async () => {
  workDir = await mkdtemp(path.join(tmpdir(), 'leaf-loop-test-'));
  repoDir = path.join(workDir, 'repo');
  execFileSync('git', ['init', '-q', '-b', 'main', repoDir]);
  await writeFile(path.join(repoDir, 'calc.py'), 'def add(a, b):\n    return a - b\n');
  await writeFile(
    path.join(repoDir, 'test_calc.py'),
    'from calc import add\n\nassert add(2, 3) == 5, "add is broken"\n',
  );
  git(repoDir, 'add', '-A');
  git(repoDir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'base');
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await rm(workDir, { recursive: true, force: true });
});

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8' });
}

async function setup(
  script: ScriptStep[],
  overrides: Partial<LeafRunOptions> = {},
  serverOptions: { models?: string[] } = {},
): Promise<{ server: ScriptedModelServer; options: LeafRunOptions; sandbox: Sandbox }> {
  const server = await startScriptedModelServer({ script, ...serverOptions });
  cleanups.push(() => server.close());
  const sandbox = await createLocalSandbox({ sourceDir: repoDir });
  cleanups.push(() => sandbox.dispose());
  const options: LeafRunOptions = {
    model: createOpenAIModel({ baseUrl: server.baseUrl, maxRetries: 0 }),
    sandbox,
    task: TASK,
    instanceId: 'acme/calc#7',
    seed: 42,
    trajectoryPath: path.join(workDir, 'out', 'trajectory.json'),
    ...overrides,
  };
  return { server, options, sandbox };
}

function readTrajectory(file: string): Trajectory {
  return Trajectory.parse(JSON.parse(readFileSync(file, 'utf8')));
}

// The fixed parts of every request body around the history, per §2.
const BODY_PREFIX = `{"model":${JSON.stringify(DEFAULT_REQUEST.model)},"messages":`;
const BODY_SUFFIX =
  `,"tools":${JSON.stringify(TOOL_SCHEMAS)},"tool_choice":"auto","parallel_tool_calls":true,` +
  `"temperature":0.6,"max_completion_tokens":8192,"top_p":0.95,"top_k":20,"min_p":0,` +
  `"presence_penalty":0,"repetition_penalty":1,"chat_template_kwargs":{"enable_thinking":true}}`;

/** The raw JSON text of the messages array of each request; asserts the rest of the body is fixed. */
function messagesTexts(server: ScriptedModelServer): string[] {
  return server.chatRequests.map((request) => {
    expect(request.rawBody.startsWith(BODY_PREFIX)).toBe(true);
    expect(request.rawBody.endsWith(BODY_SUFFIX)).toBe(true);
    return request.rawBody.slice(BODY_PREFIX.length, -BODY_SUFFIX.length);
  });
}

describe('runLeaf: a successful run', () => {
  it('reads, edits, runs the test, finishes; history is append-only and byte-identical', async () => {
    const steps: { step: number; nSteps: number; tools: string[] }[] = [];
    const trajectoryPath = path.join(workDir, 'out', 'trajectory.json');
    const { server, options } = await setup(
      [
        toolCall(
          'Read',
          { file_path: 'calc.py' },
          {
            id: 'call_r',
            reasoning: 'Look at the code first.',
            usage: { prompt_tokens: 900, completion_tokens: 30 },
            extraMessageFields: { refusal: null, annotations: [] },
            extraChoiceFields: { matched_stop: null },
          },
        ),
        toolCalls(
          [
            {
              id: 'call_e',
              name: 'Edit',
              arguments: '{"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}',
            },
            {
              id: 'call_b',
              name: 'Bash',
              arguments: { command: 'python3 test_calc.py && echo ok' },
            },
          ],
          { content: 'Fixing the operator.', reasoningContent: 'Minus should be plus.' },
        ),
        finalAnswer('Fixed add() to return a + b.', {
          usage: { prompt_tokens: 1200, completion_tokens: 12 },
        }),
      ],
      {
        onStep: (progress) => {
          const trajectory = readTrajectory(trajectoryPath);
          steps.push({ step: progress.step, nSteps: trajectory.n_steps, tools: progress.tools });
          expect(trajectory.steps).toHaveLength(progress.step);
          expect(progress.maxSteps).toBe(150);
        },
      },
    );

    const result = await runLeaf(options);

    expect(result.exitReason).toBe('agent');
    expect(result.error).toBeNull();
    expect(result.partial).toBe(false);
    expect(result.finalMessage).toBe('Fixed add() to return a + b.');
    expect(result.nSteps).toBe(3);
    expect(result.contextTokens).toBe(1212);
    expect(result.usage).toEqual({
      requests: 3,
      requestsWithoutUsage: 1,
      promptTokens: 2100,
      completionTokens: 42,
    });

    // The trajectory was on disk after every step, with that step in it.
    expect(steps).toEqual([
      { step: 1, nSteps: 1, tools: ['Read'] },
      { step: 2, nSteps: 2, tools: ['Edit', 'Bash'] },
      { step: 3, nSteps: 3, tools: [] },
    ]);

    // Request 1: exactly system + user.
    const texts = messagesTexts(server);
    expect(texts).toHaveLength(3);
    expect(JSON.parse(texts[0]!)).toStrictEqual([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: TASK },
    ]);
    // Every request's history is the previous one plus new messages, serialized identically.
    for (let i = 1; i < texts.length; i++) {
      expect(texts[i]!.startsWith(`${texts[i - 1]!.slice(0, -1)},`)).toBe(true);
    }
    const second = JSON.parse(texts[1]!) as ChatMessage[];
    expect(second.slice(2)).toStrictEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_r',
            type: 'function',
            function: { name: 'Read', arguments: '{"file_path":"calc.py"}' },
          },
        ],
        reasoning: 'Look at the code first.',
      },
      {
        role: 'tool',
        tool_call_id: 'call_r',
        content: 'calc.py\n1. def add(a, b):\n2.     return a - b',
      },
    ]);
    const third = JSON.parse(texts[2]!) as ChatMessage[];
    expect(third.slice(4)).toStrictEqual([
      {
        role: 'assistant',
        content: 'Fixing the operator.',
        tool_calls: [
          {
            id: 'call_e',
            type: 'function',
            function: {
              name: 'Edit',
              arguments: '{"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}',
            },
          },
          {
            id: 'call_b',
            type: 'function',
            function: { name: 'Bash', arguments: '{"command":"python3 test_calc.py && echo ok"}' },
          },
        ],
        reasoning_content: 'Minus should be plus.',
      },
      { role: 'tool', tool_call_id: 'call_e', content: 'Edited calc.py (1 replacement).' },
      { role: 'tool', tool_call_id: 'call_b', content: 'Exit code: 0\nSTDOUT:\nok\n\nSTDERR:\n' },
    ]);

    // The patch: captured, and it applies to a fresh copy of the repository and fixes it.
    expect(result.patch).toContain('-    return a - b\n+    return a + b\n');
    const fresh = path.join(workDir, 'fresh');
    await cp(repoDir, fresh, { recursive: true });
    await writeFile(path.join(workDir, 'p.diff'), result.patchBytes);
    git(fresh, 'apply', path.join(workDir, 'p.diff'));
    execFileSync('python3', ['test_calc.py'], { cwd: fresh });
    // ... and the index inside the sandbox was reset afterwards.
    expect(git(repoDir, 'status', '--porcelain')).toBe('');

    // The final trajectory on disk equals the returned record.
    const trajectory = readTrajectory(trajectoryPath);
    expect(trajectory).toStrictEqual(JSON.parse(JSON.stringify(result.trajectory)));
    expect(trajectory).toMatchObject({
      trajectory_format: 'leaf-function-calling',
      instance_id: 'acme/calc#7',
      seed: 42,
      n_steps: 3,
      exit_reason: 'agent',
      error: null,
      final_message: 'Fixed add() to return a + b.',
      context_tokens: 1212,
      output_patch: result.patch,
      partial: false,
      status: 'finished',
      tool_call_fallbacks: 0,
      patch_error: null,
      budget: {
        max_steps: 150,
        max_context_tokens: 131072,
        max_tokens_per_turn: 8192,
        time_budget_sec: null,
      },
    });
    expect(trajectory.tools).toStrictEqual(JSON.parse(JSON.stringify(TOOL_SCHEMAS)));
    // messages = the last request's history plus the final answer
    expect(trajectory.messages).toStrictEqual([
      ...third,
      { role: 'assistant', content: 'Fixed add() to return a + b.' },
    ]);
    expect(trajectory.steps.map((step) => step.step)).toEqual([0, 1, 2]);
    expect(trajectory.steps[1]!.observations).toStrictEqual([
      { tool: 'Edit', observation: 'Edited calc.py (1 replacement).' },
      { tool: 'Bash', observation: 'Exit code: 0\nSTDOUT:\nok\n\nSTDERR:\n' },
    ]);
    expect(trajectory.steps[1]!.tool_latency_ms).toHaveLength(2);
    expect(trajectory.steps[0]!.usage).toEqual({
      prompt_tokens: 900,
      completion_tokens: 30,
      total_tokens: 930,
    });
    expect(trajectory.steps[1]!.usage).toBeNull();
    expect(result.steps[1]!.tools).toEqual([
      {
        name: 'Edit',
        args: expect.stringContaining('old_string') as string,
        outcome: 'Edited calc.py (1 replacement).',
      },
      {
        name: 'Bash',
        args: '{"command":"python3 test_calc.py && echo ok"}',
        outcome: 'Exit code: 0',
      },
    ]);
  });

  it('estimates context tokens from the history when the server sends no usage', async () => {
    const { server, options } = await setup([
      toolCall('Glob', { pattern: '*.py' }),
      finalAnswer('done'),
    ]);
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('agent');
    const history = [...result.trajectory.messages];
    const bytes = Buffer.byteLength(JSON.stringify(history), 'utf8');
    expect(result.contextTokens).toBe(Math.ceil(bytes / 4));
    expect(server.chatRequests).toHaveLength(2);
  });

  it('runs a Qwen tool call left in content, records the fallback, and sends the rewritten message', async () => {
    const raw = 'Let me list files.\n\n' + qwenXmlToolCall('Bash', { command: 'ls', timeout: '5' });
    const { server, options } = await setup([{ content: raw }, finalAnswer('ok')]);
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('agent');
    expect(result.toolCallFallbacks).toBe(1);
    const step = result.trajectory.steps[0]!;
    expect(step.tool_call_fallback).toBe(true);
    expect(step.raw_assistant).toStrictEqual({ role: 'assistant', content: raw });
    expect(step.observations[0]!.observation).toBe(
      'Exit code: 0\nSTDOUT:\ncalc.py\ntest_calc.py\n\nSTDERR:\n',
    );
    const sent = server.chatRequests[1]!.body!.messages!;
    expect(sent[2]).toStrictEqual({
      role: 'assistant',
      content: 'Let me list files.',
      tool_calls: [
        {
          id: 'call_fallback_0',
          type: 'function',
          function: { name: 'Bash', arguments: '{"command":"ls","timeout":5}' },
        },
      ],
    });
    expect(sent[3]).toMatchObject({ role: 'tool', tool_call_id: 'call_fallback_0' });
    expect(result.trajectory.tool_call_fallbacks).toBe(1);
  });
});

describe('runLeaf: stop reasons', () => {
  it('max_turns: falls out of the loop after maxSteps, patch captured as partial work', async () => {
    const { server, options } = await setup(
      [
        toolCall('Write', { file_path: 'new_dir/notes.txt', content: 'hello\n' }),
        toolCall('Bash', { command: 'true' }),
        finalAnswer('never reached'),
      ],
      { maxSteps: 2 },
    );
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_turns');
    expect(result.partial).toBe(true);
    expect(result.nSteps).toBe(2);
    expect(server.chatRequests).toHaveLength(2);
    expect(result.patch).toContain('+++ b/new_dir/notes.txt');
    expect(result.trajectory.output_patch).toBe(result.patch);
    // Upstream: the final record is not partial; ours says it ended on a limit.
    expect(result.trajectory.partial).toBe(false);
    expect(result.trajectory.ended_on_limit).toBe(true);
  });

  it('max_time: the budget is checked before each step', async () => {
    const { server, options } = await setup([finalAnswer('x')], { timeBudgetMs: 0 });
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_time');
    expect(result.nSteps).toBe(0);
    expect(server.chatRequests).toHaveLength(0);
    expect(result.trajectory.output_patch).toBe('');
    expect(result.trajectory.budget.time_budget_sec).toBe(0);
  });

  it('max_time: a model request in flight is ended by the deadline', async () => {
    const { options } = await setup(
      [toolCall('Bash', { command: 'echo hi > hi.txt' }), { kind: 'hang' }],
      { timeBudgetMs: 1500 },
    );
    const started = Date.now();
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_time');
    expect(Date.now() - started).toBeLessThan(10_000);
    // The query the deadline ended counts, as upstream counts every query made.
    expect(result.nSteps).toBe(2);
    expect(result.patch).toContain('+++ b/hi.txt');
  });

  it('max_time: a Bash timeout is clamped to the time left; the model sees the timeout it asked for', async () => {
    const { server, options } = await setup(
      [
        toolCall('Bash', { command: 'sleep 70; echo done > slept.txt' }),
        toolCall('Bash', { command: 'sleep 70', timeout: 2147483647 }),
        finalAnswer('never'),
      ],
      { timeBudgetMs: 2500 },
    );
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_time');
    expect(server.chatRequests).toHaveLength(1);
    expect(result.trajectory.steps[0]?.observations).toEqual([
      { tool: 'Bash', observation: 'Timed out after 120.0s\nSTDOUT:\n\nSTDERR:\n' },
    ]);
    expect(result.patch).not.toContain('slept.txt');
  });

  it('max_time: a huge Bash timeout (2147483647) ends at the deadline too', async () => {
    const { options } = await setup(
      [toolCall('Bash', { command: 'sleep 70', timeout: 2147483647 }), finalAnswer('never')],
      { timeBudgetMs: 1500 },
    );
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_time');
    // Leaf reads a value over 1000 as milliseconds.
    expect(result.trajectory.steps[0]?.observations[0]?.observation).toBe(
      'Timed out after 2147483.6s\nSTDOUT:\n\nSTDERR:\n',
    );
  });

  it('max_time: a tool call that ignores the deadline is abandoned after a grace', async () => {
    const { options, sandbox } = await setup(
      [toolCall('Read', { file_path: 'calc.py' }), finalAnswer('never')],
      { timeBudgetMs: 1000 },
    );
    const stuck: Sandbox = {
      kind: sandbox.kind,
      workdir: sandbox.workdir,
      homeDir: sandbox.homeDir,
      exec: (command, execOptions) => sandbox.exec(command, execOptions),
      readFile: () => new Promise(() => undefined),
      readLines: () => new Promise(() => undefined),
      editFile: (p, oldText, newText, all) => sandbox.editFile(p, oldText, newText, all),
      writeFile: (p, data) => sandbox.writeFile(p, data),
      glob: (pattern) => sandbox.glob(pattern),
      dispose: () => sandbox.dispose(),
    };
    const result = await runLeaf({ ...options, sandbox: stuck });
    expect(result.exitReason).toBe('max_time');
    expect(result.trajectory.steps[0]?.observations).toEqual([]);
  });

  it('cancelled during a Bash call: the command is killed', async () => {
    const controller = new AbortController();
    const { options, sandbox } = await setup(
      [toolCall('Bash', { command: 'echo $$ > ~/bash.pid; sleep 60' }), finalAnswer('never')],
      { signal: controller.signal },
    );
    const pidFile = path.join(sandbox.homeDir, 'bash.pid');
    const watcher = setInterval(() => {
      if (existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n')) controller.abort();
    }, 50);
    const result = await runLeaf(options);
    clearInterval(watcher);
    expect(result.exitReason).toBe('cancelled');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    await expect
      .poll(() => {
        try {
          process.kill(pid, 0);
          return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
        } catch {
          return true;
        }
      })
      .toBe(true);
  });

  it('cancelled during a model request: ends at once, no patch', async () => {
    const controller = new AbortController();
    const { options } = await setup(
      [toolCall('Write', { file_path: 'x.txt', content: 'x' }), { kind: 'hang' }],
      {
        signal: controller.signal,
        onStep: () => setTimeout(() => controller.abort(), 100),
      },
    );
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('cancelled');
    expect(result.partial).toBe(true);
    expect(result.patch).toBe('');
    expect(result.trajectory.output_patch).toBeNull();
    expect(result.nSteps).toBe(2);
    expect(readTrajectory(options.trajectoryPath!).exit_reason).toBe('cancelled');
  });

  it('writes the trajectory before the first request returns', async () => {
    const controller = new AbortController();
    const { options } = await setup([{ kind: 'hang' }], { signal: controller.signal });
    const running = runLeaf(options);
    const file = options.trajectoryPath!;
    for (let i = 0; i < 200 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 10));
    expect(readTrajectory(file)).toMatchObject({
      status: 'running',
      n_steps: 0,
      exit_reason: 'running',
      partial: true,
      messages: [
        { role: 'system', content: SYSTEM_PROMPT },
        { role: 'user', content: TASK },
      ],
    });
    controller.abort();
    expect((await running).exitReason).toBe('cancelled');
  });

  it('cancelled during a tool call', async () => {
    const controller = new AbortController();
    const { server, options } = await setup(
      [toolCall('Bash', { command: 'sleep 20' }, { delayMs: 0 }), finalAnswer('never')],
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 800);
    const started = Date.now();
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(server.chatRequests).toHaveLength(1);
    expect(result.trajectory.steps[0]!.observations).toEqual([]);
  });

  it('cancelled before the first step', async () => {
    const controller = new AbortController();
    controller.abort();
    const { server, options } = await setup([finalAnswer('x')], { signal: controller.signal });
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('cancelled');
    expect(server.chatRequests).toHaveLength(0);
  });

  it('llm_query_error: a non-retryable error is recorded with its text; the patch is still captured', async () => {
    const { options } = await setup([
      toolCall('Write', { file_path: 'a.txt', content: 'a\n' }),
      { kind: 'error', status: 422, body: { error: { message: 'tool_choice is invalid' } } },
    ]);
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('llm_query_error');
    expect(result.error).toBe('422 tool_choice is invalid');
    expect(result.trajectory.error).toBe('422 tool_choice is invalid');
    expect(result.patch).toContain('+++ b/a.txt');
  });

  it('llm_query_error: connection refused, with the cause in the text', async () => {
    const { server, options } = await setup([]);
    await server.close();
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('llm_query_error');
    expect(result.error).toMatch(/Connection error/);
    expect(result.error).toMatch(/ECONNREFUSED|fetch failed/);
  });

  it('max_context_len: the server rejects the prompt as too long (HTTP 400)', async () => {
    const { options } = await setup([toolCall('Bash', { command: 'true' }), contextOverflow()]);
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_context_len');
    expect(result.error).toBeNull();
    expect(result.nSteps).toBe(2);
  });

  it('max_context_len: a length finish at the context limit; its tool calls are not run', async () => {
    const { options } = await setup(
      [
        toolCall(
          'Write',
          { file_path: 'cut.txt', content: 'x' },
          { finishReason: 'length', usage: { prompt_tokens: 990, completion_tokens: 10 } },
        ),
      ],
      { maxContextTokens: 1000 },
    );
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_context_len');
    expect(result.trajectory.steps[0]!.observations).toEqual([]);
    expect(result.patch).toBe('');
    // the cut turn is still part of history, as received
    expect(result.trajectory.messages).toHaveLength(3);
  });

  it('max_tokens_per_turn: a length finish below the context limit with the per-turn cap reached', async () => {
    const { options } = await setup([
      toolCall(
        'Write',
        { file_path: 'cut.txt', content: 'x' },
        { finishReason: 'length', usage: { prompt_tokens: 500, completion_tokens: 8192 } },
      ),
    ]);
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_tokens_per_turn');
    expect(result.trajectory.steps[0]!.observations).toEqual([]);
  });

  it('max_tokens_per_turn: a length finish without usage is put on the per-turn cap (upstream)', async () => {
    const { options } = await setup([finalAnswer('cut', { finishReason: 'max_tokens' })]);
    expect((await runLeaf(options)).exitReason).toBe('max_tokens_per_turn');
  });

  it('max_context_len: tool messages push the count to the limit', async () => {
    const { options } = await setup(
      [
        toolCall(
          'Bash',
          { command: 'head -c 2000 /dev/zero | tr "\\0" a' },
          { usage: { prompt_tokens: 700, completion_tokens: 20 } },
        ),
        finalAnswer('never'),
      ],
      { maxContextTokens: 1000 },
    );
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_context_len');
    const step = result.trajectory.steps[0]!;
    expect(step.observations).toHaveLength(1);
    const toolMessage = result.trajectory.messages[3]!;
    const estimate = Math.ceil(Buffer.byteLength(JSON.stringify([toolMessage]), 'utf8') / 4);
    expect(result.contextTokens).toBe(720 + estimate);
    expect(result.contextTokens).toBeGreaterThanOrEqual(1000);
  });

  it('tool_error: the sandbox itself fails; the error is recorded and the run stops', async () => {
    const { options, sandbox } = await setup([
      toolCall('Write', { file_path: 'kept.txt', content: 'k\n' }),
      toolCall('Bash', { command: 'pytest' }),
      finalAnswer('never'),
    ]);
    let broken = true;
    const flaky: Sandbox = {
      kind: sandbox.kind,
      workdir: sandbox.workdir,
      homeDir: sandbox.homeDir,
      exec: (command, execOptions) => {
        if (command === 'pytest' && broken) {
          broken = false;
          return Promise.reject(new SandboxFailure('container vanished'));
        }
        return sandbox.exec(command, execOptions);
      },
      readFile: (p) => sandbox.readFile(p),
      readLines: (p, request) => sandbox.readLines(p, request),
      editFile: (p, oldText, newText, all) => sandbox.editFile(p, oldText, newText, all),
      writeFile: (p, data) => sandbox.writeFile(p, data),
      glob: (pattern) => sandbox.glob(pattern),
      dispose: () => sandbox.dispose(),
    };
    const result = await runLeaf({ ...options, sandbox: flaky });
    expect(result.exitReason).toBe('tool_error');
    expect(result.error).toBe('container vanished');
    expect(result.nSteps).toBe(2);
    expect(result.patch).toContain('+++ b/kept.txt');
  });

  it('7: a failed patch capture is tried again, never kept as an empty patch', async () => {
    const { options, sandbox } = await setup([
      toolCall('Write', { file_path: 'kept.txt', content: 'k\n' }),
      finalAnswer('done'),
    ]);
    let failures = 0;
    const flaky: Sandbox = {
      kind: sandbox.kind,
      workdir: sandbox.workdir,
      homeDir: sandbox.homeDir,
      exec: (command, execOptions) => {
        if (command.endsWith(' add -A') && failures === 0) {
          failures++;
          return Promise.reject(new SandboxFailure('the engine hiccuped'));
        }
        return sandbox.exec(command, execOptions);
      },
      readFile: (p) => sandbox.readFile(p),
      readLines: (p, request) => sandbox.readLines(p, request),
      editFile: (p, oldText, newText, all) => sandbox.editFile(p, oldText, newText, all),
      writeFile: (p, data) => sandbox.writeFile(p, data),
      glob: (pattern) => sandbox.glob(pattern),
      dispose: () => sandbox.dispose(),
    };
    const result = await runLeaf({ ...options, sandbox: flaky });
    expect(failures).toBe(1);
    expect(result.exitReason).toBe('agent');
    expect(result.patchError).toBeNull();
    expect(result.patch).toContain('+++ b/kept.txt');
  });

  it('keeps the stop reason and reports patchError when the capture fails', async () => {
    const { options, sandbox } = await setup([finalAnswer('done')]);
    await rm(path.join(sandbox.workdir, '.git'), { recursive: true, force: true });
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('agent');
    expect(result.patchError).toMatch(/patch capture: `git add` failed/);
    expect(result.trajectory.output_patch).toBeNull();
    expect(result.trajectory.patch_error).toBe(result.patchError);
  });
});

describe("runLeaf: upstream's edges (leaf-protocol.md §8)", () => {
  it('1: finish_reason is matched case-insensitively; a LENGTH turn is cut off', async () => {
    const { server, options } = await setup([
      toolCall(
        'Write',
        { file_path: 'cut.txt', content: 'x' },
        { finishReason: 'LENGTH', usage: { prompt_tokens: 500, completion_tokens: 8192 } },
      ),
      finalAnswer('never'),
    ]);
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_tokens_per_turn');
    expect(server.chatRequests).toHaveLength(1);
    expect(result.trajectory.steps[0]!.observations).toEqual([]);
    // Recorded as the server sent it.
    expect(result.trajectory.steps[0]!.finish_reason).toBe('LENGTH');
    expect(result.patch).toBe('');
  });

  it('2: a cut-off turn without prompt and completion counts stops with max_tokens_per_turn', async () => {
    const { options } = await setup([
      toolCall(
        'Write',
        { file_path: 'cut.txt', content: 'x' },
        { finishReason: 'length', usage: { completion_tokens: 100 } },
      ),
    ]);
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_tokens_per_turn');
    expect(result.trajectory.steps[0]!.observations).toEqual([]);
  });

  it('2: both counts present and neither limit reached is still max_context_len, as upstream', async () => {
    const { options } = await setup([
      finalAnswer('cut', {
        finishReason: 'length',
        usage: { prompt_tokens: 500, completion_tokens: 100 },
      }),
    ]);
    expect((await runLeaf(options)).exitReason).toBe('max_context_len');
  });

  it("3: on a cut-off turn final_message is that turn's content", async () => {
    const { options } = await setup([
      finalAnswer('I was about to say', {
        finishReason: 'max_tokens',
        usage: { prompt_tokens: 500, completion_tokens: 8192 },
      }),
    ]);
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_tokens_per_turn');
    expect(result.finalMessage).toBe('I was about to say');
    expect(result.trajectory.final_message).toBe('I was about to say');
  });

  it('4: n_steps counts a query that failed (one step, then a context rejection: 2)', async () => {
    const { options } = await setup([
      toolCall('Write', { file_path: 'a.txt', content: 'fix' }),
      contextOverflow(),
    ]);
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_context_len');
    expect(result.nSteps).toBe(2);
    expect(result.trajectory.n_steps).toBe(2);
    expect(result.trajectory.steps).toHaveLength(1);
    expect(readTrajectory(options.trajectoryPath!).n_steps).toBe(2);
  });

  it('5: checkpoints are partial with exit_reason "running"; the final record is not partial', async () => {
    const seen: { exit_reason: string | null; partial: boolean; ended_on_limit?: boolean }[] = [];
    const { options } = await setup(
      [toolCall('Bash', { command: 'true' }), toolCall('Bash', { command: 'true' })],
      {
        maxSteps: 2,
        onStep: () => {
          const { exit_reason, partial, ended_on_limit } = readTrajectory(options.trajectoryPath!);
          seen.push({ exit_reason, partial, ended_on_limit });
        },
      },
    );
    const result = await runLeaf(options);
    expect(result.exitReason).toBe('max_turns');
    expect(seen).toEqual([
      { exit_reason: 'running', partial: true, ended_on_limit: false },
      { exit_reason: 'running', partial: true, ended_on_limit: false },
    ]);
    const final = readTrajectory(options.trajectoryPath!);
    expect(final).toMatchObject({
      exit_reason: 'max_turns',
      partial: false,
      ended_on_limit: true,
      status: 'finished',
    });
    // Ours: the result still says the patch is partial work.
    expect(result.partial).toBe(true);
  });

  it('5: an agent finish is neither partial nor ended on a limit', async () => {
    const { options } = await setup([finalAnswer('done')]);
    const result = await runLeaf(options);
    expect(result.trajectory).toMatchObject({
      exit_reason: 'agent',
      partial: false,
      ended_on_limit: false,
    });
  });
});

describe('runLeaf with FROGNANO_MAX_COMPLETION_TOKENS=32000 (SWE-bench Pro / Terminal-Bench 2 presets)', () => {
  it('9: sends the 32000 cap, runs a 9000-token turn, and cuts a 32000-token turn as max_tokens_per_turn', async () => {
    const config = modelConfigFrom(loadProcessConfig({ FROGNANO_MAX_COMPLETION_TOKENS: '32000' }));
    expect(config.maxCompletionTokens).toBe(32000);
    const { server, options } = await setup([
      toolCall(
        'Bash',
        { command: 'true' },
        { usage: { prompt_tokens: 1000, completion_tokens: 9000 } },
      ),
      finalAnswer('long thought, cut', {
        finishReason: 'length',
        usage: { prompt_tokens: 10_100, completion_tokens: 32_000 },
      }),
    ]);
    const result = await runLeaf({
      ...options,
      model: createOpenAIModel({ ...config, baseUrl: server.baseUrl, maxRetries: 0 }),
      maxTokensPerTurn: config.maxCompletionTokens,
    });
    expect(server.chatRequests.map((r) => r.body?.max_completion_tokens)).toEqual([32000, 32000]);
    expect(result.trajectory.steps[0]!.observations).toHaveLength(1);
    expect(result.exitReason).toBe('max_tokens_per_turn');
    expect(result.trajectory.budget.max_tokens_per_turn).toBe(32000);
  });
});

describe('isContextOverflowError', () => {
  it.each([
    ['Error code: 400 - context_length_exceeded', true],
    ['Please reduce the length of the messages', true],
    ["This model's maximum context length is 32768 tokens", true],
    ['The input (140000 tokens) exceeds the context length', true],
    ['Requested token count exceeds the model context length of 131072', true],
    ['500 internal error', false],
    ['context length is fine', false],
  ])('%s → %s', (text, expected) => {
    expect(isContextOverflowError(text)).toBe(expected);
  });
});

describe('the trajectory file', () => {
  it('is never half-written and has no temp files left behind', async () => {
    const { options } = await setup([toolCall('Bash', { command: 'true' }), finalAnswer('ok')]);
    await runLeaf(options);
    const dir = path.dirname(options.trajectoryPath!);
    const { readdirSync } = await import('node:fs');
    expect(readdirSync(dir)).toEqual(['trajectory.json']);
    expect(existsSync(options.trajectoryPath!)).toBe(true);
  });
});

// A Model that is not the SDK: the loop only needs the seam.
describe('runLeaf with a plain Model', () => {
  it('passes the live history and the five tools', async () => {
    const seen: { count: number; tools: number }[] = [];
    const model: Model = {
      complete: (messages, tools) => {
        seen.push({ count: messages.length, tools: tools.length });
        return Promise.resolve({
          message: { role: 'assistant', content: 'done' },
          finishReason: 'stop',
          latencyMs: 1,
        });
      },
    };
    const { options } = await setup([]);
    const result = await runLeaf({ ...options, model });
    expect(result.exitReason).toBe('agent');
    expect(seen).toEqual([{ count: 2, tools: 5 }]);
  });

  it('gives the model back once, as the steps end and before the patch capture', async () => {
    const events: string[] = [];
    const model: Model = {
      complete: () =>
        Promise.resolve({
          message: { role: 'assistant', content: 'done' },
          finishReason: 'stop',
          latencyMs: 1,
        }),
      release: () => {
        events.push('release');
        return Promise.resolve();
      },
    };
    const { options, sandbox } = await setup([]);
    const watched: Sandbox = {
      kind: sandbox.kind,
      workdir: sandbox.workdir,
      homeDir: sandbox.homeDir,
      exec: (command, execOptions) => {
        events.push(`exec ${command}`);
        return sandbox.exec(command, execOptions);
      },
      readFile: (p) => sandbox.readFile(p),
      readLines: (p, request) => sandbox.readLines(p, request),
      editFile: (p, oldText, newText, all) => sandbox.editFile(p, oldText, newText, all),
      writeFile: (p, data) => sandbox.writeFile(p, data),
      glob: (pattern) => sandbox.glob(pattern),
      dispose: () => sandbox.dispose(),
    };
    const result = await runLeaf({ ...options, model, sandbox: watched });
    expect(result.exitReason).toBe('agent');
    expect(events.filter((e) => e === 'release')).toHaveLength(1);
    // The patch capture's git commands all come after it.
    expect(events[0]).toBe('release');
    expect(events.slice(1).every((e) => e.startsWith('exec '))).toBe(true);
    expect(events.length).toBeGreaterThan(1);
  });

  it('gives the model back once when the run cannot start', async () => {
    let released = 0;
    const model: Model = {
      complete: () => Promise.reject(new Error('never asked')),
      release: () => {
        released++;
        return Promise.resolve();
      },
    };
    const { options } = await setup([]);
    await expect(runLeaf({ ...options, model, maxSteps: -1 })).rejects.toThrow();
    expect(released).toBe(1);
  });
});
