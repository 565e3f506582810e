// Harness overhead of the Leaf loop per step, against an instant scripted model server on a
// real socket and an instant in-process sandbox, so what is timed is the harness itself:
// the model client (request encoding, HTTP, response reduction), the loop, the tool layer's
// formatting and the trajectory written after every step. Baseline measured in the same run:
// the bare HTTP transport (JSON.stringify + fetch + parse) of requests of the same sizes.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { runLeaf, type LeafRunResult } from '../src/leaf/loop.js';
import type { ChatMessage } from '../src/leaf/messages.js';
import { createOpenAIModel } from '../src/leaf/openai-model.js';
import { DEFAULT_REQUEST, TOOL_SCHEMAS } from '../src/leaf/protocol.js';
import { PythonError, type ExecResult, type Sandbox } from '../src/leaf/sandbox.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type ScriptedModelServer,
} from '../test/support/scripted-model-server.js';

const MODEL_STEP_MS = 1500;
const TARGET_STEPS_PER_SEC = 100;
const TARGET_LONG_RUN_SEC = 10;
const TARGET_HELD_MB = 50;
const MB = 1024 * 1024;

/** Every command "succeeds" at once with a fixed output; git (patch capture) prints nothing. */
function instantSandbox(stdout: string): Sandbox {
  const out = Buffer.from(stdout, 'utf8');
  const empty = Buffer.alloc(0);
  const result = (data: Buffer): ExecResult => ({
    exitCode: 0,
    stdout: data,
    stderr: empty,
    stdoutDroppedChars: 0,
    stderrDroppedChars: 0,
    timedOut: false,
    durationMs: 0,
  });
  return {
    kind: 'local',
    workdir: '/testbed',
    homeDir: '/home/agent',
    exec: (command) => Promise.resolve(result(command.startsWith('git ') ? empty : out)),
    readFile: (file) =>
      Promise.reject(
        new PythonError('FileNotFoundError', `[Errno 2] No such file or directory: '${file}'`),
      ),
    readLines: (file) =>
      Promise.reject(
        new PythonError('FileNotFoundError', `[Errno 2] No such file or directory: '${file}'`),
      ),
    editFile: (file) =>
      Promise.reject(
        new PythonError('FileNotFoundError', `[Errno 2] No such file or directory: '${file}'`),
      ),
    writeFile: (file) => Promise.resolve({ realPath: file }),
    glob: () => Promise.resolve([]),
    dispose: () => Promise.resolve(),
  };
}

/** About 3 KB of test-runner-like output: ~850 tokens per step with its assistant turn. */
function longOutput(): string {
  const lines: string[] = [];
  for (let i = 0; lines.join('\n').length < 3000; i++) {
    lines.push(
      `tests/test_module_${i % 17}.py::TestCase::test_behaviour_${i} PASSED [${String(i % 100).padStart(3)}%]`,
    );
  }
  return `${lines.join('\n')}\n`;
}

function script(server: ScriptedModelServer, steps: number): void {
  for (let i = 0; i < steps - 1; i++) {
    server.push(
      toolCall(
        'Bash',
        { command: `python -m pytest tests/test_module_${i % 17}.py -q`, description: 'run tests' },
        { reasoning: 'Run the next test module and look at the result.' },
      ),
    );
  }
  server.push(finalAnswer('All tests pass.'));
}

async function leafRun(
  server: ScriptedModelServer,
  sandbox: Sandbox,
  steps: number,
  trajectoryPath: string,
): Promise<LeafRunResult> {
  script(server, steps);
  const result = await runLeaf({
    model: createOpenAIModel({ baseUrl: server.baseUrl, maxRetries: 0 }),
    sandbox,
    task: 'Make the failing tests pass.',
    instanceId: 'bench/leaf#1',
    maxSteps: steps,
    maxContextTokens: 10_000_000,
    trajectoryPath,
  });
  if (result.exitReason !== 'agent' || result.nSteps !== steps) {
    throw new Error(`bench run ended with ${result.exitReason} after ${result.nSteps} steps`);
  }
  return result;
}

