// Several attempts in one run: one setup, N sandboxes, N Leaf loops against one scripted model
// that answers each attempt from its own script (told apart by the attempt header, never by the
// body), each patch verified, the winner chosen by evidence with a reason for every attempt.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/runner/run.js';
import type { RunProgress, RunRequest } from '../../src/runner/run-types.js';
import { ATTEMPT_HEADER } from '../../src/runner/phases/connect-model.js';
import {
  BUGGY_CALC,
  CALC_TEST,
  FIXED_CALC,
  ISSUE_TEXT,
  createPythonRepo,
} from '../support/python-repo.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type RecordedRequest,
  type ResponseSpec,
  type ScriptedModelServer,
  type ScriptStep,
} from '../support/scripted-model-server.js';

const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});
let server: ScriptedModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const PYTHON = execFileSync('python3', ['-c', 'import sys, pytest; print(sys.executable)'], {
  encoding: 'utf8',
}).trim();
const PYTEST = `${PYTHON} -m pytest`;

const REPRO_TEST =
  'from calc import add\n\n\ndef test_add_negative():\n    assert add(-1, 1) == 0\n';

/** Each attempt's own script, keyed by the attempt header the runner sends. */
const SCRIPTS: Record<string, ResponseSpec[]> = {
  // Fixes the bug and adds a test that reproduces it.
  '1': [
    toolCall('Edit', {
      file_path: 'calc.py',
      old_string: 'return a - b',
      new_string: 'return a + b',
    }),
    toolCall('Write', { file_path: 'test_repro.py', content: REPRO_TEST }),
    finalAnswer('Fixed add() and added a reproduction.'),
  ],
  // Fixes add() but breaks mul().
  '2': [
    toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC.replace('a * b', 'a ** b') }),
    finalAnswer('Rewrote calc.py.'),
  ],
  // Fixes add() and edits a workflow (a blocked path).
  '3': [
    toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC }),
    toolCall('Write', { file_path: '.github/workflows/ci.yml', content: 'on: push\n' }),
    finalAnswer('Fixed, and added CI.'),
  ],
  // Changes nothing.
  '4': [finalAnswer('I could not find the problem.')],
  // Fixes add(), then the connection to the model breaks mid-way.
  '5': [toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC }), { kind: 'drop' }],
};

function dispatcher(scripts: Record<string, ScriptStep[]>) {
  const queues = new Map(Object.entries(scripts).map(([k, v]) => [k, [...v]]));
  return (request: RecordedRequest): ResponseSpec | Promise<ResponseSpec> => {
    const attempt = String(request.headers[ATTEMPT_HEADER] ?? '1');
    const next = queues.get(attempt)?.shift();
    if (typeof next === 'function') return next(request);
    return (
      next ?? {
        kind: 'error',
        status: 400,
        body: { error: { message: `attempt ${attempt}: script exhausted` } },
      }
    );
  };
}

async function setup(
  attempts: number | undefined,
  scripts: Record<string, ScriptStep[]>,
  files: Record<string, string> = {},
): Promise<{
  request: RunRequest;
  deps: Parameters<typeof runPipeline>[1];
  out: string;
  local: string;
  data: string;
  events: RunProgress[];
}> {
  const root = mkdtempSync(path.join(tmpdir(), 'attempts-'));
  temps.push(root);
  const config = `test: ${PYTEST}\nmax_steps: 10\n${attempts === undefined ? '' : `attempts: ${attempts}\n`}`;
  const repo = createPythonRepo(path.join(root, 'src'), {
    '.github/frognano.yml': config,
    ...files,
  });
  server = await startScriptedModelServer({ onExhausted: dispatcher(scripts) });
  const local = path.join(root, 'local');
  mkdirSync(local);
  const events: RunProgress[] = [];
  return {
    request: {
      runId: `t-${path.basename(root)}`,
      instanceId: 'fixture/calc#1',
      repo: repo.dir,
      issueText: ISSUE_TEXT,
      sandbox: 'local',
      outDir: path.join(root, 'out'),
      onProgress: (e) => events.push(e),
    },
    deps: {
      modelConfig: { baseUrl: server.baseUrl, maxRetries: 0 },
      dataDir: path.join(root, 'data'),
      localTempRoot: local,
      logger: pino({ level: 'silent' }),
    },
    out: path.join(root, 'out'),
    local,
    data: path.join(root, 'data'),
    events,
  };
}

