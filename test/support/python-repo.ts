// A small real Python repository with one failing pytest test, committed with real git.
// Shared by the pipeline, CLI and App end-to-end tests.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const BUGGY_CALC = [
  'def add(a, b):',
  '    return a - b',
  '',
  '',
  'def mul(a, b):',
  '    return a * b',
  '',
].join('\n');

export const FIXED_CALC = BUGGY_CALC.replace('return a - b', 'return a + b');

export const CALC_TEST = [
  'from calc import add, mul',
  '',
  '',
  'def test_add():',
  '    assert add(2, 3) == 5',
  '',
  '',
  'def test_mul():',
  '    assert mul(2, 3) == 6',
  '',
].join('\n');

export const ISSUE_TEXT =
  'add() subtracts instead of adding\n\n`add(2, 3)` returns -1; it should return 5.';

export interface PythonRepo {
  dir: string;
  /** The commit the fixture was created at. */
  head: string;
}

/** Creates the repository (in `parent` or a new temp dir) and returns its path and HEAD. */
export function createPythonRepo(
  parent = mkdtempSync(path.join(tmpdir(), 'frognano-pyrepo-')),
  extraFiles: Record<string, string> = {},
): PythonRepo {
  const dir = path.join(parent, 'calc');
  mkdirSync(dir, { recursive: true });
  const files: Record<string, string> = {
    'calc.py': BUGGY_CALC,
    'test_calc.py': CALC_TEST,
    'pytest.ini': '[pytest]\naddopts = -q -p no:cacheprovider\n',
    ...extraFiles,
  };
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), content);
  }
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(
    dir,
    '-c',
    'user.name=Fixture',
    '-c',
    'user.email=fixture@example.invalid',
    'commit',
    '-qm',
    'calc',
  );
  return { dir, head: git(dir, 'rev-parse', 'HEAD').trim() };
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8' });
}