/** The same requests with no harness: encode the body, POST it, parse the answer. */
async function bareTransport(
  server: ScriptedModelServer,
  histories: ChatMessage[][],
): Promise<number> {
  for (let i = 0; i < histories.length; i++) server.push(toolCall('Bash', { command: 'x' }));
  const started = performance.now();
  for (const messages of histories) {
    const body = JSON.stringify({
      model: DEFAULT_REQUEST.model,
      messages,
      tools: TOOL_SCHEMAS,
      tool_choice: 'auto',
      parallel_tool_calls: true,
      temperature: 0.6,
      max_completion_tokens: 8192,
      ...DEFAULT_REQUEST.extraBody,
    });
    const response = await fetch(`${server.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    await response.json();
  }
  return performance.now() - started;
}

/** The history sent with each request of a finished run (system, user, then whole steps). */
function requestHistories(result: LeafRunResult): ChatMessage[][] {
  const messages = result.trajectory.messages as ChatMessage[];
  const histories: ChatMessage[][] = [];
  let length = 2;
  for (const step of result.trajectory.steps) {
    histories.push(messages.slice(0, length));
    length += 1 + step.observations.length;
  }
  return histories;
}

function memory(gc: () => void): { heap: number; rss: number } {
  gc();
  gc();
  const usage = process.memoryUsage();
  return { heap: usage.heapUsed, rss: usage.rss };
}

const fmt = (value: number, digits = 2): string => value.toFixed(digits);
const signed = (value: number): string => `${value >= 0 ? '+' : '−'}${fmt(Math.abs(value), 1)}`;
const mark = (ok: boolean): string => (ok ? 'OK' : 'MISSED');
const share = (ms: number, steps: number): string =>
  `${fmt((100 * ms) / (steps * MODEL_STEP_MS), 2)}% of ${steps} × ${MODEL_STEP_MS / 1000} s model steps`;

export default async function run(): Promise<void> {
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const dir = await mkdtemp(path.join(tmpdir(), 'frognano-bench-'));
  const server = await startScriptedModelServer({ record: false });
  try {
    console.log(
      'setup: scripted OpenAI-compatible server on 127.0.0.1 answering instantly (same process); ' +
        'sandbox: in-process stub, every Bash call returns a fixed output at once (no processes, no Docker); ' +
        'trajectory written to a temp dir after every step; no usage in responses (the estimate path).',
    );

    // (a) steps per second with small transcripts
    const small = instantSandbox('ok\n');
    await leafRun(server, small, 30, path.join(dir, 'warmup.json')); // JIT warm-up
    const runs = 10;
    const stepsPerRun = 30;
    let smallResult: LeafRunResult | undefined;
    const startedA = performance.now();
    for (let i = 0; i < runs; i++) {
      smallResult = await leafRun(server, small, stepsPerRun, path.join(dir, `small-${i}.json`));
    }
    const msA = performance.now() - startedA;
    const stepsA = runs * stepsPerRun;
    const perStepA = msA / stepsA;
    const rate = (1000 * stepsA) / msA;
    const smallHistories = requestHistories(smallResult!);
    const smallTokens = smallResult!.contextTokens;
    smallResult = undefined;
    let bareA = 0;
    for (let i = 0; i < runs; i++) bareA += await bareTransport(server, smallHistories);
    console.log(
      `(a) small transcripts (${runs} runs × ${stepsPerRun} steps, final ${smallTokens} tokens): ` +
        `${fmt(rate, 0)} steps/s (target ≥ ${TARGET_STEPS_PER_SEC}) ${mark(rate >= TARGET_STEPS_PER_SEC)}; ` +
        `${fmt(perStepA)} ms/step = ${fmt((100 * perStepA) / MODEL_STEP_MS, 3)}% of a ${MODEL_STEP_MS / 1000} s model step; ` +
        `bare HTTP transport ${fmt(bareA / stepsA)} ms/request → harness/bare ${fmt(msA / bareA)}×`,
    );

    // (b) one 150-step run whose transcript grows to about 128K tokens
    const big = instantSandbox(longOutput());
    const steps = 150;
    const trajectoryPath = path.join(dir, 'long.json');
    const before = memory(gc);
    const startedB = performance.now();
    let result: LeafRunResult | undefined = await leafRun(server, big, steps, trajectoryPath);
    const msB = performance.now() - startedB;
    const after = memory(gc);
    const contextTokens = result.contextTokens;
    const modelMs = result.steps.reduce((sum, step) => sum + step.modelMs, 0);
    const toolMs = result.steps.reduce((sum, step) => sum + step.toolMs, 0);
    const heldHeap = (after.heap - before.heap) / MB;
    const heldRss = (after.rss - before.rss) / MB;
    const trajectoryMb = (await stat(trajectoryPath)).size / MB;
    const bareB = await bareTransport(server, requestHistories(result));
    result = undefined;
    const released = memory(gc);
    const resultMb = (after.heap - released.heap) / MB;
    console.log(
      `(b) ${steps}-step run, transcript grows to ${contextTokens} tokens (trajectory.json ${fmt(trajectoryMb)} MB, rewritten after every step):`,
    );
    console.log(
      `    harness time ${fmt(msB / 1000)} s (target ≤ ${TARGET_LONG_RUN_SEC} s) ${mark(msB <= TARGET_LONG_RUN_SEC * 1000)} = ${share(msB, steps)}; ` +
        `${fmt(msB / steps)} ms/step`,
    );
    console.log(
      `    of which model client + HTTP + in-process server ${fmt(modelMs / 1000)} s, tool layer ${fmt(toolMs / 1000)} s, ` +
        `loop + estimates + trajectory writes ${fmt((msB - modelMs - toolMs) / 1000)} s`,
    );
    console.log(
      `    baseline: bare HTTP transport of the same ${steps} requests ${fmt(bareB / 1000)} s → harness/bare ${fmt(msB / bareB)}×`,
    );
    console.log(
      `    memory held at the end vs the start (result still referenced, after GC): heap ${signed(heldHeap)} MB ` +
        `(target ≤ ${TARGET_HELD_MB} MB) ${mark(heldHeap <= TARGET_HELD_MB)}, RSS ${signed(heldRss)} MB ${mark(heldRss <= TARGET_HELD_MB)}; ` +
        `the returned result itself holds ${fmt(resultMb, 1)} MB of heap; peak RSS of the process ${fmt(process.resourceUsage().maxRSS / 1024, 0)} MB`,
    );
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}
