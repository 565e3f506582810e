import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { capturePatch } from '../../src/leaf/capture-patch.js';
import { SandboxFailure } from '../../src/leaf/sandbox.js';
import { createLocalSandbox, type LocalSandbox } from '../../src/sandbox/local-sandbox.js';

let workDir: string;
let repoDir: string;
let sandbox: LocalSandbox | undefined;

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8' });
}

beforeEach(async () => {
  workDir = await mkdtemp(path.join(tmpdir(), 'capture-patch-test-'));
  repoDir = path.join(workDir, 'repo');
  execFileSync('git', ['init', '-q', '-b', 'main', repoDir]);
  await writeFile(path.join(repoDir, 'a.txt'), 'one\ntwo\n');
  await writeFile(path.join(repoDir, 'gone.txt'), 'bye\n');
  git(repoDir, 'add', '-A');
  git(repoDir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'base');
});

afterEach(async () => {
  await sandbox?.dispose();
  sandbox = undefined;
  await rm(workDir, { recursive: true, force: true });
});

describe('capturePatch', () => {
  it('captures edits, new, deleted and binary files; the patch applies; the index is left clean', async () => {
    sandbox = await createLocalSandbox({ sourceDir: repoDir });
    const tree = sandbox.workdir;
    await writeFile(path.join(tree, 'a.txt'), 'one\nTWO\n');
    await writeFile(path.join(tree, 'new.txt'), 'fresh\n');
    await writeFile(path.join(tree, 'blob.bin'), Buffer.from([0, 1, 2, 255, 0, 128]));
    await rm(path.join(tree, 'gone.txt'));

    const patch = await capturePatch(sandbox);
    const text = patch.toString('utf8');
    expect(text).toContain('diff --git a/a.txt b/a.txt');
    expect(text).toContain('+++ b/new.txt');
    expect(text).toContain('deleted file mode');
    expect(text).toContain('GIT binary patch');
    // the working tree is unchanged and nothing stays staged
    expect(git(tree, 'diff', '--cached', '--name-only')).toBe('');
    expect(git(tree, 'status', '--porcelain').split('\n').filter(Boolean).sort()).toEqual([
      ' D gone.txt',
      ' M a.txt',
      '?? blob.bin',
      '?? new.txt',
    ]);

    await writeFile(path.join(workDir, 'p.diff'), patch);
    git(repoDir, 'apply', '--index', path.join(workDir, 'p.diff'));
    expect(git(repoDir, 'status', '--porcelain').split('\n').filter(Boolean).sort()).toEqual([
      'A  blob.bin',
      'A  new.txt',
      'D  gone.txt',
      'M  a.txt',
    ]);
  });

  it('returns an empty patch when nothing changed', async () => {
    sandbox = await createLocalSandbox({ sourceDir: repoDir });
    expect((await capturePatch(sandbox)).length).toBe(0);
  });

  it('ignores a hostile .git/config: no fsmonitor, hooks, external diff, textconv, colour or prefix changes', async () => {
    sandbox = await createLocalSandbox({ sourceDir: repoDir });
    const tree = sandbox.workdir;
    const marker = (name: string): string => path.join(workDir, `pwned-${name}`);
    const hooks = path.join(workDir, 'hooks');
    execFileSync('mkdir', ['-p', hooks]);
    await writeFile(path.join(hooks, 'post-index-change'), `#!/bin/sh\ntouch ${marker('hook')}\n`, {
      mode: 0o755,
    });
    await appendFile(
      path.join(tree, '.git', 'config'),
      [
        '[core]',
        `\tfsmonitor = "touch ${marker('fsmonitor')}; false"`,
        `\thooksPath = ${hooks}`,
        `\tpager = touch ${marker('pager')}`,
        '[diff]',
        `\texternal = "touch ${marker('external')}; false"`,
        '\tnoprefix = true',
        '[diff "evil"]',
        `\ttextconv = "touch ${marker('textconv')}; cat"`,
        '[color]',
        '\tui = always',
        '',
      ].join('\n'),
    );
    await writeFile(path.join(tree, '.gitattributes'), 'a.txt diff=evil\n');
    await writeFile(path.join(tree, 'a.txt'), 'changed\n');

    const text = (await capturePatch(sandbox)).toString('utf8');
    expect(text).toContain('diff --git a/a.txt b/a.txt');
    expect(text).toContain('-one\n-two\n+changed\n');
    expect(text).not.toContain('\u001b[');
    for (const name of ['fsmonitor', 'hook', 'pager', 'external', 'textconv']) {
      expect(existsSync(marker(name)), name).toBe(false);
    }
  });

  it('throws SandboxFailure when git fails', async () => {
    sandbox = await createLocalSandbox({ sourceDir: repoDir });
    await rm(path.join(sandbox.workdir, '.git'), { recursive: true, force: true });
    await expect(capturePatch(sandbox)).rejects.toBeInstanceOf(SandboxFailure);
    await expect(capturePatch(sandbox)).rejects.toThrow(/`git add` failed with exit code 128/);
  });

  it('keeps to the deadline it is given: a huge file does not hold the capture past it', async () => {
    sandbox = await createLocalSandbox({ sourceDir: repoDir });
    // A sparse file git would spend minutes hashing and compressing.
    execFileSync('truncate', ['-s', '20G', path.join(sandbox.workdir, 'sparse')]);
    const started = Date.now();
    const failure = await capturePatch(sandbox, { deadline: started + 1500 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(SandboxFailure);
    expect(String(failure)).toMatch(/did not finish before the run's deadline/);
    // the add, its reset, nothing more: no fixed 120 s per command
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('does not start git when the deadline has already passed', async () => {
    sandbox = await createLocalSandbox({ sourceDir: repoDir });
    await writeFile(path.join(sandbox.workdir, 'a.txt'), 'changed\n');
    await expect(capturePatch(sandbox, { deadline: Date.now() - 1 })).rejects.toThrow(
      /no time was left before the run's deadline/,
    );
    expect(git(sandbox.workdir, 'diff', '--cached', '--name-only')).toBe('');
  });

  it('refuses a patch over the size cap instead of truncating it', async () => {
    sandbox = await createLocalSandbox({ sourceDir: repoDir });
    await writeFile(path.join(sandbox.workdir, 'big.txt'), 'x'.repeat(5000));
    await expect(capturePatch(sandbox, { maxBytes: 1000 })).rejects.toThrow(
      /larger than 1000 bytes/,
    );
    expect(git(sandbox.workdir, 'diff', '--cached', '--name-only')).toBe('');
  });
});
