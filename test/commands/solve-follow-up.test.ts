// `frognano solve --revision <branch> --feedback-file <file>`: the follow-up the App runs on a
// review, run locally as a child process against the scripted model.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SYSTEM_PROMPT } from '../../src/leaf/protocol.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';
import { createPythonRepo, FIXED_CALC, git, ISSUE_TEXT } from '../support/python-repo.js';

const CLI = path.resolve('bin/frognano.js');

function runCli(args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 240_000 },
      (error, _stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stderr }),
    );
  });
}

let work: string;
let model: ScriptedModelServer | undefined;
beforeEach(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'frognano-followup-'));
});
afterEach(async () => {
  await model?.close();
  model = undefined;
  await rm(work, { recursive: true, force: true });
});

describe('frognano solve --feedback-file', () => {
  it('starts at the previous attempt and briefs the model with its diff and the feedback', async () => {
    const repo = createPythonRepo(work);
    // The previous attempt: a branch with the fix, as the App pushes it.
    git(repo.dir, 'checkout', '-q', '-b', 'frognano/issue-1');
    await writeFile(path.join(repo.dir, 'calc.py'), FIXED_CALC);
    git(
      repo.dir,
      '-c',
      'user.name=bot',
      '-c',
      'user.email=bot@example.com',
      'commit',
      '-qam',
      'fix',
    );
    git(repo.dir, 'checkout', '-q', 'main');
    model = await startScriptedModelServer({
      script: [
        toolCall('Edit', {
          file_path: 'calc.py',
          old_string: 'def add(a, b):\n',
          new_string: 'def add(a, b):\n    """Return a + b."""\n',
        }),
        finalAnswer('Documented add().'),
      ],
    });
    const issueFile = path.join(work, 'issue.md');
    await writeFile(issueFile, ISSUE_TEXT);
    const feedbackFile = path.join(work, 'feedback.md');
    await writeFile(feedbackFile, 'calc.py:2 needs a docstring.\n');
    const outDir = path.join(work, 'out');

    const run = await runCli(
      [
        'solve',
        '--repo',
        repo.dir,
        '--issue-file',
        issueFile,
        '--revision',
        'frognano/issue-1',
        '--base',
        'main',
        '--feedback-file',
        feedbackFile,
        '--sandbox',
        'local',
        '--out',
        outDir,
      ],
      { FROGNANO_MODEL_URL: model.baseUrl, FROGNANO_DATA_DIR: path.join(work, 'data') },
    );
    expect(run.code, run.stderr).toBe(0);

    const messages = model.chatRequests[0]?.body?.messages ?? [];
    expect(messages[0]).toEqual({ role: 'system', content: SYSTEM_PROMPT });
    const task = String(messages[1]?.content);
    expect(
      task.startsWith(
        `${ISSUE_TEXT}\n\nThe repository is already at a previous attempt at this issue (branch frognano/issue-1).`,
      ),
    ).toBe(true);
    expect(task).toContain('-    return a - b\n+    return a + b');
    expect(task).toContain("The reviewer's feedback:\n\ncalc.py:2 needs a docstring.");
    // The patch is on top of the previous attempt, not of main.
    const patch = await readFile(path.join(outDir, 'patch.diff'), 'utf8');
    expect(patch).toContain('+    """Return a + b."""');
    expect(patch).not.toContain('return a - b');
  }, 120_000);

  it('refuses --feedback-file without --revision in one line', async () => {
    const repo = createPythonRepo(work);
    const feedbackFile = path.join(work, 'feedback.md');
    await writeFile(feedbackFile, 'more tests\n');
    const run = await runCli(
      ['solve', '--repo', repo.dir, '--issue', 'x', '--feedback-file', feedbackFile],
      {},
    );
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n').at(-1)).toContain(
      '--feedback-file needs --revision <branch>',
    );
  });
});