describe('runPipeline with several attempts', () => {
  it('runs five attempts at once and publishes the verified one with a reproduction, saying why each lost', async () => {
    const s = await setup(5, SCRIPTS);
    const result = await runPipeline(s.request, s.deps);

    expect(result.outcome).toBe('completed');
    expect(result.selectedAttempt).toBe(1);
    const byNumber = new Map(result.attempts!.map((a) => [a.attempt, a]));
    expect(result.attempts!.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5]);

    const one = byNumber.get(1)!;
    expect(one).toMatchObject({
      selected: true,
      tests: 'pass',
      ownTests: 'fail→pass',
      exitReason: 'agent',
    });
    expect(one.reason).toMatch(
      /^won: .*tests after pass; its own tests fail before and pass after/,
    );
    expect(byNumber.get(2)).toMatchObject({
      selected: false,
      tests: 'fail',
      testsText: '1 failing',
    });
    expect(byNumber.get(2)!.reason).toBe('lost: tests after: 1 failing (attempt 1: pass)');
    expect(byNumber.get(3)!.reason).toMatch(
      /^lost: policy: blocked_path .*\.github\/workflows\/ci\.yml/,
    );
    expect(byNumber.get(3)!.violations.map((v) => v.rule)).toContain('blocked_path');
    expect(byNumber.get(4)).toMatchObject({
      patch: '',
      reason: 'lost: the patch is empty',
      exitReason: 'agent',
    });
    const five = byNumber.get(5)!;
    expect(five.exitReason).toBe('llm_query_error');
    expect(five.tests).toBe('pass');
    expect(five.reason).toBe(
      "lost: its own tests do not fail before and pass after (attempt 1's do)",
    );

    // The result's own fields are the winner's.
    expect(result.patch).toBe(one.patch);
    expect(result.patch).toContain('+    return a + b');
    expect(result.filesChanged.sort()).toEqual(['calc.py', 'test_repro.py']);
    expect(result.verifyAfter).toMatchObject({ exitCode: 0 });
    expect(result.finalMessage).toBe('Fixed add() and added a reproduction.');

    // Every attempt asked the model the same thing, byte for byte, and said which it was.
    const firsts = [1, 2, 3, 4, 5].map((k) =>
      server!.chatRequests.find((r) => r.headers[ATTEMPT_HEADER] === String(k))!,
    );
    for (const first of firsts) expect(first.rawBody).toBe(firsts[0]!.rawBody);
    expect(server!.chatRequests.every((r) => r.headers[ATTEMPT_HEADER] !== undefined)).toBe(true);

    // Trajectories: attempt 1 where a one-attempt run keeps it, the others beside it; patches kept.
    expect(result.trajectoryPath).toBe(path.join(s.out, 'trajectory.json'));
    for (const k of [2, 3, 4, 5]) {
      const t = JSON.parse(
        readFileSync(path.join(s.out, `attempt-${k}`, 'trajectory.json'), 'utf8'),
      ) as {
        trajectory_id: string;
      };
      expect(t.trajectory_id).toBe(`${s.request.runId}-attempt-${k}`);
    }
    expect(readFileSync(path.join(s.out, 'attempt-2', 'patch.diff'), 'utf8')).toBe(
      byNumber.get(2)!.patch,
    );
    expect(readFileSync(path.join(s.out, 'attempt-1', 'patch.diff'), 'utf8')).toBe(one.patch);

    // Progress names the attempt of every step.
    const steps = s.events.filter((e) => e.kind === 'step');
    expect(new Set(steps.map((e) => (e.kind === 'step' ? e.attempt : 0)))).toEqual(
      new Set([1, 2, 3, 4, 5]),
    );

    // The user's repository is untouched; nothing of the run is left.
    expect(readFileSync(path.join(s.request.repo, 'calc.py'), 'utf8')).toBe(BUGGY_CALC);
    expect(readdirSync(s.local)).toEqual([]);
    const runs = path.join(s.data, 'runs');
    expect(existsSync(runs) ? readdirSync(runs) : []).toEqual([]);
  }, 240_000);

  it('makes agreeing attempts vote together, and breaks a tie by size, then steps', async () => {
    const wordy = FIXED_CALC.replace('def mul', '# multiply\ndef mul');
    const s = await setup(3, {
      '1': [toolCall('Write', { file_path: 'calc.py', content: wordy }), finalAnswer('a')],
      // The same change as attempt 3, in other whitespace.
      '2': [
        toolCall('Edit', {
          file_path: 'calc.py',
          old_string: 'return a - b',
          new_string: 'return a  +  b',
        }),
        toolCall('Bash', { command: 'true' }),
        finalAnswer('b'),
      ],
      '3': [
        toolCall('Edit', {
          file_path: 'calc.py',
          old_string: 'return a - b',
          new_string: 'return a + b',
        }),
        finalAnswer('c'),
      ],
    });
    const result = await runPipeline(s.request, s.deps);
    const reasons = Object.fromEntries(result.attempts!.map((a) => [a.attempt, a.reason]));
    expect(result.selectedAttempt).toBe(3);
    expect(result.attempts!.map((a) => a.votes)).toEqual([1, 2, 2]);
    expect(reasons[1]).toBe("lost: 1 of the attempts made its change, 2 made attempt 3's");
    expect(reasons[2]).toBe('lost: more steps (3, attempt 3: 2)');
    expect(reasons[3]).toMatch(/^won: .*2 of 3 attempts made this change/);
  }, 180_000);

  it('does not let a test that reads the source as text outrank a fix whose test runs add()', async () => {
    // The repository's own tests do not cover add(): both patches pass them, so only the
    // attempts' own tests can tell the fix from a patch that leaves the bug and adds a line
    // its test then looks for in calc.py.
    const grep =
      'import pathlib\n\n\ndef test_fixed():\n    assert "# add fixed" in pathlib.Path(__file__).with_name("calc.py").read_text()\n';
    const s = await setup(
      3,
      {
        '1': [
          toolCall('Edit', {
            file_path: 'calc.py',
            old_string: 'def add(a, b):',
            new_string: 'def add(a, b):\n    # add fixed',
          }),
          toolCall('Write', { file_path: 'test_fixed.py', content: grep }),
          finalAnswer('Fixed add().'),
        ],
        '2': SCRIPTS['1']!,
        // The fix without a test of its own.
        '3': [
          toolCall('Edit', {
            file_path: 'calc.py',
            old_string: 'return a - b',
            new_string: 'return a + b',
          }),
          finalAnswer('Fixed add().'),
        ],
      },
      { 'test_calc.py': CALC_TEST.replace(/def test_add\(\):\n.*\n\n\n/, '') },
    );
    const result = await runPipeline(s.request, s.deps);
    expect(result.verifyBefore).toMatchObject({ exitCode: 0 });
    const [cheat, honest, bare] = result.attempts!;
    expect([cheat!.tests, honest!.tests, bare!.tests]).toEqual(['pass', 'pass', 'pass']);
    // Both own tests fail on the original source and pass on the patched one...
    expect(cheat!.ownTestsBefore!.exitCode).not.toBe(0);
    expect(cheat!.agentTests!.exitCode).toBe(0);
    expect(result.selectedAttempt).toBe(2);
    // ...but the cheat's still pass when calc.py behaves as before with its text kept.
    expect(cheat!.ownTestsText!.exitCode).toBe(0);
    expect(honest!.ownTestsText!.exitCode).not.toBe(0);
    expect(honest).toMatchObject({ ownTests: 'fail→pass', selected: true });
    expect(cheat).toMatchObject({ ownTests: 'reads source', selected: false });
    expect(cheat!.reason).toBe(
      "lost: its own tests read the source, not run it: they pass on the original code with the new lines as comments (attempt 2's fail before and pass after)",
    );
    expect(bare!.ownTests).toBe('none');
    expect(result.patch).toContain('+    return a + b');
  }, 240_000);

  it('tells a test that reads the source from a real fix when the patch also has files git quotes', async () => {
    // Round three's cheat plus files whose names git quotes in its diff headers (non-ASCII; a
    // quote and a ">"): the text-only patch must still be built and the cheat caught.
    const grep =
      'import pathlib\n\n\ndef test_fixed():\n    assert "# add fixed" in pathlib.Path(__file__).with_name("calc.py").read_text()\n';
    const s = await setup(
      2,
      {
        '1': [
          toolCall('Edit', {
            file_path: 'calc.py',
            old_string: 'def add(a, b):',
            new_string: 'def add(a, b):\n    # add fixed',
          }),
          toolCall('Write', { file_path: 'notes-été.md', content: 'add() fixed\n' }),
          toolCall('Write', { file_path: 'rt3">x.txt', content: 'fixed\n' }),
          toolCall('Write', { file_path: 'test_fixed.py', content: grep }),
          finalAnswer('Fixed add().'),
        ],
        '2': SCRIPTS['1']!,
      },
      { 'test_calc.py': CALC_TEST.replace(/def test_add\(\):\n.*\n\n\n/, '') },
    );
    const result = await runPipeline(s.request, s.deps);
    const [cheat, honest] = result.attempts!;
    expect(cheat!.filesChanged).toEqual(
      expect.arrayContaining(['calc.py', 'notes-été.md', 'rt3">x.txt', 'test_fixed.py']),
    );
    expect(cheat!.ownTestsBefore!.exitCode).not.toBe(0);
    expect(cheat!.ownTestsText!.exitCode).toBe(0);
    expect(cheat).toMatchObject({ ownTests: 'reads source', selected: false });
    expect(honest).toMatchObject({ ownTests: 'fail→pass', selected: true });
    expect(result.selectedAttempt).toBe(2);
  }, 240_000);

  it('gives own tests no credit when the text-only tree cannot be built', async () => {
    // The cheat's added line holds a lone CR (a line end to Python): no comment holds it, so
    // there is no text-only tree, and its grep test must not count as a reproduction.
    const grep =
      'import pathlib\n\n\ndef test_fixed():\n    assert "# add fixed" in pathlib.Path(__file__).with_name("calc.py").read_text()\n';
    const s = await setup(
      2,
      {
        '1': [
          toolCall('Edit', {
            file_path: 'calc.py',
            old_string: 'def add(a, b):',
            new_string: 'def add(a, b):\n    # add fixed\r    # ok',
          }),
          toolCall('Write', { file_path: 'test_fixed.py', content: grep }),
          finalAnswer('Fixed add().'),
        ],
        '2': SCRIPTS['1']!,
      },
      { 'test_calc.py': CALC_TEST.replace(/def test_add\(\):\n.*\n\n\n/, '') },
    );
    const result = await runPipeline(s.request, s.deps);
    const [cheat, honest] = result.attempts!;
    expect(cheat!.tests).toBe('pass');
    expect(cheat!.ownTestsBefore!.exitCode).not.toBe(0);
    expect(cheat!.agentTests!.exitCode).toBe(0);
    expect(cheat!.ownTestsText).toBeUndefined();
    expect(cheat).toMatchObject({ ownTests: 'no', selected: false });
    expect(honest).toMatchObject({ ownTests: 'fail→pass', selected: true });
  }, 240_000);

  it("verifies an attempt as soon as its loop ends, while a slower attempt's loop goes on", async () => {
    // Attempt 2's loop ends only once attempt 1 is verified (four test runs: patched, its own
    // tests, those on the original, and on the original's text with the change as comments):
    // were verification to wait for every loop, it would end after a minute and fail below.
    const slow = { ...toolCall('Bash', { command: 'true' }), delayMs: 1000 } as ResponseSpec;
    const seen: { events?: RunProgress[] } = {};
    const verified = (attempt: number) =>
      (seen.events ?? []).some(
        (e) => e.kind === 'attempt' && e.attempt === attempt && e.state === 'done',
      );
    const afterAttempt1 = async (): Promise<ResponseSpec> => {
      for (let waited = 0; !verified(1) && waited < 60_000; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return finalAnswer('nothing');
    };
    const s = await setup(2, { '1': SCRIPTS['1']!, '2': [slow, slow, afterAttempt1] });
    seen.events = s.events;
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('completed');
    expect(result.selectedAttempt).toBe(1);
    expect(result.attempts![0]).toMatchObject({ tests: 'pass', ownTests: 'fail→pass' });
    const at = (match: (e: RunProgress) => boolean) => s.events.findIndex(match);
    const verified1 = at((e) => e.kind === 'attempt' && e.attempt === 1 && e.state === 'done');
    const lastStep2 = s.events.findLastIndex((e) => e.kind === 'step' && e.attempt === 2);
    expect(at((e) => e.kind === 'attempt' && e.attempt === 1 && e.state === 'verifying')).toBe(
      at((e) => e.kind === 'attempt'),
    );
    expect(verified1).toBeGreaterThan(0);
    expect(verified1).toBeLessThan(lastStep2);
    // Attempt 2 changed nothing: it is never verified, and verify-after still closes the run.
    expect(s.events.some((e) => e.kind === 'attempt' && e.attempt === 2)).toBe(false);
    expect(s.events.filter((e) => e.kind === 'phase').map((e) => e.phase)).toContain(
      'verify-after',
    );
    // The time of the verifications, though most of it passed within the agent phase.
    const tests = result.attempts![0]!.verifyAfter!.durationMs;
    expect(result.timings['verify-after']).toBeGreaterThan(tests);
  }, 120_000);

  it("keeps a losing attempt's error off the run: the result is the winner's", async () => {
    const s = await setup(2, {
      '1': [{ kind: 'error', status: 400, body: { error: { message: 'attempt one broke' } } }],
      '2': SCRIPTS['1']!,
    });
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('completed');
    expect(result.selectedAttempt).toBe(2);
    expect(result.error).toBeUndefined();
    expect(result.attempts![0]!.error).toContain('attempt one broke');
    expect(result.attempts![0]!.reason).toContain('attempt one broke');
  }, 120_000);

  it('with one attempt (the default) sends no attempt header and reports no attempts', async () => {
    const s = await setup(undefined, { '1': SCRIPTS['1']! });
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('completed');
    expect(result.attempts).toBeUndefined();
    expect(result.selectedAttempt).toBeUndefined();
    expect(server!.chatRequests.every((r) => r.headers[ATTEMPT_HEADER] === undefined)).toBe(true);
    expect(existsSync(path.join(s.out, 'attempt-1'))).toBe(false);
    expect(existsSync(path.join(s.out, 'trajectory.json'))).toBe(true);
  }, 120_000);

  it('runs eight attempts on one run signal without a listener-leak warning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const busy = [
        toolCall('Bash', { command: 'sleep 0.3' }),
        toolCall('Bash', { command: 'sleep 0.3' }),
        finalAnswer('nothing'),
      ];
      const s = await setup(8, Object.fromEntries([1, 2, 3, 4, 5, 6, 7, 8].map((k) => [k, busy])));
      const result = await runPipeline(s.request, s.deps);
      expect(result.attempts).toHaveLength(8);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  }, 120_000);

  it('takes the count from the caller over the config, bounded by FROGNANO_MAX_ATTEMPTS', async () => {
    const s = await setup(2, { '1': SCRIPTS['4']!, '2': SCRIPTS['4']!, '3': SCRIPTS['4']! });
    const result = await runPipeline(
      { ...s.request, overrides: { attempts: 4 } },
      { ...s.deps, env: { ...process.env, FROGNANO_MAX_ATTEMPTS: '3' } },
    );
    expect(result.attempts!.map((a) => a.attempt)).toEqual([1, 2, 3]);
  }, 120_000);
});
