// The run's result is assembled once, from the pieces the phases made. Its fields come in the
// order the phases ran (run.json is its JSON), a failure is the last word on outcome and error,
// and the selected attempt's figures replace attempt 1's.
import { describe, expect, it } from 'vitest';
import {
  assembleResult,
  type AttemptFigures,
  type LoopFigures,
  type RunEnd,
} from '../../src/runner/assemble-result.js';
import type { ModelEndpointRecord } from '../../src/leaf/trajectory.js';
import type { AttemptSummary, RunRequest, TestResult } from '../../src/runner/run-types.js';

const request: RunRequest = {
  runId: 'run-1',
  instanceId: 'octo/widgets#1',
  repo: '/tmp/repo',
  issueText: 'Fix it',
  sandbox: 'local',
  outDir: '/tmp/out',
};
const ended: RunEnd = { timings: { clone: 5, cleanup: 1 }, wallMs: 42 };
const OPENING = [
  'runId',
  'outcome',
  'patch',
  'partial',
  'filesChanged',
  'finalMessage',
  'violations',
  'steps',
  'budgets',
  'timings',
];

const test = (exitCode: number, outputTail = ''): TestResult => ({
  command: 'pytest',
  source: 'config',
  exitCode,
  timedOut: false,
  outputTail,
  durationMs: 3,
});

const loop = (patch: string, endpoint?: string): LoopFigures => ({
  exitReason: 'agent',
  partial: false,
  finalMessage: `done: ${patch}`,
  patch,
  steps: [{ step: 1, tools: [], modelMs: 1, toolMs: 1 }],
  nSteps: 1,
  contextTokens: 100,
  usage: { promptTokens: 80, completionTokens: 20 },
  trajectory: endpoint ? { model_endpoints: [served(endpoint)] } : {},
});

const served = (endpoint: string): ModelEndpointRecord => ({
  endpoint,
  first_step: 0,
  last_step: 0,
  requests: 1,
  error: null,
  model_id: 'frognano',
  root: null,
  max_model_len: null,
  owned_by: null,
  server_version: null,
});

const attempt = (n: number, figures: Partial<AttemptFigures> = {}): AttemptFigures => ({
  trajectoryPath: `/tmp/out/attempt-${n}/trajectory.json`,
  filesChanged: [`file${n}.py`],
  ...figures,
});

