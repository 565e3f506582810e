// `npm start` and `frognano solve` make sure the sandbox image exists before anything else:
// a missing default builds itself (test/sandbox/ensure-sandbox-image.test.ts); a missing
// custom image stops them in one line, before any container, clone or model request.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { describeDocker } from '../support/docker-engine.js';
import { startFakeGitHubApp } from './helpers/fake-github-app.js';

const CLI = path.resolve('bin/frognano.js');
const MISSING = 'frognano-test/never-built:nope';
let work: string;

beforeEach(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'frognano-image-cli-'));
});
afterEach(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      {
        env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
        cwd: work,
        timeout: 60_000,
      },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
          stdout,
          stderr,
        }),
    );
  });
}

describeDocker('the sandbox image at start-up', () => {
  it('npm start refuses a missing custom image in one line', async () => {
    const github = await startFakeGitHubApp();
    try {
      const run = await runCli(['start'], {
        APP_ID: '1',
        PRIVATE_KEY: github.privateKey,
        WEBHOOK_SECRET: 'secret',
        GITHUB_API_URL: github.url,
        FROGNANO_DATA_DIR: path.join(work, 'data'),
        FROGNANO_SANDBOX_IMAGE: MISSING,
        PORT: '0',
        HOST: '127.0.0.1',
      });
      expect(run.stderr).toContain(
        `✗ sandbox image: sandbox image ${MISSING} is missing and only the default frognano/sandbox:`,
      );
      expect(run.stderr).not.toContain('frognano-bot started');
      expect(run.code).toBe(1);
      // Refused before the App (or any check) talked to GitHub.
      expect(github.requests).toEqual([]);
    } finally {
      await github.close();
    }
  });

  it('frognano solve stops on a missing custom image in one line, before the model is asked', async () => {
    const repo = path.join(work, 'repo');
    execFileSync('git', ['init', '-q', repo]);
    await writeFile(path.join(repo, 'a.txt'), 'a\n');
    execFileSync('git', ['-C', repo, 'add', '.']);
    execFileSync('git', [
      '-C',
      repo,
      '-c',
      'user.name=t',
      '-c',
      'user.email=t@example.com',
      'commit',
      '-qm',
      'init',
    ]);
    const run = await runCli(
      ['solve', '--repo', repo, '--issue', 'fix it', '--out', path.join(work, 'out')],
      { FROGNANO_SANDBOX_IMAGE: MISSING, FROGNANO_MODEL_URL: 'http://127.0.0.1:1/v1' },
    );
    const lines = run.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `^frognano: sandbox image ${MISSING} is missing and only the default frognano/sandbox:\\S+ builds itself: pull or build`,
      ),
    );
    expect(run.stderr).not.toContain('model endpoint');
    expect(run.code).not.toBe(0);
  });
});
