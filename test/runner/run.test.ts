import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  runPipeline,
  setupInstallsTree,
  taskText,
  type PipelineDeps,
} from '../../src/runner/run.js';
import type { Model } from '../../src/leaf/model.js';
import { createOpenAIModel } from '../../src/leaf/openai-model.js';
import type { RunProgress, RunRequest } from '../../src/runner/run-types.js';
import { freePort } from '../../src/free-port.js';
import {
  BUGGY_CALC,
  FIXED_CALC,
  ISSUE_TEXT,
  createPythonRepo,
  git,
} from '../support/python-repo.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type ScriptStep,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';

// The phases a run without setup commands goes through, in order.
const PHASES_WITHOUT_SETUP = [
  'clone',
  'config',
  'sandbox',
  'verify-before',
  'agent',
  'verify-after',
  'policy',
  'cleanup',
] as const;

const temps: string[] = [];
function temp(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  temps.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

// The local sandbox runs `bash -lc`, whose profile resets PATH: name the interpreter that
// has pytest (in the Docker image it is simply python3).
const PYTHON = execFileSync('python3', ['-c', 'import sys, pytest; print(sys.executable)'], {
  encoding: 'utf8',
}).trim();
const PYTEST = `${PYTHON} -m pytest`;

/** The model's side of a fix: read the file, edit it, run the tests, answer. */
const FIX_SCRIPT: ScriptStep[] = [
  toolCall('Read', { file_path: 'calc.py' }),
  toolCall('Edit', {
    file_path: 'calc.py',
    old_string: 'return a - b',
    new_string: 'return a + b',
  }),
  toolCall('Bash', { command: PYTEST }),
  finalAnswer('Fixed add() to add.'),
];

// One scripted model server per test, so a failed test's unused script cannot leak.
let server: ScriptedModelServer;
afterEach(async () => {
  await server?.close();
});

interface Setup {
  request: RunRequest;
  deps: PipelineDeps;
  dirs: { data: string; local: string; out: string };
  events: RunProgress[];
}

async function setup(
  options: {
    extraFiles?: Record<string, string>;
    script?: ScriptStep[];
    request?: Partial<RunRequest>;
  } = {},
): Promise<Setup> {
  const root = temp('run-');
  const repo = createPythonRepo(path.join(root, 'src'), options.extraFiles ?? {});
  server = await startScriptedModelServer({ script: options.script ?? [] });
  const dirs = {
    data: path.join(root, 'data'),
    local: path.join(root, 'local'),
    out: path.join(root, 'out'),
  };
  mkdirSync(dirs.local);
  const events: RunProgress[] = [];
  return {
    request: {
      runId: `t-${path.basename(root)}`,
      instanceId: 'fixture/calc#1',
      repo: repo.dir,
      issueText: ISSUE_TEXT,
      sandbox: 'local',
      outDir: dirs.out,
      onProgress: (e) => events.push(e),
      ...options.request,
    },
    deps: {
      modelConfig: { baseUrl: server.baseUrl, maxRetries: 0 },
      dataDir: dirs.data,
      localTempRoot: dirs.local,
      logger: pino({ level: 'silent' }),
    },
    dirs,
    events,
  };
}

/** Nothing of the run is left: no run directory, no local sandbox copy. */
function expectNothingLeft(s: Setup): void {
  const runs = path.join(s.dirs.data, 'runs');
  expect(existsSync(runs) ? readdirSync(runs) : []).toEqual([]);
  expect(readdirSync(s.dirs.local)).toEqual([]);
}

describe('runPipeline with the local sandbox', () => {
  it('fixes a failing test: verify-before fails, verify-after passes, patch and trajectory recorded', async () => {
    const s = await setup({
      script: FIX_SCRIPT,
      extraFiles: {
        '.github/frognano.yml': `instructions: Keep the change minimal.\nmax_steps: 10\ntest: ${PYTEST}\n`,
      },
      request: { extraGuidance: 'Do not touch the tests.' },
    });
    const before = server.chatRequests.length;
    const result = await runPipeline(s.request, s.deps);

    expect(result.error).toBeUndefined();
    expect(result.outcome).toBe('completed');
    expect(result.exitReason).toBe('agent');
    expect(result.partial).toBe(false);
    expect(result.finalMessage).toBe('Fixed add() to add.');
    expect(result.testCommand).toEqual({ command: PYTEST, source: 'config' });
    expect(result.verifyBefore).toMatchObject({
      command: PYTEST,
      source: 'config',
      exitCode: 1,
      timedOut: false,
    });
    expect(result.verifyBefore!.outputTail).toContain('1 failed, 1 passed');
    expect(result.verifyAfter).toMatchObject({ exitCode: 0, timedOut: false });
    expect(result.verifyAfter!.outputTail).toContain('2 passed');
    expect(result.filesChanged).toEqual(['calc.py']);
    expect(result.patch).toContain('-    return a - b\n+    return a + b');
    expect(result.violations).toEqual([]);
    expect(result.baseCommit).toBe(git(s.request.repo, 'rev-parse', 'HEAD').trim());
    expect(result.budgets).toMatchObject({ steps: 4, maxSteps: 10, timeoutMs: 30 * 60_000 });
    expect(result.steps.map((st) => st.tools.map((t) => t.name))).toEqual([
      ['Read'],
      ['Edit'],
      ['Bash'],
      [],
    ]);
    for (const p of PHASES_WITHOUT_SETUP) {
      expect(result.timings[p], p).toBeGreaterThanOrEqual(0);
    }
    expect(result.timings.setup).toBeUndefined();
    expect(
      s.events.filter((e) => e.kind === 'phase').map((e) => (e.kind === 'phase' ? e.phase : '')),
    ).toEqual(PHASES_WITHOUT_SETUP);
    expect(s.events.filter((e) => e.kind === 'step')).toHaveLength(4);

    // The task is issue, then instructions, then extra guidance, blank lines between (§1).
    const first = server.chatRequests[before]!.body!.messages!;
    expect(first[1]).toEqual({
      role: 'user',
      content: `${ISSUE_TEXT}\n\nKeep the change minimal.\n\nDo not touch the tests.`,
    });
    const trajectory = JSON.parse(readFileSync(result.trajectoryPath!, 'utf8')) as Record<
      string,
      unknown
    >;
    expect(trajectory.exit_reason).toBe('agent');
    expect(trajectory.instance_id).toBe('fixture/calc#1');
    expect(result.trajectoryPath).toBe(path.join(s.dirs.out, 'trajectory.json'));
    // The user's repository is untouched.
    expect(readFileSync(path.join(s.request.repo, 'calc.py'), 'utf8')).toBe(BUGGY_CALC);
    expectNothingLeft(s);
  });

  it('runs setup commands and uses the configured test command', async () => {
    const s = await setup({
      script: [
        toolCall('Bash', { command: 'cat setup-ran.txt' }),
        toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC }),
        finalAnswer('done'),
      ],
      extraFiles: {
        '.github/frognano.yml': `setup:\n  - echo one > setup-ran.txt\n  - echo two >> setup-ran.txt\n  - echo x > "odd [1]*?.txt"\ntest: ${PYTEST} -q test_calc.py\n`,
      },
    });
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('completed');
    expect(result.testCommand).toEqual({ command: `${PYTEST} -q test_calc.py`, source: 'config' });
    expect(result.timings.setup).toBeGreaterThanOrEqual(0);
    expect(result.snapshotHit).toBe(false);
    // The agent saw setup's output, but it is not part of the patch (nor is __pycache__).
    const trajectory = readFileSync(result.trajectoryPath!, 'utf8');
    expect(trajectory).toContain('one\\ntwo');
    expect(result.filesChanged).toEqual(['calc.py']);
    expect(result.verifyBefore!.exitCode).toBe(1);
    expect(result.verifyAfter!.exitCode).toBe(0);
    expectNothingLeft(s);
  });

  it('stops with config_error and a one-line message for a bad config, before any sandbox or model request', async () => {
    const s = await setup({ extraFiles: { '.github/frognano.yml': 'max_steps: lots\n' } });
    const before = server.requests.length;
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('config_error');
    expect(result.error).toBe(
      '.github/frognano.yml: max_steps must be a positive integer (got "lots")',
    );
    expect(result.timings.sandbox).toBeUndefined();
    expect(server.requests.length).toBe(before);
    expectNothingLeft(s);
  });

  it('stops with setup_failed and the output tail when a setup command fails', async () => {
    const s = await setup({
      extraFiles: {
        '.github/frognano.yml':
          'setup:\n  - echo preparing\n  - echo "no such package" >&2; exit 3\n  - echo never\n',
      },
    });
    const before = server.requests.length;
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('setup_failed');
    expect(result.error).toBe(
      'setup command 2 (`echo "no such package" >&2; exit 3`) failed with exit code 3',
    );
    expect(result.setupTail).toContain('preparing');
    expect(result.setupTail).toContain('no such package');
    expect(result.setupTail).not.toContain('never');
    expect(result.verifyBefore).toBeUndefined();
    expect(server.requests.length).toBe(before);
    expectNothingLeft(s);
  });

  it('stops setup at its own time limit, and records a test command that times out', async () => {
    const slowSetup = await setup({
      extraFiles: { '.github/frognano.yml': 'setup:\n  - echo started; sleep 20\n' },
    });
    const result = await runPipeline(slowSetup.request, { ...slowSetup.deps, setupTimeoutMs: 500 });
    expect(result.outcome).toBe('setup_failed');
    expect(result.error).toBe(
      'setup command 1 (`echo started; sleep 20`) did not finish within the setup time limit',
    );
    expect(result.setupTail).toContain('started');
    expectNothingLeft(slowSetup);

    const slowTest = await setup({
      script: [finalAnswer('nothing')],
      extraFiles: { '.github/frognano.yml': 'test: echo testing; sleep 20\n' },
    });
    const timed = await runPipeline(slowTest.request, { ...slowTest.deps, testTimeoutMs: 500 });
    expect(timed.outcome).toBe('completed');
    expect(timed.verifyBefore).toMatchObject({ command: 'echo testing; sleep 20', timedOut: true });
    expect(timed.verifyBefore!.outputTail).toContain('testing');
    expectNothingLeft(slowTest);
  });

  it('stops before the agent when the test command cannot run (a missing tool, exit 127)', async () => {
    const s = await setup({
      extraFiles: { '.github/frognano.yml': 'test: frognano-no-such-tool -q\n' },
    });
    const before = server.requests.length;
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('setup_failed');
    expect(result.error).toMatch(
      /^the test command `frognano-no-such-tool -q` could not run \(exit 127: .*frognano-no-such-tool: command not found\): install the tool in `setup` or pick an `image` that has it$/,
    );
    expect(result.verifyBefore).toMatchObject({ exitCode: 127 });
    expect(result.setupTail).toContain('command not found');
    expect(result.timings.agent).toBeUndefined();
    expect(server.requests.length).toBe(before);
    expectNothingLeft(s);
  });

  it("bounds the repository's budgets by the operator's caps", async () => {
    const s = await setup({
      script: [finalAnswer('nothing')],
      extraFiles: { '.github/frognano.yml': 'max_steps: 400\ntimeout_minutes: 300\n' },
    });
    const env = {
      ...(s.deps.env ?? process.env),
      FROGNANO_MAX_STEPS_CAP: '7',
      FROGNANO_MAX_TIMEOUT_MINUTES_CAP: '2',
    };
    const result = await runPipeline(s.request, { ...s.deps, env });
    expect(result.budgets.maxSteps).toBe(7);
    expect(result.budgets.timeoutMs).toBe(2 * 60_000);
    expectNothingLeft(s);
  });

  it('detects the test command when the config names none', async () => {
    const s = await setup({ script: [finalAnswer('nothing')] });
    const result = await runPipeline(s.request, s.deps);
    expect(result.testCommand).toEqual({
      command: 'python3 -m pytest',
      source: 'detected',
      detail: 'detected pytest: found pytest.ini',
    });
    expect(result.verifyBefore).toMatchObject({ command: 'python3 -m pytest', source: 'detected' });
    expectNothingLeft(s);
  });

  it('records an empty patch without verify-after when the agent changes nothing', async () => {
    const s = await setup({
      script: [finalAnswer('I could not reproduce this.')],
      extraFiles: { '.github/frognano.yml': `test: ${PYTEST}\n` },
    });
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('completed');
    expect(result.exitReason).toBe('agent');
    expect(result.patch).toBe('');
    expect(result.filesChanged).toEqual([]);
    expect(result.verifyBefore!.exitCode).toBe(1);
    expect(result.verifyAfter).toBeUndefined();
    expect(result.violations).toEqual([]);
    expectNothingLeft(s);
  });

  it("gives the attempt's model back exactly once", async () => {
    const s = await setup({
      script: [finalAnswer('Nothing to change.')],
      extraFiles: { '.github/frognano.yml': `test: ${PYTEST}\n` },
    });
    const served = createOpenAIModel({ baseUrl: server.baseUrl, maxRetries: 0 });
    let released = 0;
    const model: Model = {
      complete: (messages, tools, signal) => served.complete(messages, tools, signal),
      release: () => {
        released++;
        return Promise.resolve();
      },
    };
    const result = await runPipeline(s.request, { ...s.deps, model });
    expect(result.exitReason).toBe('agent');
    expect(released).toBe(1);
  });

  it('reports policy violations on a patch that touches blocked paths', async () => {
    const s = await setup({
      script: [
        toolCall('Write', { file_path: '.github/workflows/evil.yml', content: 'on: push\n' }),
        toolCall('Write', { file_path: 'vendor/x.txt', content: 'x\n' }),
        finalAnswer('done'),
      ],
      extraFiles: { '.github/frognano.yml': 'blocked_paths: ["vendor/**"]\n' },
    });
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('completed');
    expect(result.violations).toEqual([
      {
        rule: 'blocked_path',
        detail: '.github/workflows/evil.yml matches blocked path .github/**',
      },
      { rule: 'blocked_path', detail: 'vendor/x.txt matches blocked path vendor/**' },
    ]);
    expectNothingLeft(s);
  });

  it('checks what git applies, not only the patch text: a hijacked git diff cannot smuggle a blocked file', async () => {
    // The agent owns the sandbox's shell: a login profile can make `git diff` (the patch
    // capture) print any text. This one hides pytest.ini behind a traditional diff whose
    // file names carry space-separated timestamps, which git apply strips and the text
    // parser alone did not.
    const smuggled = [
      '--- a/pytest.ini 2020-01-01 00:00:00.000000000 +0000',
      '+++ b/pytest.ini 2020-01-01 00:00:00.000000000 +0000',
      '@@ -1,2 +1,2 @@',
      ' [pytest]',
      '-addopts = -q -p no:cacheprovider',
      '+addopts = -q -p no:cacheprovider --co',
      '',
    ].join('\n');
    const profile = [
      'git() {',
      '  case " $* " in',
      `    *" diff "*) printf '%s' '${smuggled}' ;;`,
      '    *) command git "$@" ;;',
      '  esac',
      '}',
      '',
    ].join('\n');
    const s = await setup({
      script: [
        toolCall('Bash', { command: `cat > ~/.bash_profile <<'EOF'\n${profile}EOF` }),
        finalAnswer('done'),
      ],
      extraFiles: { '.github/frognano.yml': 'blocked_paths: ["pytest.ini"]\n' },
    });
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('completed');
    expect(result.patch).toBe(smuggled);
    expect(result.violations).toContainEqual({
      rule: 'blocked_path',
      detail: 'pytest.ini matches blocked path pytest.ini',
    });
    expectNothingLeft(s);
  });

  it('runs verify-after in a fresh sandbox: evidence cannot be faked from inside the agent sandbox', async () => {
    // The agent leaves the bug in place, touches a comment, and makes every later `python3`
    // in its sandbox a fake that reports success.
    const profile = 'python3() { echo "1 passed in 0.01s"; return 0; }\n';
    const s = await setup({
      script: [
        toolCall('Bash', { command: `cat > ~/.bash_profile <<'EOF'\n${profile}EOF` }),
        toolCall('Edit', {
          file_path: 'calc.py',
          old_string: 'return a - b',
          new_string: 'return a - b  # fixed',
        }),
        toolCall('Bash', { command: 'python3 -m pytest' }),
        finalAnswer('Fixed, the tests pass.'),
      ],
    });
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('completed');
    const trajectory = readFileSync(result.trajectoryPath!, 'utf8');
    expect(trajectory).toContain('1 passed in 0.01s');
    expect(result.verifyBefore).toMatchObject({ exitCode: 1 });
    expect(result.verifyAfter).toMatchObject({ exitCode: 1, timedOut: false });
    expect(result.verifyAfter!.outputTail).toContain('1 failed, 1 passed');
    expectNothingLeft(s);
  });

  it("takes the verdict from the repository's own harness: a conftest.py forcing exit 0 does not turn fail into pass", async () => {
    // The bug stays; the patch adds a conftest.py whose session hook reports success, a test
    // of its own, and a comment in the source.
    const forged = [
      'def pytest_sessionfinish(session, exitstatus):',
      '    session.exitstatus = 0',
      '',
    ].join('\n');
    const s = await setup({
      script: [
        toolCall('Write', { file_path: 'conftest.py', content: forged }),
        toolCall('Write', {
          file_path: 'tests/test_extra.py',
          content: 'def test_extra():\n    assert True\n',
        }),
        toolCall('Edit', {
          file_path: 'calc.py',
          old_string: 'return a - b',
          new_string: 'return a - b  # fixed',
        }),
        finalAnswer('Fixed, the tests pass.'),
      ],
      extraFiles: { '.github/frognano.yml': `test: ${PYTEST}\n` },
    });
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('completed');
    expect(result.error).toBeUndefined();
    expect(result.verifyBefore).toMatchObject({ exitCode: 1 });
    // The verdict: the source change on the original harness and tests.
    expect(result.verifyAfter).toMatchObject({ exitCode: 1, timedOut: false });
    expect(result.verifyAfter!.outputTail).toContain('1 failed, 1 passed');
    // The agent's own evidence, with its conftest.py and test: reported, not trusted.
    expect(result.agentTests).toMatchObject({ command: PYTEST, exitCode: 0 });
    expect(result.agentTests!.outputTail).toContain('1 failed, 2 passed');
    expect(result.patchFacts).toMatchObject({
      harnessFiles: ['conftest.py'],
      testFiles: ['tests/test_extra.py'],
    });
    expectNothingLeft(s);
  });

  it('a compiled module in a package, its source deleted, yields "after: fail": bytecode is harness', async () => {
    // Python imports pkg/calc.pyc when pkg/calc.py is gone: the reviewer would read neither.
    const fixed = 'def add(a, b):\n    return a + b\n';
    const compile = [
      `printf '${fixed.replace(/\n/g, '\\n')}' > /tmp/fixed-$$.py`,
      `${PYTHON} -c "import py_compile, sys; py_compile.compile(sys.argv[1], cfile='pkg/calc.pyc', doraise=True)" /tmp/fixed-$$.py`,
      'rm pkg/calc.py',
      `printf '!*.pyc\\n' >> .gitignore`,
    ].join(' && ');
    const s = await setup({
      script: [toolCall('Bash', { command: compile }), finalAnswer('Fixed.')],
      extraFiles: {
        '.github/frognano.yml': `test: ${PYTEST} -q test_pkg.py\n`,
        'pkg/__init__.py': '',
        'pkg/calc.py': 'def add(a, b):\n    return a - b\n',
        'test_pkg.py': 'from pkg.calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
      },
    });
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('completed');
    expect(result.patchFacts!.binaries.map((b) => b.path)).toEqual(['pkg/calc.pyc']);
    expect(result.patchFacts!.harnessFiles).toEqual(['pkg/calc.pyc']);
    expect(result.verifyBefore).toMatchObject({ exitCode: 1 });
    expect(result.verifyAfter!.exitCode).not.toBe(0);
    // The agent's own evidence has its bytecode: reported apart, not trusted.
    expect(result.agentTests).toMatchObject({ exitCode: 0 });
    expectNothingLeft(s);
  });

  // café.py is a new root module: set aside as harness, so the agent's tests run once more.
  it("lists links, binaries, mode changes and .gitattributes from git's own reading, and refuses links out of the repository", async () => {
    const commands = [
      'ln -s /etc etc-link',
      'ln -s ../../../../etc/passwd passwd-link',
      'mkdir -p docs "docs b" && ln -s ../calc.py docs/calc-link',
      "printf '\\177ELF\\002\\001\\001\\000\\000' > tool.bin && chmod +x tool.bin calc.py",
      "printf 'x = 1\\n' > café.py && printf 'hi\\n' > 'docs b/innocent.md'",
      "printf '*.py filter=lfs\\n' > .gitattributes",
    ].join(' && ');
    const s = await setup({
      script: [toolCall('Bash', { command: commands }), finalAnswer('done')],
      extraFiles: { '.github/frognano.yml': `test: ${PYTEST}\n` },
    });
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('completed');
    const facts = result.patchFacts!;
    expect(facts.files.map((f) => [f.path, f.status, f.added, f.removed])).toEqual([
      ['.gitattributes', 'A', 1, 0],
      ['café.py', 'A', 1, 0],
      ['calc.py', 'M', 0, 0],
      ['docs b/innocent.md', 'A', 1, 0],
      ['docs/calc-link', 'A', 1, 0],
      ['etc-link', 'A', 1, 0],
      ['passwd-link', 'A', 1, 0],
      ['tool.bin', 'A', null, null],
    ]);
    expect(result.filesChanged).toEqual(facts.files.map((f) => f.path));
    expect(facts.symlinks).toEqual([
      { path: 'docs/calc-link', target: '../calc.py' },
      { path: 'etc-link', target: '/etc' },
      { path: 'passwd-link', target: '../../../../etc/passwd' },
    ]);
    expect(facts.binaries).toEqual([{ path: 'tool.bin', size: 9, mode: '100755' }]);
    expect(facts.modeChanges).toEqual([
      { path: 'calc.py', oldMode: '100644', newMode: '100755' },
      { path: 'tool.bin', oldMode: '000000', newMode: '100755' },
    ]);
    expect(facts.gitattributes).toEqual(['.gitattributes']);
    expect(result.violations.filter((v) => v.rule === 'symlink')).toEqual([
      { rule: 'symlink', detail: 'etc-link is a link to "/etc", which is outside the repository' },
      {
        rule: 'symlink',
        detail:
          'passwd-link is a link to "../../../../etc/passwd", which is outside the repository',
      },
    ]);
    expectNothingLeft(s);
  }, 60_000);

  it('stops with model_unreachable in one line when the endpoint is down', async () => {
    const s = await setup();
    // A port nothing listens on (port 9 is one fetch refuses, which says so instead).
    const port = await freePort();
    const result = await runPipeline(s.request, {
      ...s.deps,
      modelConfig: { baseUrl: `http://127.0.0.1:${port}/v1`, maxRetries: 0 },
    });
    expect(result.outcome).toBe('model_unreachable');
    expect(result.error).toMatch(
      new RegExp(`^model endpoint http://127\\.0\\.0\\.1:${port}/v1 is unreachable`),
    );
    expect(result.verifyBefore!.exitCode).toBe(1);
    expectNothingLeft(s);
  });

  it('stops with clone_failed for a repository that does not exist', async () => {
    const s = await setup();
    const result = await runPipeline(
      { ...s.request, repo: 'file:///nonexistent/repo.git' },
      s.deps,
    );
    expect(result.outcome).toBe('clone_failed');
    expect(result.error).toMatch(/^cannot clone file:\/\/\/nonexistent\/repo\.git: /);
    expectNothingLeft(s);
  });

  it('is cancelled by the caller in the middle of the loop and still cleans up', async () => {
    const controller = new AbortController();
    const s = await setup({
      script: [toolCall('Bash', { command: 'sleep 30' }), finalAnswer('never reached')],
      request: { signal: controller.signal },
    });
    s.request.onProgress = (e) => {
      if (e.kind === 'phase' && e.phase === 'agent') setTimeout(() => controller.abort(), 300);
    };
    const result = await runPipeline(s.request, s.deps);
    expect(result.outcome).toBe('cancelled');
    expect(result.exitReason).toBe('cancelled');
    expectNothingLeft(s);
  });
});

