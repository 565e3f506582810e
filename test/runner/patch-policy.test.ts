import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, renameSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  checkAppliedChanges,
  checkPatch,
  patchFiles,
  patchSymlinks,
} from '../../src/runner/patch-policy.js';
import { DEFAULT_BLOCKED_PATHS } from '../../src/runner/repo-config.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'core.hooksPath=/dev/null', ...args], {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@x',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@x',
    },
  });
}

/** A repo with `files` committed; `change` edits the tree; returns the real `git diff --binary`. */
function diffOf(files: Record<string, string | Buffer>, change: (dir: string) => void): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'policy-'));
  dirs.push(dir);
  git(dir, 'init', '-q');
  for (const [name, data] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), data);
  }
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'base');
  change(dir);
  git(dir, 'add', '-A');
  return git(dir, 'diff', '--cached', '--binary', '-M');
}

const put = (dir: string, name: string, data: string | Buffer) => {
  mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
  writeFileSync(path.join(dir, name), data);
};
const policy = { blockedPaths: DEFAULT_BLOCKED_PATHS };

describe('patchFiles', () => {
  it('lists modified, added and deleted files, including names with spaces and unicode', () => {
    const patch = diffOf(
      { 'a.py': 'x = 1\n', 'gone.txt': 'bye\n', 'dir with space/f.py': 'a\n' },
      (d) => {
        put(d, 'a.py', 'x = 2\n');
        rmSync(path.join(d, 'gone.txt'));
        put(d, 'dir with space/f.py', 'b\n');
        put(d, 'new/café.txt', 'hi\n');
      },
    );
    expect(patchFiles(patch).sort()).toEqual([
      'a.py',
      'dir with space/f.py',
      'gone.txt',
      'new/café.txt',
    ]);
  });

  it('lists both sides of a rename, even with spaces in the names', () => {
    const body = 'line\n'.repeat(20);
    const patch = diffOf({ 'old name.py': body }, (d) => {
      renameSync(path.join(d, 'old name.py'), path.join(d, 'new name.py'));
    });
    expect(patch).toContain('rename from old name.py');
    expect(patchFiles(patch).sort()).toEqual(['new name.py', 'old name.py']);
  });

  it('lists binary files and does not read names out of the base85 payload', () => {
    const bin = Buffer.from(Array.from({ length: 600 }, (_, i) => (i * 7) % 256));
    const patch = diffOf({ 'keep.txt': 'k\n' }, (d) => put(d, 'img/logo.bin', bin));
    expect(patch).toContain('GIT binary patch');
    expect(patchFiles(patch)).toEqual(['img/logo.bin']);
  });

  it('does not mistake a removed line starting with "-- " for a file header', () => {
    const patch = diffOf({ 'q.sql': '-- a/.github/workflows/x.yml\nselect 1;\n' }, (d) =>
      put(d, 'q.sql', 'select 1;\n'),
    );
    expect(patch).toContain('\n--- a/.github/workflows/x.yml\n');
    expect(patchFiles(patch)).toEqual(['q.sql']);
    expect(checkPatch(patch, policy)).toEqual([]);
  });

  it('is empty for an empty patch', () => {
    expect(patchFiles('')).toEqual([]);
    expect(checkPatch('', policy)).toEqual([]);
  });
});

