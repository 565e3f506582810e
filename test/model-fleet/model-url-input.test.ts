// FROGNANO_MODEL_URL and `--model-url` as a user (or a careless paste) writes them, through the
// real CLI in a child process: a bad list is one line that says what to change and never shows
// a password, whatever the scheme or the characters in it; a URL with a query or fragment
// (which the client cannot append paths to) is refused as such, not reported as a 404.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = path.resolve('bin/frognano.js');
let work: string;
beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'frognano-model-url-'));
});
afterAll(() => rm(work, { recursive: true, force: true }));

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      {
        cwd: work,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
        timeout: 60_000,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, out: stdout + stderr });
      },
    );
  });
}

const env = (url: string) => ({ FROGNANO_MODEL_URL: url, FROGNANO_DATA_DIR: path.join(work, 'd') });
const solve = ['solve', '--repo', '.', '--issue', 'x', '--sandbox', 'local'];

describe('a bad FROGNANO_MODEL_URL never shows its password', () => {
  it.each([
    ['a non-http scheme', 'ftp://ops:Sw0rdfish-9@gpu-a:8000/v1', ['Sw0rdfish-9']],
    ['a comma in the password', 'http://ops:Sw0rd,fish-9@gpu-a:8000/v1', ['Sw0rd', 'fish-9']],
    ['a space in the password', 'http://ops:Sw0rd fish-9@gpu-a:8000/v1', ['Sw0rd', 'fish-9']],
    [
      'the second entry of a list',
      'http://gpu-a:8000/v1,gopher://ops:Sw0rdfish-9@gpu-b:8000/v1',
      ['Sw0rdfish-9'],
    ],
  ])(
    '%s: one line, exit 2, no password, no user',
    async (_, url, secrets) => {
      for (const args of [solve, ['doctor']]) {
        const run = await runCli(args, env(url));
        const lines = run.out.split('\n').filter((l) => /FROGNANO_MODEL_URL/.test(l));
        expect(lines, run.out).toHaveLength(1);
        expect(lines[0]).toContain('***@gpu-');
        for (const secret of [...secrets, 'ops']) expect(run.out).not.toContain(secret);
        expect(run.code).toBe(args === solve ? 2 : 1);
      }
    },
    120_000,
  );

  it('says how to write a comma in a password', async () => {
    const run = await runCli(solve, env('http://ops:Sw0rd,fish-9@gpu-a:8000/v1'));
    expect(run.out).toContain('%2C');
  }, 60_000);
});

describe('a URL with a query or a fragment', () => {
  it.each(['http://gpu-a:8000/v1?key=abc', 'http://gpu-a:8000/v1#main'])(
    '%s is refused in one line that names it, before any request',
    async (url) => {
      const fromEnv = await runCli(solve, env(url));
      expect(fromEnv.code, fromEnv.out).toBe(2);
      expect(fromEnv.out).toContain(
        'FROGNANO_MODEL_URL must be http(s) URLs without a query (?…) or fragment (#…)',
      );
      const fromFlag = await runCli([...solve, '--model-url', url], env('http://gpu-a:8000/v1'));
      expect(fromFlag.code, fromFlag.out).toBe(2);
      expect(fromFlag.out).toContain(
        '--model-url must be http(s) URLs without a query (?…) or fragment (#…)',
      );
    },
    120_000,
  );
});