describe('taskText', () => {
  it('appends only what is present, separated by blank lines', () => {
    expect(taskText({ issueText: 'T\n\nB' }, {})).toBe('T\n\nB');
    expect(taskText({ issueText: 'T', extraGuidance: '  ' }, { instructions: undefined })).toBe(
      'T',
    );
    expect(taskText({ issueText: 'T', extraGuidance: 'G' }, { instructions: 'I' })).toBe(
      'T\n\nI\n\nG',
    );
    expect(taskText({ issueText: 'T', extraGuidance: 'G' }, {})).toBe('T\n\nG');
  });
});

describe('setupInstallsTree', () => {
  it('spots non-editable installs of the project itself', () => {
    expect(setupInstallsTree(['pip install .'])).toBe(true);
    expect(setupInstallsTree(['python3 -m pip install --no-deps ./pkg'])).toBe(true);
    expect(setupInstallsTree(['pip install .[test]'])).toBe(true);
    expect(setupInstallsTree(['python setup.py install'])).toBe(true);
    expect(setupInstallsTree(['pip install -e .'])).toBe(false);
    expect(setupInstallsTree(['pip install -r requirements.txt', 'npm ci'])).toBe(false);
    expect(setupInstallsTree(['python3 -m venv .venv && .venv/bin/pip install --editable .'])).toBe(
      false,
    );
  });
});
