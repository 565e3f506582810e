// Parallel attempts (issue 10), three ratios in one run:
//   1. bot-side wall time of 4 attempts vs 1, a scripted model taking 1 s per call and 10 steps
//      per attempt (sandboxes and verification in parallel): goal <= 1.3x; then, for
//      information, attempts of 6/8/10/12 steps against one of 12 (each verified as it ends);
//   2. host memory per extra attempt at a 128K-token transcript: goal <= 50 MB;
//   3. setup once: time to the first model request of attempt 4 vs attempt 1: goal <= 1.2x.
// Docker when the engine and the sandbox image are there (the real thing), else the local
// sandbox (said so in the output).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import {
  assertDockerReachable,
  connectDocker,
  describeDockerEndpoint,
} from '../src/sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE } from '../src/sandbox/docker-sandbox.js';
import { runPipeline, type PipelineDeps } from '../src/runner/run.js';
import { ATTEMPT_HEADER } from '../src/runner/phases/connect-model.js';
import type { RunResult, SandboxKind } from '../src/runner/run-types.js';
import { FIXED_CALC, ISSUE_TEXT, createPythonRepo } from '../test/support/python-repo.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type RecordedRequest,
  type ResponseSpec,
} from '../test/support/scripted-model-server.js';

const WALL_GOAL = 1.3;
const MEMORY_GOAL_MB = 50;
const FIRST_REQUEST_GOAL = 1.2;
const STEPS = 10;
const SETUP_SECONDS = 3;

export default async function run(): Promise<void> {
  const sandbox = await sandboxKind();
  const root = mkdtempSync(path.join(tmpdir(), 'bench-attempts-'));
  try {
    console.log(`sandbox: ${sandbox}`);
    await wallTime(root, sandbox);
    await memoryPerAttempt(root);
    await firstRequest(root, sandbox);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function sandboxKind(): Promise<SandboxKind> {
  const docker = connectDocker();
  try {
    await assertDockerReachable(docker);
    await docker.getImage(DEFAULT_SANDBOX_IMAGE).inspect();
    return 'docker';
  } catch {
    console.log(
      `no Docker engine at ${describeDockerEndpoint()} with ${DEFAULT_SANDBOX_IMAGE}: using the local sandbox`,
    );
    return 'local';
  }
}

/** Each attempt: 9 tool steps (the 5th writes the fix), then an answer; every call takes `delayMs`. */
function perAttempt(
  steps: number | ((attempt: number) => number),
  delayMs: number,
  step: (n: number) => ResponseSpec,
): (r: RecordedRequest) => ResponseSpec {
  const seen = new Map<string, number>();
  return (r) => {
    const k = String(r.headers[ATTEMPT_HEADER] ?? '1');
    const n = seen.get(k) ?? 0;
    seen.set(k, n + 1);
    const last = (typeof steps === 'number' ? steps : steps(Number(k))) - 1;
    const spec = n >= last ? finalAnswer('done') : step(n);
    return { ...spec, delayMs } as ResponseSpec;
  };
}

async function once(
  root: string,
  name: string,
  attempts: number,
  options: {
    sandbox: SandboxKind;
    config?: string;
    respond: (r: RecordedRequest) => ResponseSpec;
    deps?: Partial<PipelineDeps>;
  },
): Promise<{ ms: number; result: RunResult; requests: RecordedRequest[]; started: number }> {
  const python =
    options.sandbox === 'local'
      ? execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], {
          encoding: 'utf8',
        }).trim()
      : 'python3';
  const repo = createPythonRepo(mkdtempSync(path.join(root, `${name}-`)), {
    '.github/frognano.yml': `attempts: ${attempts}\ntest: ${python} -m pytest -q\n${options.config ?? ''}`,
  });
  const server = await startScriptedModelServer({ onExhausted: options.respond });
  try {
    const started = performance.now();
    const result = await runPipeline(
      {
        runId: `bench-${name}-${Date.now()}`,
        instanceId: 'bench/calc#1',
        repo: repo.dir,
        issueText: ISSUE_TEXT,
        sandbox: options.sandbox,
        outDir: path.join(root, `out-${name}`),
      },
      {
        modelConfig: { baseUrl: server.baseUrl, maxRetries: 0 },
        dataDir: path.join(root, 'data'),
        logger: pino({ level: 'silent' }),
        handleSignals: false,
        snapshots: { enabled: false },
        ...(options.sandbox === 'docker'
          ? { sandboxLimits: { memoryBytes: 512 * 1024 * 1024, pidsLimit: 256 } }
          : { localTempRoot: root }),
        ...options.deps,
      },
    );
    const ms = performance.now() - started;
    if (result.outcome !== 'completed')
      throw new Error(`${name}: ${result.outcome} ${result.error ?? ''}`);
    return { ms, result, requests: [...server.chatRequests], started };
  } finally {
    await server.close();
  }
}

