// `frognano solve` end to end, as a user runs it: a child process, a real Python repository
// with a failing test, the scripted model endpoint on a real socket.
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type RecordedRequest,
  type ResponseSpec,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';
import { createPythonRepo, git, ISSUE_TEXT } from '../support/python-repo.js';
import { describeDocker, ensureSandboxImage } from '../support/docker-engine.js';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { LABEL_RUN } from '../../src/sandbox/docker-sandbox.js';
import { freePort } from '../../src/free-port.js';
import { ATTEMPT_HEADER } from '../../src/runner/phases/connect-model.js';
import { headings, markdownTree } from '../github/helpers/markdown-tree.js';

const CLI = path.resolve('bin/frognano.js');

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

function runCli(args: string[], env: NodeJS.ProcessEnv, cwd?: string): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 240_000, cwd },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** A local-sandbox solve whose task does not matter (the run stops before the loop). */
function quickLocalSolve(repoDir: string): string[] {
  return [
    'solve',
    '--repo',
    repoDir,
    '--issue',
    'fix it',
    '--sandbox',
    'local',
    '--out',
    path.join(work, 'o'),
  ];
}

/** The script a competent model would follow: look, read, fix, test, answer. */
function fixingScript() {
  return [
    toolCall(
      'Glob',
      { pattern: '**/*.py' },
      { usage: { prompt_tokens: 900, completion_tokens: 40 } },
    ),
    toolCall('Read', { file_path: 'calc.py' }),
    toolCall('Edit', {
      file_path: 'calc.py',
      old_string: 'return a - b',
      new_string: 'return a + b',
    }),
    toolCall('Bash', { command: 'python3 -m pytest -q', description: 'run the tests' }),
    finalAnswer('Fixed add(): it subtracted instead of adding. The tests pass.'),
  ];
}

/** Answers each attempt from its own script, told apart by the attempt header. */
function byAttempt(scripts: Record<string, ResponseSpec[]>) {
  const queues = new Map(Object.entries(scripts).map(([k, v]) => [k, [...v]]));
  return (request: RecordedRequest): ResponseSpec => {
    const attempt = String(request.headers[ATTEMPT_HEADER] ?? '1');
    return (
      queues.get(attempt)?.shift() ?? {
        kind: 'error',
        status: 400,
        body: { error: { message: `attempt ${attempt}: script exhausted` } },
      }
    );
  };
}

let work: string;
let model: ScriptedModelServer;

beforeEach(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'frognano-solve-'));
});

afterEach(async () => {
  await model?.close();
  await rm(work, { recursive: true, force: true });
});

async function expectPatchFixesFreshClone(repoDir: string, outDir: string) {
  const patch = await readFile(path.join(outDir, 'patch.diff'), 'utf8');
  expect(patch).toContain('-    return a - b');
  expect(patch).toContain('+    return a + b');
  const fresh = path.join(work, 'fresh');
  git(work, 'clone', '-q', repoDir, fresh);
  git(fresh, 'apply', path.join(outDir, 'patch.diff'));
  const pytest = await new Promise<number>((resolve) =>
    execFile('python3', ['-m', 'pytest', '-q'], { cwd: fresh }, (error) =>
      resolve(error ? Number(error.code ?? 1) : 0),
    ),
  );
  expect(pytest).toBe(0);
}