describe('assembleResult', () => {
  it('before anything was made: the opening fields, the caller budgets, the failure last', () => {
    const result = assembleResult(
      { ...request, overrides: { maxSteps: 7, timeoutMinutes: 2 } },
      {},
      { ...ended, failure: { outcome: 'clone_failed', error: 'cannot clone /tmp/repo' } },
    );
    expect(Object.keys(result)).toEqual([...OPENING, 'error']);
    expect(result).toMatchObject({
      runId: 'run-1',
      outcome: 'clone_failed',
      error: 'cannot clone /tmp/repo',
      patch: '',
      budgets: { steps: 0, maxSteps: 7, timeoutMs: 120_000, wallMs: 42 },
      timings: { clone: 5, cleanup: 1 },
    });
    expect(Object.keys(result.budgets)).toEqual([
      'steps',
      'maxSteps',
      'contextTokens',
      'promptTokens',
      'completionTokens',
      'wallMs',
      'timeoutMs',
    ]);
  });

  it('a config that stopped part way: what it settled until then, in its order', () => {
    const result = assembleResult(
      request,
      {
        baseCommit: 'abc',
        config: {
          instructionFiles: [{ path: 'AGENTS.md', state: 'used', bytes: 3 }],
          budgets: { maxSteps: 30, timeoutMs: 600_000 },
          testCommand: { command: 'pytest', source: 'detected', detail: 'pytest.ini' },
        },
      },
      { ...ended, failure: { outcome: 'clone_failed', error: 'no previous revisions' } },
    );
    expect(Object.keys(result)).toEqual([
      ...OPENING,
      'baseCommit',
      'instructionFiles',
      'testCommand',
      'error',
    ]);
    expect(result.budgets).toMatchObject({ maxSteps: 30, timeoutMs: 600_000 });
  });

  it("a test command that cannot run: its output replaces setup's, where setup's stood", () => {
    const result = assembleResult(
      request,
      {
        baseCommit: 'abc',
        setup: { snapshotHit: false, setupNetwork: false, setupTail: 'pip install ok' },
        verifyBefore: {
          verifyBefore: test(127, 'pytest: not found'),
          setupTail: 'pytest: not found',
        },
      },
      { ...ended, failure: { outcome: 'setup_failed', error: 'the test command could not run' } },
    );
    expect(Object.keys(result)).toEqual([
      ...OPENING,
      'baseCommit',
      'snapshotHit',
      'setupNetwork',
      'setupTail',
      'verifyBefore',
      'error',
    ]);
    expect(result.setupTail).toBe('pytest: not found');
  });

  it('a snapshot hit has no setup tail of its own: the unrunnable test adds one after verifyBefore', () => {
    const result = assembleResult(
      request,
      {
        setup: { snapshotHit: true },
        verifyBefore: { verifyBefore: test(127, 'x: not found'), setupTail: 'x: not found' },
      },
      { ...ended, failure: { outcome: 'setup_failed', error: 'no x' } },
    );
    expect(Object.keys(result).slice(OPENING.length)).toEqual([
      'snapshotHit',
      'verifyBefore',
      'setupTail',
      'error',
    ]);
  });

  it("one attempt completed: the selected attempt's figures and evidence; its loop's error is gone", () => {
    const first = attempt(1, { leaf: loop('P1', 'gpu-a'), error: 'a tool failed' });
    const result = assembleResult(
      request,
      {
        baseCommit: 'abc',
        config: { testCommand: { command: 'pytest', source: 'config' } },
        setup: { snapshotHit: false },
        verifyBefore: { verifyBefore: test(1) },
        trajectoryPath: first.trajectoryPath,
        firstAttempt: first,
        selection: {
          winner: {
            ...first,
            error: undefined,
            filesChanged: ['calc.py'],
            verifyAfter: test(0),
            violations: [{ rule: 'patch_size', detail: 'too big' }],
          },
        },
      },
      ended,
    );
    expect(Object.keys(result)).toEqual([
      ...OPENING,
      'baseCommit',
      'testCommand',
      'snapshotHit',
      'verifyBefore',
      'trajectoryPath',
      'exitReason',
      'servedBy',
      'verifyAfter',
    ]);
    expect(result).toMatchObject({
      outcome: 'completed',
      patch: 'P1',
      filesChanged: ['calc.py'],
      finalMessage: 'done: P1',
      violations: [{ rule: 'patch_size', detail: 'too big' }],
      budgets: { steps: 1, contextTokens: 100, promptTokens: 80, completionTokens: 20 },
    });
    expect(result.error).toBeUndefined();
    expect(result.servedBy?.[0]?.endpoint).toBe('gpu-a');
  });

  it("several attempts: the winner's figures over attempt 1's, then the selection", () => {
    const first = attempt(1, { leaf: loop('P1') });
    const second = attempt(2, { leaf: loop('P2', 'gpu-b'), error: 'verify-after was not run' });
    const summaries = [{ attempt: 1 }, { attempt: 2 }] as AttemptSummary[];
    const result = assembleResult(
      request,
      {
        config: { followUpBase: { commit: 'base', harnessFiles: ['conftest.py'] } },
        trajectoryPath: first.trajectoryPath,
        firstAttempt: first,
        selection: {
          winner: { ...second, harnessSinceOrigin: ['conftest.py', 'tox.ini'], violations: [] },
          selectedAttempt: 2,
          attempts: summaries,
        },
      },
      ended,
    );
    expect(Object.keys(result).slice(OPENING.length)).toEqual([
      'followUpBase',
      'trajectoryPath',
      'exitReason',
      'servedBy',
      'error',
      'selectedAttempt',
      'attempts',
    ]);
    expect(result).toMatchObject({
      patch: 'P2',
      filesChanged: ['file2.py'],
      trajectoryPath: '/tmp/out/attempt-2/trajectory.json',
      error: 'verify-after was not run',
      followUpBase: { commit: 'base', harnessFiles: ['conftest.py', 'tox.ini'] },
      selectedAttempt: 2,
    });
    expect(result.attempts).toBe(summaries);
  });

  it("every attempt failed: attempt 1's loop figures, and the failure as outcome and error", () => {
    const first = attempt(1, {
      leaf: loop('partial'),
      error: 'model gone',
    });
    const result = assembleResult(
      request,
      { trajectoryPath: first.trajectoryPath, firstAttempt: first },
      {
        ...ended,
        failure: { outcome: 'capture_failed', error: 'the patch could not be captured' },
      },
    );
    expect(Object.keys(result).slice(OPENING.length)).toEqual([
      'trajectoryPath',
      'exitReason',
      'error',
    ]);
    expect(result).toMatchObject({
      outcome: 'capture_failed',
      error: 'the patch could not be captured',
      patch: 'partial',
      filesChanged: ['file1.py'],
    });
  });

  it('an attempt without a loop adds only its trajectory path', () => {
    const result = assembleResult(
      request,
      { trajectoryPath: '/tmp/out/trajectory.json', firstAttempt: attempt(1) },
      { ...ended, failure: { outcome: 'sandbox_failed', error: 'no sandbox' } },
    );
    expect(Object.keys(result).slice(OPENING.length)).toEqual(['trajectoryPath', 'error']);
    expect(result.filesChanged).toEqual([]);
  });
});
