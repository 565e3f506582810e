import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { detectTestCommand } from '../../src/runner/detect-test-command.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'detect-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

describe('detectTestCommand', () => {
  it.each([
    [{ 'pytest.ini': '[pytest]\n' }, 'detected pytest: found pytest.ini'],
    [
      { 'pyproject.toml': '[tool.pytest.ini_options]\naddopts = "-q"\n' },
      'detected pytest: found [tool.pytest.ini_options] in pyproject.toml',
    ],
    [{ 'pyproject.toml': '[project]\nname = "x"\n' }, 'detected pytest: found pyproject.toml'],
    [{ 'setup.py': 'from setuptools import setup\n' }, 'detected pytest: found setup.py'],
    [{ 'setup.cfg': '[metadata]\n' }, 'detected pytest: found setup.cfg'],
    [{ 'tox.ini': '[tox]\n' }, 'detected pytest: found tox.ini'],
    [
      { 'src/lib.py': 'x=1\n', 'tests/unit/test_lib.py': 'def test(): pass\n' },
      'detected pytest: found tests/unit/test_lib.py',
    ],
    [{ 'lib_test.py': '' }, 'detected pytest: found lib_test.py'],
  ])('detects pytest for %j', async (files, detail) => {
    expect(await detectTestCommand(tree(files))).toEqual({ command: 'python3 -m pytest', detail });
  });

  it('detects npm test when package.json has a real test script', async () => {
    expect(
      await detectTestCommand(tree({ 'package.json': '{"scripts":{"test":"vitest run"}}' })),
    ).toEqual({
      command: 'npm test',
      detail: 'detected npm test: package.json has a test script ("vitest run")',
    });
  });

  it('ignores the npm init placeholder and broken package.json', async () => {
    const placeholder = '{"scripts":{"test":"echo \\"Error: no test specified\\" && exit 1"}}';
    expect(await detectTestCommand(tree({ 'package.json': placeholder }))).toBeUndefined();
    expect(await detectTestCommand(tree({ 'package.json': '{nope' }))).toBeUndefined();
    expect(await detectTestCommand(tree({ 'package.json': '{"name":"x"}' }))).toBeUndefined();
  });

  it('prefers explicit pytest config over a package.json, and a package.json over weak Python hints', async () => {
    const pkg = '{"scripts":{"test":"jest"}}';
    expect(
      (await detectTestCommand(tree({ 'pytest.ini': '', 'package.json': pkg })))?.command,
    ).toBe('python3 -m pytest');
    expect((await detectTestCommand(tree({ 'setup.py': '', 'package.json': pkg })))?.command).toBe(
      'npm test',
    );
  });

  it('does not count test files inside dependencies or virtualenvs', async () => {
    const files = {
      'node_modules/x/test_x.py': '',
      '.venv/lib/site-packages/y/test_y.py': '',
      'README.md': '# hi\n',
    };
    expect(await detectTestCommand(tree(files))).toBeUndefined();
  });

  it('returns undefined for a tree with nothing to go on', async () => {
    expect(await detectTestCommand(tree({ 'main.go': 'package main\n' }))).toBeUndefined();
  });
});