describe('checkPatch', () => {
  it('accepts an ordinary source change', () => {
    const patch = diffOf({ 'src/m.py': 'a\n' }, (d) => put(d, 'src/m.py', 'b\n'));
    expect(checkPatch(patch, policy)).toEqual([]);
  });

  it('blocks .github/** by default', () => {
    const patch = diffOf({ 'a.txt': 'a\n' }, (d) =>
      put(d, '.github/workflows/ci.yml', 'on: push\n'),
    );
    expect(checkPatch(patch, policy)).toEqual([
      { rule: 'blocked_path', detail: '.github/workflows/ci.yml matches blocked path .github/**' },
    ]);
  });

  it('blocks a rename out of a blocked directory (the old side counts)', () => {
    const patch = diffOf({ '.github/workflows/ci.yml': 'on: push\n'.repeat(10) }, (d) =>
      renameSync(path.join(d, '.github/workflows/ci.yml'), path.join(d, 'ci.yml')),
    );
    const v = checkPatch(patch, policy);
    expect(v).toHaveLength(1);
    expect(v[0]!.detail).toContain('.github/workflows/ci.yml');
  });

  it('matches directory globs, bare names at any depth, and trailing-slash directories', () => {
    const patch = diffOf({ 'x.txt': 'x\n' }, (d) => {
      put(d, 'secrets/prod/key.pem', 'k\n');
      put(d, 'pkg/deep/poetry.lock', 'l\n');
      put(d, 'vendor/lib.c', 'c\n');
      put(d, 'fine.py', 'ok\n');
    });
    const v = checkPatch(patch, { blockedPaths: ['secrets', '*.lock', 'vendor/'] });
    expect(v.map((x) => x.detail).sort()).toEqual([
      'pkg/deep/poetry.lock matches blocked path *.lock',
      'secrets/prod/key.pem matches blocked path secrets',
      'vendor/lib.c matches blocked path vendor/',
    ]);
  });

  it('refuses any path with a .git segment, whatever its case', () => {
    const patch = [
      'diff --git a/sub/.git/hooks/post-checkout b/sub/.git/hooks/post-checkout',
      'new file mode 100755',
      'index 0000000..1111111',
      '--- /dev/null',
      '+++ b/sub/.git/hooks/post-checkout',
      '@@ -0,0 +1 @@',
      '+#!/bin/sh',
      'diff --git a/.GIT/config b/.GIT/config',
      'new file mode 100644',
      '--- /dev/null',
      '+++ b/.GIT/config',
      '@@ -0,0 +1 @@',
      '+[core]',
      '',
    ].join('\n');
    expect(checkPatch(patch, policy).map((v) => v.rule)).toEqual(['git_dir', 'git_dir']);
    expect(patchFiles(patch)).toEqual(['sub/.git/hooks/post-checkout', '.GIT/config']);
  });

  it('reads the paths the way git apply -p1 would, whatever prefix the sandbox git used', () => {
    // A sandbox .git/config with diff.noprefix or mnemonicPrefix changes the prefixes.
    const patch = [
      'diff --git i/.github/workflows/x.yml w/.github/workflows/x.yml',
      '--- i/.github/workflows/x.yml',
      '+++ w/.github/workflows/x.yml',
      '@@ -1 +1 @@',
      '-a',
      '+b',
      '',
    ].join('\n');
    expect(checkPatch(patch, policy)).toHaveLength(1);
  });

  it('refuses paths that leave the repository', () => {
    const patch = [
      '--- a/../../etc/passwd',
      '+++ b/../../etc/passwd',
      '@@ -1 +1 @@',
      '-a',
      '+b',
      '',
    ].join('\n');
    expect(checkPatch(patch, policy)).toEqual([
      { rule: 'blocked_path', detail: '../../etc/passwd is outside the repository' },
    ]);
  });

  it('refuses a header that names .git even when it names no usable file', () => {
    const patch = 'diff --git a/x b/.git/config\nold mode 100644\nnew mode 100755\n';
    expect(checkPatch(patch, policy).some((v) => v.rule === 'git_dir')).toBe(true);
  });

  it('sees a plain ---/+++ diff that follows a binary hunk, as git apply does', () => {
    const files = { 'ok.bin': Buffer.from([0, 1]), '.github/workflows/ci.yml': 'name: ci\n' };
    const binary = diffOf(files, (d) => put(d, 'ok.bin', Buffer.from([0, 2])));
    expect(binary).toContain('GIT binary patch');
    const smuggled = `${binary}--- a/.github/workflows/ci.yml\n+++ b/.github/workflows/ci.yml\n@@ -1 +1,2 @@\n name: ci\n+evil: true\n`;
    // git apply really applies both files from this text.
    const dir = mkdtempSync(path.join(tmpdir(), 'policy-apply-'));
    dirs.push(dir);
    git(dir, 'init', '-q');
    for (const [name, data] of Object.entries(files)) put(dir, name, data);
    git(dir, 'add', '-A');
    writeFileSync(path.join(dir, '..', `${path.basename(dir)}.patch`), smuggled);
    dirs.push(path.join(dir, '..', `${path.basename(dir)}.patch`));
    const numstat = git(
      dir,
      'apply',
      '--numstat',
      path.join(dir, '..', `${path.basename(dir)}.patch`),
    );
    expect(numstat).toContain('.github/workflows/ci.yml');

    expect(patchFiles(smuggled)).toEqual(['ok.bin', '.github/workflows/ci.yml']);
    expect(checkPatch(smuggled, policy)).toEqual([
      { rule: 'blocked_path', detail: '.github/workflows/ci.yml matches blocked path .github/**' },
    ]);
  });

  it('refuses a patch that adds or moves a submodule (gitlink), and .gitmodules by default', () => {
    const sha = '1234567890123456789012345678901234567890';
    const added = `diff --git a/vendor/lib b/vendor/lib\nnew file mode 160000\nindex 0000000..1234567\n--- /dev/null\n+++ b/vendor/lib\n@@ -0,0 +1 @@\n+Subproject commit ${sha}\n`;
    expect(checkPatch(added, policy)).toEqual([
      {
        rule: 'blocked_path',
        detail:
          'vendor/lib would become a submodule (gitlink), which the bot may not add or change',
      },
    ]);
    const moved = `diff --git a/sub b/sub\nindex 1111111..2222222 160000\n--- a/sub\n+++ b/sub\n@@ -1 +1 @@\n-Subproject commit ${'1'.repeat(40)}\n+Subproject commit ${sha}\n`;
    expect(checkPatch(moved, policy).map((v) => v.detail)).toEqual([
      'sub would become a submodule (gitlink), which the bot may not add or change',
    ]);
    const modules = diffOf({ 'a.txt': 'a\n' }, (d) =>
      put(d, '.gitmodules', '[submodule "x"]\n\tpath = x\n\turl = https://evil.example/x\n'),
    );
    expect(checkPatch(modules, policy)).toEqual([
      { rule: 'blocked_path', detail: '.gitmodules matches blocked path .gitmodules' },
    ]);
  });

  it('enforces the size limit in bytes', () => {
    const patch = diffOf({ 'big.txt': 'a\n' }, (d) => put(d, 'big.txt', 'é'.repeat(3000)));
    const bytes = Buffer.byteLength(patch);
    expect(checkPatch(patch, { blockedPaths: [], maxPatchBytes: bytes })).toEqual([]);
    expect(checkPatch(patch, { blockedPaths: [], maxPatchBytes: bytes - 1 })).toEqual([
      {
        rule: 'patch_size',
        detail: `the patch is ${bytes} bytes, more than the ${bytes - 1} allowed`,
      },
    ]);
  });
});

