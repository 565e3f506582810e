import type { AttemptSummary, RunResult } from '../../../src/runner/run-types.js';

export const SAMPLE_PATCH = [
  'diff --git a/calc.py b/calc.py',
  'index 1111111..2222222 100644',
  '--- a/calc.py',
  '+++ b/calc.py',
  '@@ -1,2 +1,2 @@',
  ' def add(a, b):',
  '-    return a - b',
  '+    return a + b',
  '',
].join('\n');

export function runResult(overrides: Partial<RunResult> = {}): RunResult {
  return {
    runId: '6f1c2a9e-0000-4000-8000-000000000001',
    outcome: 'completed',
    exitReason: 'agent',
    baseCommit: 'a'.repeat(40),
    patch: SAMPLE_PATCH,
    partial: false,
    filesChanged: ['calc.py'],
    finalMessage: 'Fixed `add` to add instead of subtract.',
    testCommand: { command: 'python -m pytest -q', source: 'config' },
    verifyBefore: {
      command: 'python -m pytest -q',
      source: 'config',
      exitCode: 1,
      timedOut: false,
      outputTail: 'FAILED test_calc.py::test_add - assert -1 == 5\n1 failed, 1 passed',
      durationMs: 812,
    },
    verifyAfter: {
      command: 'python -m pytest -q',
      source: 'config',
      exitCode: 0,
      timedOut: false,
      outputTail: '2 passed in 0.01s',
      durationMs: 640,
    },
    violations: [],
    steps: [
      {
        step: 0,
        tools: [{ name: 'Read', args: 'calc.py', outcome: 'ok' }],
        modelMs: 1200,
        toolMs: 3,
      },
      {
        step: 1,
        tools: [{ name: 'Edit', args: 'calc.py', outcome: 'Edited calc.py (1 replacement).' }],
        modelMs: 900,
        toolMs: 2,
      },
      { step: 2, tools: [], modelMs: 500, toolMs: 0 },
    ],
    budgets: {
      steps: 3,
      maxSteps: 150,
      contextTokens: 4100,
      promptTokens: 12000,
      completionTokens: 800,
      wallMs: 4200,
      timeoutMs: 1_800_000,
    },
    timings: {},
    ...overrides,
  };
}

/** One attempt of a run with several: a verified, passing one-line fix unless overridden. */
export function attemptSummary(overrides: Partial<AttemptSummary> = {}): AttemptSummary {
  return {
    attempt: 1,
    outcome: 'completed',
    exitReason: 'agent',
    patch: SAMPLE_PATCH,
    partial: false,
    filesChanged: ['calc.py'],
    finalMessage: '',
    steps: 3,
    promptTokens: 1000,
    completionTokens: 200,
    contextTokens: 1200,
    violations: [],
    tests: 'pass',
    testsText: 'pass',
    ownTests: 'none',
    votes: 1,
    diffLines: 2,
    selected: false,
    reason: '',
    ...overrides,
  };
}