async function expectOutputs(outDir: string, head?: string) {
  const trajectory = JSON.parse(await readFile(path.join(outDir, 'trajectory.json'), 'utf8'));
  expect(trajectory.trajectory_format).toBe('leaf-function-calling');
  expect(trajectory.exit_reason).toBe('agent');
  expect(trajectory.n_steps).toBe(5);
  expect(trajectory.final_message).toContain('Fixed add()');
  const summary = await readFile(path.join(outDir, 'summary.md'), 'utf8');
  expect(summary).toContain('How the model stopped: it finished on its own (`agent`)');
  expect(summary).toMatch(/Before: fail \(exit 1/);
  expect(summary).toMatch(/After: pass \(exit 0/);
  expect(summary).toContain('- `calc.py`');
  // What the PR body carries: the model, the base commit, the step table and the diffstat.
  expect(summary).toContain('- Model: `microsoft/FrogNano-4B-2609`');
  if (head) expect(summary).toContain(`- Base commit: \`${head}\``);
  expect(summary).toMatch(
    /\| 3 \| Edit \| `[^`]*calc\.py[^`]*` \| Edited calc\.py \(1 replacement\)\. \|/,
  );
  expect(summary).toContain('calc.py | +1 -1\n1 file changed, +1 -1');
}

describe('frognano solve --sandbox local', () => {
  it('turns a repository with a failing test into a patch that fixes it', async () => {
    const repo = createPythonRepo(work);
    model = await startScriptedModelServer({ script: fixingScript() });
    const outDir = path.join(work, 'out');
    const issueFile = path.join(work, 'issue.md');
    await writeFile(issueFile, ISSUE_TEXT);

    const run = await runCli(
      [
        'solve',
        '--repo',
        repo.dir,
        '--issue-file',
        issueFile,
        '--out',
        outDir,
        '--sandbox',
        'local',
      ],
      { FROGNANO_MODEL_URL: model.baseUrl, FROGNANO_DATA_DIR: path.join(work, 'data') },
    );

    expect(run.stderr).toContain('--sandbox local runs the agent');
    expect(run.stderr).toMatch(/step 1\/150 Glob/);
    expect(run.stderr).toMatch(/step 4\/150 Bash/);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(
      /^\[frognano\] done: .*; tests after: pass$/,
    );
    await expectOutputs(outDir, repo.head);
    await expectPatchFixesFreshClone(repo.dir, outDir);
    // The user's working copy is never touched.
    expect(await readFile(path.join(repo.dir, 'calc.py'), 'utf8')).toContain('return a - b');
    // The model saw the issue text as the task, exactly.
    const first = model.chatRequests[0]?.body?.messages;
    expect(first?.[1]).toEqual({ role: 'user', content: ISSUE_TEXT });
  }, 120_000);

  it('fails in one line when the model endpoint is unreachable', async () => {
    const repo = createPythonRepo(work);
    // A port nothing listens on (port 9 is one fetch refuses, which says so instead).
    const port = await freePort();
    const run = await runCli(quickLocalSolve(repo.dir), {
      FROGNANO_MODEL_URL: `http://127.0.0.1:${port}/v1`,
    });
    expect(run.code).toBe(2);
    const lines = run.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(
      new RegExp(`^frognano: model endpoint http://127\\.0\\.0\\.1:${port}/v1 is unreachable`),
    );
    // Only the local-sandbox warning precedes it: no stack trace.
    expect(lines.filter((l) => !l.startsWith('warning:'))).toHaveLength(1);
    // Where the URL came from, and the two ways to give another.
    expect(lines.at(-1)).toContain('--model-url');
    expect(lines.at(-1)).toContain('FROGNANO_MODEL_URL');
    // Nothing ran, so nothing is written: not even an empty --out.
    expect(existsSync(path.join(work, 'o'))).toBe(false);
  });

  it('reads FROGNANO_MODEL_URL from .env in the current directory, the environment winning', async () => {
    const repo = createPythonRepo(work);
    model = await startScriptedModelServer({ script: fixingScript() });
    const here = path.join(work, 'here');
    await mkdir(here);
    const unused = await freePort();
    await writeFile(
      path.join(here, '.env'),
      `# as doctor reads it\nFROGNANO_MODEL_URL=${model.baseUrl}\nFROGNANO_DATA_DIR=${path.join(work, 'data')}\n`,
    );
    const run = await runCli(quickLocalSolve(repo.dir), {}, here);
    expect(run.code, run.stderr).toBe(0);
    expect(model.chatRequests.length).toBeGreaterThan(0);

    // A variable set in the environment wins over .env.
    const theirs = await runCli(
      quickLocalSolve(repo.dir),
      { FROGNANO_MODEL_URL: `http://127.0.0.1:${unused}/v1` },
      here,
    );
    expect(theirs.code).toBe(2);
    expect(theirs.stderr).toContain(`http://127.0.0.1:${unused}/v1 is unreachable`);
  }, 120_000);

  it('still exits 0 with a patch whose tests fail after, and says so last', async () => {
    const repo = createPythonRepo(work);
    model = await startScriptedModelServer({
      script: [
        toolCall('Edit', {
          file_path: 'calc.py',
          old_string: 'return a - b',
          new_string: 'return a * b',
        }),
        finalAnswer('Changed add().'),
      ],
    });
    const run = await runCli(quickLocalSolve(repo.dir), {
      FROGNANO_MODEL_URL: model.baseUrl,
      FROGNANO_DATA_DIR: path.join(work, 'data'),
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(
      /^\[frognano\] done: .*1 file\(s\) changed; .*; tests after: fail \(the patch is written all the same: review it\)$/,
    );
    const summary = await readFile(path.join(work, 'o', 'summary.md'), 'utf8');
    expect(summary.split('\n')[2]).toBe('**The tests do not pass after the change.**');
  }, 120_000);

  it('fails in one line when the model is not served there', async () => {
    const repo = createPythonRepo(work);
    model = await startScriptedModelServer({ models: ['some/other-model'] });
    const run = await runCli(quickLocalSolve(repo.dir), { FROGNANO_MODEL_URL: model.baseUrl });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('some/other-model');
    expect(run.stderr).not.toContain('    at ');
    expect(model.chatRequests).toHaveLength(0);
  });

  it('fails in one line, saying where it looked, when no Docker engine answers', async () => {
    const repo = createPythonRepo(work);
    const socket = path.join(work, 'no-engine.sock');
    const run = await runCli(
      ['solve', '--repo', repo.dir, '--issue', 'fix it', '--out', path.join(work, 'o')],
      {
        FROGNANO_MODEL_URL: 'http://127.0.0.1:9/v1',
        DOCKER_HOST: `unix://${socket}`,
      },
    );
    expect(run.code).toBe(2);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`frognano: no Docker engine at DOCKER_HOST=unix://${socket}`);
    expect(lines[0]).toContain('--sandbox local');
  });

  it.each([
    [['--issue', 'x'], 'required option'],
    [['--repo', '.'], 'exactly one of --issue-file <file> or --issue <text>'],
    [['--repo', '/nonexistent/repo', '--issue', 'x', '--sandbox', 'local'], 'does not exist'],
    [['--repo', 'package.json', '--issue', 'x', '--sandbox', 'local'], 'is a file'],
    [['--repo', 'src', '--issue', 'x', '--sandbox', 'local'], 'is not a git repository'],
    [
      ['--repo', '.', '--issue', 'x', '--max-steps', 'many'],
      '--max-steps must be a positive whole number',
    ],
    [
      ['--repo', '.', '--issue', 'x', '--attempts', '0'],
      '--attempts must be a whole number from 1 to 8',
    ],
    [
      ['--repo', '.', '--issue', 'x', '--attempts', '9'],
      '--attempts must be a whole number from 1 to 8',
    ],
    [['--repo', '.', '--issue', 'x', '--bogus'], "unknown option '--bogus'"],
    [['--repo', '.', '--issue', 'x', '--sandbox', 'vm'], 'Allowed choices are docker, local'],
  ])('rejects bad input %j with one clear line and exit code 2', async (args, message) => {
    const run = await runCli(['solve', ...args], { FROGNANO_MODEL_URL: 'http://127.0.0.1:9/v1' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expect(run.stderr).not.toContain('    at ');
  });

  it('prints its version', async () => {
    const run = await runCli(['--version'], {});
    expect(run.code).toBe(0);
    const pkg = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    expect(run.stdout.trim()).toBe(pkg.version);
  });

  it('lists its exit codes in --help', async () => {
    const run = await runCli(['solve', '--help'], {});
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Exit codes:\n\s+0 .*\n\s+1 .*run failed/);
    expect(run.stdout).toMatch(/\n\s+2 .*bad usage/);
  });

  it('refuses an --out that is a file, in one line', async () => {
    const repo = createPythonRepo(work);
    const file = path.join(work, 'taken');
    await writeFile(file, 'not a directory');
    const run = await runCli(
      ['solve', '--repo', repo.dir, '--issue', 'x', '--sandbox', 'local', '--out', file],
      { FROGNANO_MODEL_URL: 'http://127.0.0.1:9/v1' },
    );
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toEqual([
      `frognano: --out ${file} is a file, not a directory: give a directory for the results`,
    ]);
  });

  it('exits 1 with the reason last when the model endpoint stops answering mid-run', async () => {
    const repo = createPythonRepo(work);
    // One step, then the script is exhausted: HTTP 400, never retried.
    model = await startScriptedModelServer({ script: [toolCall('Glob', { pattern: '*.py' })] });
    const run = await runCli(quickLocalSolve(repo.dir), {
      FROGNANO_MODEL_URL: model.baseUrl,
      FROGNANO_DATA_DIR: path.join(work, 'data'),
    });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(
      /^\[frognano\] failed \(llm_query_error\): the model endpoint stopped answering: .*script exhausted.*; details in .*summary\.md$/,
    );
    const summary = await readFile(path.join(work, 'o', 'summary.md'), 'utf8');
    expect(summary).toContain('(`llm_query_error`)');
  });

  it('exits 1 with the reason last when the patch cannot be captured', async () => {
    const repo = createPythonRepo(work);
    model = await startScriptedModelServer({
      script: [toolCall('Bash', { command: 'rm -rf .git' }), finalAnswer('Done.')],
    });
    const run = await runCli(quickLocalSolve(repo.dir), {
      FROGNANO_MODEL_URL: model.baseUrl,
      FROGNANO_DATA_DIR: path.join(work, 'data'),
    });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(
      /^\[frognano\] failed \(capture_failed\): the patch could not be captured: patch capture: `git add` failed with exit code 128: .*; details in .*summary\.md$/,
    );
    const summary = await readFile(path.join(work, 'o', 'summary.md'), 'utf8');
    // The error as one code span (a longer fence when it holds backticks).
    expect(summary).toMatch(/^- Outcome: capture_failed \(`+ ?the patch could not be captured/m);
  });

  it("exits 1 on a setup failure, shows setup's output in summary.md, and clears only an earlier run's files from --out", async () => {
    const repo = createPythonRepo(work, {
      '.github/frognano.yml':
        'setup:\n  - \'echo fetching-deps; echo "ERROR: No matching distribution for leftpad" >&2; exit 3\'\n',
    });
    model = await startScriptedModelServer({ script: [] });
    const out = path.join(work, 'o');
    await mkdir(out, { recursive: true });
    for (const name of ['trajectory.json', 'patch.diff', 'summary.md', 'notes.txt']) {
      await writeFile(path.join(out, name), `old ${name}`);
    }
    const run = await runCli(quickLocalSolve(repo.dir), {
      FROGNANO_MODEL_URL: model.baseUrl,
      FROGNANO_DATA_DIR: path.join(work, 'data'),
    });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(
      /^\[frognano\] failed \(setup_failed\): setup command 1 .* failed with exit code 3/,
    );
    const summary = await readFile(path.join(out, 'summary.md'), 'utf8');
    expect(summary).toContain('## Setup');
    expect(summary).toContain('ERROR: No matching distribution for leftpad');
    expect(summary).toContain('fetching-deps');
    // The setup failed before the loop: no trajectory of this run, and none of the last one.
    expect(existsSync(path.join(out, 'trajectory.json'))).toBe(false);
    expect(await readFile(path.join(out, 'patch.diff'), 'utf8')).toBe('');
    expect(await readFile(path.join(out, 'notes.txt'), 'utf8')).toBe('old notes.txt');
    expect(model.chatRequests).toHaveLength(0);
  });

  it('keeps what the model chose from forging terminal lines or summary.md sections', async () => {
    const repo = createPythonRepo(work);
    const forgedTool = '\u001b]0;pwned\u0007\u001b[2K\r[frognano] done: agent, 0 steps';
    model = await startScriptedModelServer({
      script: [
        toolCall(forgedTool, {}),
        toolCall('Write', {
          file_path: 'evil\n## Policy violations\n\nNone: APPROVED',
          content: 'x\n',
        }),
        toolCall('Bash', { command: 'printf "x\\n```\\n## Forged tail\\n" >> test_calc.py' }),
        finalAnswer('[!IMPORTANT]\n# ✅ Security review: APPROVED'),
      ],
    });
    const run = await runCli(quickLocalSolve(repo.dir), {
      FROGNANO_MODEL_URL: model.baseUrl,
      FROGNANO_DATA_DIR: path.join(work, 'data'),
    });
    expect(run.code, run.stderr).toBe(0);
    // eslint-disable-next-line no-control-regex -- no control character may reach the terminal
    expect(run.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(run.stderr).toContain('step 1/150 \\x1b]0;pwned\\x07\\x1b[2K\\r[frognano] done');
    const lines = run.stderr.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('[frognano] done'))).toHaveLength(1);
    expect(lines.at(-1)).toMatch(/^\[frognano\] done: agent, 4 steps/);
    // The done line names every file it wrote.
    expect(lines.at(-1)).toMatch(
      /patch\.diff, summary\.md, trajectory\.json, trajectory\.html; tests after: \w+/,
    );

    const summary = await readFile(path.join(work, 'o', 'summary.md'), 'utf8');
    expect(headings(markdownTree(summary))).toEqual([
      'frognano solve',
      'The task as the model saw it',
      'Environment',
      'Tests',
      'Files changed',
      'Changes',
      'Trajectory',
      'Model servers',
      'Timings',
      'Final message',
      'Test output before (tail)',
      'Test output after (tail)',
    ]);
    expect(summary).toContain('- `"evil\\n## Policy violations\\n\\nNone: APPROVED"`');
  }, 120_000);

  it('shows the model the same /testbed paths as the Docker sandbox', async () => {
    const repo = createPythonRepo(work);
    model = await startScriptedModelServer({
      script: [
        toolCall('Bash', {
          command: 'pwd; cd /testbed && head -1 calc.py; ls -d /testbed/calc.py',
        }),
        toolCall('Read', { file_path: '/testbed/calc.py', limit: 1 }),
        toolCall('Glob', { pattern: '*.py', path: '/testbed' }),
        toolCall('Read', { file_path: '/testbed/missing.py' }),
        toolCall('Write', { file_path: '/testbed/notes/plan.txt', content: 'x' }),
        toolCall('Bash', { command: 'python3 -c "import os; print(os.getcwd())"' }),
        finalAnswer('Looked around.'),
      ],
    });
    const run = await runCli(quickLocalSolve(repo.dir), {
      FROGNANO_MODEL_URL: model.baseUrl,
      FROGNANO_DATA_DIR: path.join(work, 'data'),
    });
    expect(run.code, run.stderr).toBe(0);
    const messages = model.chatRequests.at(-1)?.body?.messages ?? [];
    const observations = messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(observations).toEqual([
      'Exit code: 0\nSTDOUT:\n/testbed\ndef add(a, b):\n/testbed/calc.py\n\nSTDERR:\n',
      'calc.py\n1. def add(a, b):',
      'calc.py\ntest_calc.py',
      "FileNotFoundError: [Errno 2] No such file or directory: '/testbed/missing.py'",
      'Wrote notes/plan.txt (1 bytes).',
      'Exit code: 0\nSTDOUT:\n/testbed\n\nSTDERR:\n',
    ]);
    const patch = await readFile(path.join(work, 'o', 'patch.diff'), 'utf8');
    expect(patch).toContain('notes/plan.txt');
  }, 120_000);

  it('accepts a git worktree (a `.git` file) as --repo', async () => {
    const repo = createPythonRepo(work);
    const tree = path.join(work, 'wt');
    git(repo.dir, 'worktree', 'add', '-q', '-b', 'side', tree);
    model = await startScriptedModelServer({ script: [finalAnswer('Nothing to do.')] });
    const run = await runCli(
      [
        'solve',
        '--repo',
        tree,
        '--issue',
        'fix it',
        '--sandbox',
        'local',
        '--out',
        path.join(work, 'o'),
      ],
      { FROGNANO_MODEL_URL: model.baseUrl, FROGNANO_DATA_DIR: path.join(work, 'data') },
    );
    expect(run.code, run.stderr).toBe(0);
    const summary = await readFile(path.join(work, 'o', 'summary.md'), 'utf8');
    expect(summary).toContain(`- Base commit: \`${repo.head}\``);
  });

  it("lists every attempt in summary.md, and a later run with fewer attempts leaves no earlier attempt's files in --out", async () => {
    const repo = createPythonRepo(work);
    const out = path.join(work, 'o');
    const env = () => ({
      FROGNANO_MODEL_URL: model.baseUrl,
      FROGNANO_DATA_DIR: path.join(work, 'data'),
    });
    const fix = toolCall('Edit', {
      file_path: 'calc.py',
      old_string: 'return a - b',
      new_string: 'return a + b',
    });
    model = await startScriptedModelServer({
      onExhausted: byAttempt({
        '1': [fix, finalAnswer('Fixed add().')],
        '2': [finalAnswer('Nothing needed changing.')],
      }),
    });
    const first = await runCli([...quickLocalSolve(repo.dir), '--attempts', '2'], env());
    expect(first.code, first.stderr).toBe(0);
    // The done line says which attempt the files are, and where the others are.
    expect(first.stderr.trim().split('\n').at(-1)).toBe(
      `[frognano] done: attempt 1 of 2 selected, agent, 2 steps, 1 file(s) changed; wrote ${out}/patch.diff, summary.md, trajectory.json, trajectory.html; every attempt's files are listed in summary.md; tests after: pass`,
    );
    const summary = await readFile(path.join(out, 'summary.md'), 'utf8');
    expect(headings(markdownTree(summary))).toContain('Attempts');
    expect(summary).toContain(
      [
        '- Attempt 1 (selected, also `patch.diff`): patch `attempt-1/patch.diff`, trajectory `trajectory.json`',
        '- Attempt 2: patch `attempt-2/patch.diff`, trajectory `attempt-2/trajectory.json`',
      ].join('\n'),
    );
    for (const file of [
      'attempt-1/patch.diff',
      'attempt-2/patch.diff',
      'attempt-2/trajectory.json',
    ])
      expect(existsSync(path.join(out, file)), file).toBe(true);
    await model.close();

    // An earlier run's third attempt, killed mid-write; and the user's things, some named alike.
    await mkdir(path.join(out, 'attempt-3'));
    for (const name of ['patch.diff', 'trajectory.json', 'trajectory.json.4242.0badcafe.tmp'])
      await writeFile(path.join(out, 'attempt-3', name), 'old');
    await mkdir(path.join(out, 'attempt-4'));
    await writeFile(path.join(out, 'attempt-4', 'patch.diff'), 'old');
    await writeFile(path.join(out, 'attempt-4', 'notes.txt'), 'mine');
    for (const dir of ['attempt-notes', 'attempt-05', 'elsewhere']) {
      await mkdir(path.join(out, dir));
      await writeFile(path.join(out, dir, 'patch.diff'), 'mine');
    }
    await writeFile(path.join(out, 'attempt-6'), 'mine');
    await symlink(path.join(out, 'elsewhere'), path.join(out, 'attempt-7'));

    model = await startScriptedModelServer({ script: fixingScript() });
    const second = await runCli(quickLocalSolve(repo.dir), env());
    expect(second.code, second.stderr).toBe(0);
    for (const gone of ['attempt-1', 'attempt-2', 'attempt-3', 'attempt-4/patch.diff'])
      expect(existsSync(path.join(out, gone)), gone).toBe(false);
    for (const kept of [
      'attempt-4/notes.txt',
      'attempt-notes/patch.diff',
      'attempt-05/patch.diff',
      'attempt-6',
      'attempt-7',
      'elsewhere/patch.diff',
    ])
      expect(existsSync(path.join(out, kept)), kept).toBe(true);
    expect(await readFile(path.join(out, 'summary.md'), 'utf8')).not.toContain('Attempts');
  }, 240_000);
});

describe('frognano solve interrupted', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)(
    '%s mid-run: exit 130, and the files of what ran are written',
    async (signal) => {
      const repo = createPythonRepo(work);
      const out = path.join(work, 'o');
      // The second model call never comes back before the signal.
      model = await startScriptedModelServer({
        script: [
          toolCall('Bash', { command: 'true' }),
          { ...finalAnswer('late'), delayMs: 60_000 },
        ],
      });
      const child = spawn(process.execPath, [CLI, ...quickLocalSolve(repo.dir)], {
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          FROGNANO_MODEL_URL: model.baseUrl,
          FROGNANO_DATA_DIR: path.join(work, 'data'),
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      let sent = false;
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (!sent && /step 1\//.test(stderr)) sent = child.kill(signal);
      });
      const [code, killedBy] = await new Promise<[number | null, string | null]>((resolve) =>
        child.once('exit', (c, s) => resolve([c, s])),
      );
      expect({ code, killedBy }, stderr).toEqual({ code: 130, killedBy: null });
      expect(stderr.trim().split('\n').at(-1)).toMatch(/^\[frognano\] failed \(cancelled\)/);
      for (const file of ['summary.md', 'trajectory.json', 'trajectory.html'])
        expect(existsSync(path.join(out, file)), file).toBe(true);
    },
    120_000,
  );
});

describeDocker('frognano solve with the Docker sandbox', () => {
  it('runs the pipeline in a container and verifies the fix', async () => {
    await ensureSandboxImage();
    const repo = createPythonRepo(work);
    model = await startScriptedModelServer({ script: fixingScript() });
    const outDir = path.join(work, 'out');

    const run = await runCli(
      ['solve', '--repo', repo.dir, '--issue', ISSUE_TEXT, '--out', outDir],
      { FROGNANO_MODEL_URL: model.baseUrl, FROGNANO_DATA_DIR: path.join(work, 'data') },
    );

    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toContain('--sandbox local');
    await expectOutputs(outDir);
    await expectPatchFixesFreshClone(repo.dir, outDir);
    // Other suites may have containers of their own running now: look only at solve's runs.
    const docker = connectDocker();
    const ours = await docker.listContainers({ all: true, filters: { label: [LABEL_RUN] } });
    expect(ours.filter((c) => c.Labels[LABEL_RUN]?.startsWith('solve-'))).toEqual([]);
  }, 240_000);
});

describeDocker('frognano solve: setup without a network', () => {
  it('exits 1, shows the end of setup output and says how to give setup a network', async () => {
    await ensureSandboxImage();
    const repo = createPythonRepo(work, {
      '.github/frognano.yml':
        'network: none\nsetup:\n  - \'echo installing; python3 -c "import socket; socket.create_connection((\\"1.1.1.1\\", 53), 3)"\'\n',
    });
    model = await startScriptedModelServer({ script: [] });
    const out = path.join(work, 'o');
    const run = await runCli(['solve', '--repo', repo.dir, '--issue', 'fix it', '--out', out], {
      FROGNANO_MODEL_URL: model.baseUrl,
      FROGNANO_DATA_DIR: path.join(work, 'data'),
    });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(/^\[frognano\] failed \(setup_failed\)/);
    const summary = await readFile(path.join(out, 'summary.md'), 'utf8');
    expect(summary).toContain('installing');
    expect(summary).toMatch(/OSError|unreachable/);
    expect(summary).toContain('Setup ran without a network');
    expect(summary).toContain('`network: registries`');
  }, 240_000);
});

describe('frognano reap', () => {
  it('removes work directories of dead runs and reports what it did', async () => {
    const dataDir = path.join(work, 'data');
    const dead = path.join(dataDir, 'runs', 'dead-run');
    await mkdir(dead, { recursive: true });
    await writeFile(path.join(dead, '.frognano-run.json'), JSON.stringify({ runId: 'dead-run' }));
    const run = await runCli(['reap'], {
      FROGNANO_DATA_DIR: dataDir,
      DOCKER_HOST: `unix://${path.join(work, 'no-engine.sock')}`,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('reaping work directories only');
    expect(run.stdout).toMatch(
      /reaped 0 container\(s\), 0 snapshot image\(s\), 0 attempt-base image\(s\), 1 work dir\(s\)/,
    );
    expect(existsSync(dead)).toBe(false);
  });
});