describe('symbolic links', () => {
  const link = (dir: string, name: string, target: string) => {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    symlinkSync(target, path.join(dir, name));
  };

  it('refuses links whose target leaves the repository or points into .git, in the patch text', () => {
    const patch = diffOf({ 'README.md': 'hi\n', 'docs/guide.md': 'g\n' }, (d) => {
      link(d, 'etc', '/etc');
      link(d, 'key', '/home/operator/.ssh/id_rsa');
      link(d, 'tilde', '~/.ssh/id_rsa');
      link(d, 'docs/passwd', '../../../../etc/passwd');
      link(d, 'docs/config', '../.git/config');
      link(d, 'docs/readme', '../README.md');
      link(d, 'docs/sibling', './guide.md');
    });
    expect(patchSymlinks(patch)).toEqual([
      { path: 'docs/config', target: '../.git/config' },
      { path: 'docs/passwd', target: '../../../../etc/passwd' },
      { path: 'docs/readme', target: '../README.md' },
      { path: 'docs/sibling', target: './guide.md' },
      { path: 'etc', target: '/etc' },
      { path: 'key', target: '/home/operator/.ssh/id_rsa' },
      { path: 'tilde', target: '~/.ssh/id_rsa' },
    ]);
    expect(checkPatch(patch, { blockedPaths: [] })).toEqual([
      {
        rule: 'symlink',
        detail: 'docs/config is a link to "../.git/config", which is inside .git',
      },
      {
        rule: 'symlink',
        detail:
          'docs/passwd is a link to "../../../../etc/passwd", which is outside the repository',
      },
      { rule: 'symlink', detail: 'etc is a link to "/etc", which is outside the repository' },
      {
        rule: 'symlink',
        detail: 'key is a link to "/home/operator/.ssh/id_rsa", which is outside the repository',
      },
      {
        rule: 'symlink',
        detail: 'tilde is a link to "~/.ssh/id_rsa", which is outside the repository',
      },
    ]);
  });

  it("refuses a link re-pointed out of the repository, and reads git's own targets", () => {
    const patch = diffOf({ 'a.txt': 'a\n' }, (d) => link(d, 'l', 'a.txt'));
    expect(checkPatch(patch, { blockedPaths: [] })).toEqual([]);
    const repointed = [
      'diff --git a/l b/l',
      'index 1111111..2222222 120000',
      '--- a/l',
      '+++ b/l',
      '@@ -1 +1 @@',
      '-a.txt',
      '\\ No newline at end of file',
      '+../..',
      '\\ No newline at end of file',
      '',
    ].join('\n');
    expect(checkPatch(repointed, { blockedPaths: [] })).toEqual([
      { rule: 'symlink', detail: 'l is a link to "../..", which is outside the repository' },
    ]);
    expect(
      checkAppliedChanges(
        [
          { path: 'src/ok', newMode: '120000', linkTarget: '../README.md' },
          { path: 'src/up', newMode: '120000', linkTarget: '../../x' },
          { path: 'plain', newMode: '100644' },
        ],
        { blockedPaths: [] },
      ),
    ).toEqual([
      { rule: 'symlink', detail: 'src/up is a link to "../../x", which is outside the repository' },
    ]);
  });
});
