// python-glob.ts against the real python3 `glob.glob(..., recursive=True)` on one tree.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GlobFileSystem, pythonGlob, translate } from '../../src/leaf/python-glob.js';
import { pathlibJoin } from '../../src/leaf/python-path.js';
import { nodeGlobFileSystem } from '../../src/sandbox/local-sandbox.js';

const PATTERNS = [
  '*',
  '*.py',
  '**',
  '**/*.py',
  '**/',
  '.*',
  '**/.*',
  '**/.*.py',
  'src/**',
  'src/**/*.py',
  '*/*.py',
  '?.py',
  '??.py',
  '[ab].py',
  '[!a].py',
  '[a-c]*',
  '[z-a]*',
  '[!z-a]*',
  '[]]*',
  '[!]]*',
  '[a-]*',
  '[-a]*',
  'br[[]ack]et.py',
  'br[ack]et.py',
  '[.]*',
  '.hdir/*',
  '.hdir/**',
  '.hdir/**/*.py',
  '**/x.py',
  'src/sub',
  'src/sub/',
  'src/*/',
  '*/',
  'nonexistent',
  'nonexistent/*.py',
  'link_dir/**/*.py',
  '**/link_dir/*',
  'd/**',
  'd/**/f.txt',
  '**/**/*.py',
  'a.py',
  'broken',
  'b*',
  '**/*.PY',
  'src/**/sub/*',
  'src**',
  'src/**x',
  '**.py',
  'ü/*',
  '*\n*',
  'a.py/*',
  '**/sub/**',
];

let root: string;

function python(patterns: string[], relative: boolean): string[][] {
  const script = [
    'import glob, json, os, sys',
    'root, patterns, relative = json.loads(sys.stdin.read())',
    'if relative: os.chdir(root)',
    'out = [glob.glob(p if relative else root + "/" + p, recursive=True) for p in patterns]',
    'sys.stdout.write(json.dumps(out))',
  ].join('\n');
  const input = JSON.stringify([root, patterns, relative]);
  return JSON.parse(execFileSync('python3', ['-c', script], { input }).toString()) as string[][];
}

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'frognano-glob-'));
  const files = [
    'a.py',
    'b.py',
    'b.txt',
    'cc.py',
    'ab.py',
    'A.PY',
    ']x',
    '-y',
    '.hidden.py',
    '.hdir/x.py',
    '.hdir/in/deep.py',
    'src/m.py',
    'src/.h.py',
    'src/sub/deep.py',
    'src/sub/.sh/z.py',
    'src/sub/x.py',
    'src/.hsub/x.py',
    'br[ack]et.py',
    'bracket.py',
    'ü/ß.txt',
    'new\nline.py',
    'd/f.txt',
  ];
  for (const file of files) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), file);
  }
  symlinkSync('src', path.join(root, 'link_dir'));
  symlinkSync('missing-target', path.join(root, 'broken'));
  symlinkSync('a.py', path.join(root, 'flink.py'));
  // A directory loop: Python walks it until the OS says ELOOP; so must we.
  symlinkSync('.', path.join(root, 'd', 'loop'));
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('pythonGlob against glob.glob(recursive=True)', () => {
  it('returns the same paths in the same order for absolute patterns', async () => {
    const expected = python(PATTERNS, false);
    const fs = nodeGlobFileSystem();
    for (const [index, pattern] of PATTERNS.entries()) {
      const actual = await pythonGlob(`${root}/${pattern}`, fs);
      expect({ pattern, actual }).toEqual({ pattern, actual: expected[index] });
    }
    // The tree really exercises the rules: hidden files stay out of `**`, loops stop.
    expect(expected[PATTERNS.indexOf('**/*.py')]).not.toContain(`${root}/.hidden.py`);
    expect(expected[PATTERNS.indexOf('.*')]).toContain(`${root}/.hidden.py`);
    expect((expected[PATTERNS.indexOf('d/**')] ?? []).length).toBeGreaterThan(10);
  });

  it('returns the same paths for relative patterns (the leading "" of ** dropped)', async () => {
    const expected = python(PATTERNS, true);
    const fs = nodeGlobFileSystem((p) => pathlibJoin(root, p));
    for (const [index, pattern] of PATTERNS.entries()) {
      const actual = await pythonGlob(pattern, fs);
      expect({ pattern, actual }).toEqual({ pattern, actual: expected[index] });
    }
  });

  it('keeps the lister order instead of sorting', async () => {
    const tree = new Map<string, string[]>([
      ['/r', ['z.py', 'a.py', 'm']],
      ['/r/m', ['y.py', 'b.py']],
    ]);
    const fs: GlobFileSystem = {
      // Python lists '/r/' for the zero-directory match of `**`.
      listdir: async (dir, dirsOnly) => {
        const key = dir.replace(/\/$/, '');
        return (tree.get(key) ?? []).filter((name) => !dirsOnly || tree.has(`${key}/${name}`));
      },
      lexists: async (p) =>
        tree.has(p) || [...tree].some(([dir, names]) => names.some((n) => `${dir}/${n}` === p)),
      isdir: async (p) => tree.has(p),
    };
    expect(await pythonGlob('/r/**/*.py', fs)).toEqual([
      '/r/z.py',
      '/r/a.py',
      '/r/m/y.py',
      '/r/m/b.py',
    ]);
  });
});

describe('translate (fnmatch)', () => {
  it('matches names like fnmatch.fnmatchcase', () => {
    const names = [
      'a',
      'b',
      'z',
      '-',
      ']',
      '!',
      '\\',
      '^',
      'ab',
      '.a',
      'a.b',
      'é',
      '😀',
      'A',
      '[',
      'a\nb',
    ];
    const patterns = [
      '[a-c]',
      '[!a-c]',
      '[]a]',
      '[!]a]',
      '[a-]',
      '[-a]',
      '[\\]',
      '[^a]',
      '[z-a]',
      '[!z-a]',
      '[a-c-z]',
      '[c-a-z]',
      '*',
      '?',
      '??',
      'a*',
      '[',
      '[a',
      '[😀]',
      '[é-😀]',
      '*[!.]*',
      'a?b',
    ];
    const script = [
      'import fnmatch, json, sys',
      'names, patterns = json.loads(sys.stdin.read())',
      'sys.stdout.write(json.dumps([[fnmatch.fnmatchcase(n, p) for n in names] for p in patterns]))',
    ].join('\n');
    const expected = JSON.parse(
      execFileSync('python3', ['-c', script], {
        input: JSON.stringify([names, patterns]),
      }).toString(),
    ) as boolean[][];
    const actual = patterns.map((pattern) => names.map((name) => translate(pattern).test(name)));
    expect(actual).toEqual(expected);
  });
});
