// The text-only patch, applied by real git to the original tree: the original behaviour, the
// patch's added lines present as comments where the patch put them.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { textOnlyPatch } from '../../src/runner/text-only-patch.js';

const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'core.autocrlf=false', ...args], { cwd, encoding: 'utf8' });

/**
 * A repository with `before` committed, the change to `after` rendered as the runner renders
 * `kept` (full index, no renames), and what the text-only patch makes of the original.
 */
function decoy(
  before: Record<string, string | Buffer>,
  after: Record<string, string | Buffer | null>,
): { patch: string | undefined; files: (name: string) => string | undefined } {
  const dir = mkdtempSync(path.join(tmpdir(), 'text-only-'));
  temps.push(dir);
  git(dir, 'init', '-q');
  for (const [name, content] of Object.entries(before))
    writeFileSync(path.join(dir, name), content);
  git(dir, 'add', '-A');
  git(dir, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'base');
  for (const [name, content] of Object.entries(after)) {
    if (content === null) unlinkSync(path.join(dir, name));
    else writeFileSync(path.join(dir, name), content);
  }
  git(dir, 'add', '-A');
  const kept = git(dir, 'diff', '--cached', '--binary', '--full-index', '--no-renames');
  git(dir, 'reset', '-q', '--hard');
  const made = textOnlyPatch(kept);
  if ('unbuilt' in made) throw new Error(`text-only tree not built: ${made.unbuilt}`);
  const { patch } = made;
  if (patch !== undefined)
    execFileSync('git', ['apply', '--whitespace=nowarn', '-'], { cwd: dir, input: patch });
  return {
    patch,
    files: (name) =>
      existsSync(path.join(dir, name)) ? readFileSync(path.join(dir, name), 'utf8') : undefined,
  };
}

describe('textOnlyPatch', () => {
  it('keeps the removed lines and puts the added ones before them as comments', () => {
    const base = 'def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n';
    const fixed = base
      .replace('return a - b', 'return a + b')
      .replace('def mul', '# times\ndef mul');
    const { files } = decoy({ 'calc.py': base }, { 'calc.py': fixed });
    expect(files('calc.py')).toBe(
      'def add(a, b):\n#    return a + b\n    return a - b\n\n\n## times\ndef mul(a, b):\n    return a * b\n',
    );
    // The original's behaviour: add still subtracts.
    const out = execFileSync('python3', ['-c', files('calc.py')! + '\nprint(add(2, 3))'], {
      encoding: 'utf8',
    });
    expect(out.trim()).toBe('-1');
  });

  it('recounts hunks after the first, so several hunks in one file apply', () => {
    const lines = Array.from({ length: 40 }, (_, i) => `x${i} = ${i}`);
    const changed = [...lines];
    changed.splice(2, 1, 'x2 = 200', 'y = 1');
    changed.splice(35, 1, 'x34 = 340');
    const { files } = decoy(
      { 'm.py': `${lines.join('\n')}\n` },
      { 'm.py': `${changed.join('\n')}\n` },
    );
    const result = files('m.py')!.split('\n');
    expect(result.filter((l) => !l.startsWith('#'))).toEqual([...lines, '']);
    expect(result.filter((l) => l.startsWith('#'))).toEqual(['#x2 = 200', '#y = 1', '#x34 = 340']);
  });

  it('a new file is all comments; a deleted one stays as it was', () => {
    const { files } = decoy(
      { 'a.ts': 'export const a = 1;\n', 'gone.js': 'module.exports = 2;\n' },
      { 'b.ts': 'export const b = 2;\n', 'gone.js': null },
    );
    expect(files('b.ts')).toBe('//export const b = 2;\n');
    expect(files('gone.js')).toBe('module.exports = 2;\n');
  });

  it('keeps a last line without a newline last', () => {
    const { files } = decoy({ 'a.py': 'x = 1\ny = 2' }, { 'a.py': 'x = 1\ny = 3\nz = 4' });
    expect(files('a.py')).toBe('x = 1\n#y = 3\n#z = 4\ny = 2');
  });

  it('leaves a file with no line comment as it was', () => {
    const cases: [string, string, string][] = [
      ['notes.txt', 'a\n', 'b\n'],
      ['data.json', '{}\n', '{"a": 1}\n'],
    ];
    for (const [name, before, after] of cases) {
      const d = decoy(
        { [name]: before, 'ok.py': 'x = 1\n' },
        { [name]: after, 'ok.py': 'x = 2\n' },
      );
      expect(d.files(name), name).toBe(before);
      expect(d.files('ok.py'), name).toBe('#x = 2\nx = 1\n');
    }
    const data = decoy({ 'a.py': 'x = 1\n' }, { 'blob.bin': Buffer.from([0, 1, 2, 0]) });
    expect(data.patch).toBeUndefined();
    expect(data.files('blob.bin')).toBeUndefined();
  });

  it('keeps CRLF line ends', () => {
    const { files } = decoy({ 'a.py': 'x = 1\r\n' }, { 'a.py': 'x = 2\r\n' });
    expect(files('a.py')).toBe('#x = 2\r\nx = 1\r\n');
  });

  it('reads the file names git quotes (non-ASCII, a quote, a ">") and comments the code beside them', () => {
    const { files } = decoy(
      { 'calc.py': 'x = 1\n', 'café.py': 'y = 1\n' },
      {
        'calc.py': 'x = 2\n',
        'notes-été.md': 'add fixed\n',
        'rt3">x.txt': 'fixed\n',
        'café.py': 'y = 2\n',
        'zz.py': 'z = 3\n',
      },
    );
    expect(files('calc.py')).toBe('#x = 2\nx = 1\n');
    expect(files('café.py')).toBe('#y = 2\ny = 1\n');
    expect(files('zz.py')).toBe('#z = 3\n');
    // No line comment: they stay as they were (absent).
    expect(files('notes-été.md')).toBeUndefined();
    expect(files('rt3">x.txt')).toBeUndefined();
  });

  it('cannot build the tree when a line of code a comment would not hold, or a binary code file, is in the change', () => {
    const cases: [string, string | Buffer, string | Buffer][] = [
      ['a.py', 'x = 1\n', 'x = 1\ny = 2\rz = 3\n'],
      ['a.js', 'x;\n', 'x;\ny\u2028z();\n'],
      ['a.c', 'int x;\n', 'int x;\n#define Y 1 \\\n'],
      ['a.java', 'class A {}\n', 'class A {}\n// \\u000a x\n'],
      ['blob.py', 'x = 1\n', Buffer.from([0, 1, 2, 0])],
    ];
    for (const [name, before, after] of cases) {
      expect(
        () => decoy({ [name]: before, 'ok.py': 'x = 1\n' }, { [name]: after, 'ok.py': 'x = 2\n' }),
        name,
      ).toThrow(`text-only tree not built: ${name}`);
    }
  });

  it('cannot build the tree from a patch it cannot read', () => {
    expect(
      textOnlyPatch('diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ bad @@\n+y\n'),
    ).toEqual({
      unbuilt: 'x.py: a hunk header it cannot read',
    });
    expect(textOnlyPatch('--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x\n+y\n')).toMatchObject({
      unbuilt: expect.stringMatching(/^text before the first diff --git header/),
    });
    expect(textOnlyPatch('diff --git "a/x.py b/x.py\n')).toMatchObject({
      unbuilt: expect.stringMatching(/^a diff --git header it cannot read/),
    });
  });
});