async function wallTime(root: string, sandbox: SandboxKind): Promise<void> {
  const respond = () =>
    perAttempt(STEPS, 1000, (n) =>
      n === 4
        ? toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC })
        : toolCall('Bash', { command: 'ls' }),
    );
  const one = await once(root, 'wall-1', 1, { sandbox, respond: respond() });
  const four = await once(root, 'wall-4', 4, { sandbox, respond: respond() });
  const ratio = four.ms / one.ms;
  console.log(
    `wall time, ${STEPS} steps per attempt at 1 s per model call: 1 attempt ${fmt(one.ms)}, 4 attempts ${fmt(four.ms)}`,
  );
  console.log(
    `  4/1 ${ratio.toFixed(3)}x  target <= ${WALL_GOAL}x  ${ratio <= WALL_GOAL ? 'MET' : 'MISSED'}`,
  );
  console.log(`  phases, 1 attempt:  ${phases(one.result)}`);
  console.log(`  phases, 4 attempts: ${phases(four.result)}`);

  // Attempts rarely end together: each one is verified as soon as its own loop ends.
  const longest = STEPS + 2;
  const staggered = (steps: number | ((attempt: number) => number)) =>
    perAttempt(steps, 1000, (n) =>
      n === 2
        ? toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC })
        : toolCall('Bash', { command: 'ls' }),
    );
  const alone = await once(root, 'stagger-1', 1, { sandbox, respond: staggered(longest) });
  const spread = await once(root, 'stagger-4', 4, {
    sandbox,
    respond: staggered((k) => longest - 2 * (4 - k)),
  });
  console.log(
    `wall time, attempts of ${[1, 2, 3, 4].map((k) => longest - 2 * (4 - k)).join('/')} steps vs 1 attempt of ${longest}: 1 attempt ${fmt(alone.ms)}, 4 attempts ${fmt(spread.ms)}, 4/1 ${(spread.ms / alone.ms).toFixed(3)}x (no target: the early verifications hide behind the longest attempt)`,
  );
}

function phases(result: RunResult): string {
  return Object.entries(result.timings)
    .map(([name, ms]) => `${name} ${((ms ?? 0) / 1000).toFixed(1)}`)
    .join(', ');
}

/**
 * Host memory: the same run with 1 and with 4 attempts, each attempt reading a large file until
 * its transcript holds about 128K tokens; the peak RSS above the start, per extra attempt.
 */
async function memoryPerAttempt(root: string): Promise<void> {
  const big = Array.from({ length: 4000 }, (_, i) => `line ${i} ${'x'.repeat(60)}`).join('\n');
  const respond = () =>
    // 20,000 characters per Read observation (Leaf's cap), about 9K tokens as the loop
    // estimates them: 14 of them make a transcript of about 128K tokens.
    perAttempt(15, 0, (n) =>
      n === 0
        ? toolCall('Write', { file_path: 'big.txt', content: big })
        : toolCall('Read', { file_path: 'big.txt', offset: 1 + ((n * 250) % 3500) }),
    );
  const peaks: Record<number, number> = {};
  const tokens: Record<number, number> = {};
  for (const attempts of [1, 4]) {
    global.gc?.();
    const base = process.memoryUsage().rss;
    let peak = base;
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    const { result } = await once(root, `mem-${attempts}`, attempts, {
      sandbox: 'local',
      respond: respond(),
      deps: { maxContextTokens: 400_000 },
    });
    clearInterval(timer);
    peaks[attempts] = peak - base;
    tokens[attempts] = result.budgets.contextTokens;
  }
  const perExtra = (peaks[4]! - peaks[1]!) / 3 / 1024 / 1024;
  console.log(
    `host memory at a ${Math.round(tokens[1]! / 1000)}K-token transcript (local sandbox, RSS peak above start): 1 attempt ${mb(peaks[1]!)}, 4 attempts ${mb(peaks[4]!)}`,
  );
  console.log(
    `  per extra attempt ${perExtra.toFixed(1)} MB  target <= ${MEMORY_GOAL_MB} MB  ${perExtra <= MEMORY_GOAL_MB ? 'MET' : 'MISSED'}`,
  );
}

/** Setup once: with a setup that takes a few seconds, attempt 4 must not wait for another one. */
async function firstRequest(root: string, sandbox: SandboxKind): Promise<void> {
  const { requests, started, result } = await once(root, 'first', 4, {
    sandbox,
    config: `setup: sleep ${SETUP_SECONDS}\n`,
    respond: perAttempt(2, 0, () => toolCall('Bash', { command: 'true' })),
  });
  if (!result.attempts || result.attempts.length !== 4) throw new Error('expected 4 attempts');
  const first = (k: number) =>
    requests.find((r) => r.headers[ATTEMPT_HEADER] === String(k))?.receivedAt;
  const t1 = first(1);
  const t4 = first(4);
  if (t1 === undefined || t4 === undefined) throw new Error('an attempt sent no request');
  const ratio = (t4 - started) / (t1 - started);
  console.log(
    `time to first model request with a ${SETUP_SECONDS} s setup: attempt 1 ${fmt(t1 - started)}, attempt 4 ${fmt(t4 - started)}`,
  );
  console.log(
    `  4/1 ${ratio.toFixed(3)}x  target <= ${FIRST_REQUEST_GOAL}x  ${ratio <= FIRST_REQUEST_GOAL ? 'MET' : 'MISSED'}`,
  );
}

function fmt(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
