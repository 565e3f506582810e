// Automatic setup's plan, from fixture trees: what the project's own files declare, in order,
// each command with its source, and nothing beyond them.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planSetup } from '../../../src/runner/setup-plan/plan-setup.js';
import { readSetupTexts } from '../../../src/runner/setup-plan/read-setup-texts.js';
import { parseJsonc } from '../../../src/runner/setup-plan/devcontainer-commands.js';
import { toxDeps } from '../../../src/runner/setup-plan/python-commands.js';

const root = mkdtempSync(path.join(tmpdir(), 'setup-plan-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(root, 'tree-'));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  return dir;
}

async function plan(files: Record<string, string>) {
  return planSetup(await readSetupTexts(tree(files)));
}

const VENV = 'test -x ~/.venv/bin/python || python3 -m venv --system-site-packages ~/.venv';

describe('planSetup', () => {
  it('plans nothing for a tree that declares nothing', async () => {
    const p = await plan({ 'calc.py': 'x = 1\n', 'test_calc.py': 'def test(): pass\n' });
    expect(p).toEqual({ ecosystems: [], candidates: [], files: [], notes: [] });
  });

  it('installs a pyproject project editable with its test extras, requirement files first', async () => {
    const p = await plan({
      'pyproject.toml': [
        '[project]',
        'name = "demo"',
        'dependencies = ["python-dateutil>=2"]',
        '[project.optional-dependencies]',
        'docs = ["sphinx"]',
        '"test" = [',
        '  "pytest==8.0",',
        ']',
        'dev = ["ruff"]',
        '[tool.pytest.ini_options]',
        'testpaths = ["tests"]',
      ].join('\n'),
      'requirements-dev.txt': 'ruff\n',
      'requirements.txt': 'python-dateutil\n',
      'requirements/ci.txt': 'coverage\n',
      'test-requirements.txt': 'pytest\n',
      'docs/requirements.txt': 'sphinx\n',
    });
    expect(p.ecosystems).toEqual(['python']);
    expect(p.candidates).toEqual([
      {
        name: 'project files',
        commands: [
          { command: VENV, from: 'automatic setup: one venv for the project' },
          { command: "pip install -r 'requirements.txt'", from: 'requirements.txt' },
          { command: "pip install -r 'requirements-dev.txt'", from: 'requirements-dev.txt' },
          { command: "pip install -r 'requirements/ci.txt'", from: 'requirements/ci.txt' },
          { command: "pip install -r 'test-requirements.txt'", from: 'test-requirements.txt' },
          { command: "pip install -e '.[test,dev]'", from: 'pyproject.toml [test,dev]' },
        ],
      },
    ]);
    expect(p.files).toEqual([
      'pyproject.toml',
      'requirements-dev.txt',
      'requirements.txt',
      'requirements/ci.txt',
      'test-requirements.txt',
    ]);
  });

  it('reads extras from setup.cfg and setup.py, and tox test deps', async () => {
    const cfg = await plan({
      'setup.cfg': '[metadata]\nname = x\n[options.extras_require]\ntesting =\n    pytest\n',
    });
    expect(cfg.candidates[0]!.commands.at(-1)).toEqual({
      command: "pip install -e '.[testing]'",
      from: 'setup.cfg [testing]',
    });
    const py = await plan({
      'setup.py': "setup(name='x', extras_require={'tests': ['pytest'], 'docs': []})\n",
      'tox.ini':
        '[tox]\nenvlist = py3\n[testenv]\ndeps =\n    pytest\n    -rrequirements.txt\n    mock>=4 # comment\n    {[base]deps}\ncommands = pytest\n',
    });
    expect(py.candidates[0]!.commands.slice(1)).toEqual([
      { command: "pip install -e '.[tests]'", from: 'setup.py [tests]' },
      { command: "pip install 'pytest' 'mock>=4'", from: 'tox.ini [testenv] deps' },
    ]);
    expect(py.files).toEqual(['setup.py', 'tox.ini']);
  });

  it('installs a plain project editable when it declares no test extras', async () => {
    const p = await plan({ 'pyproject.toml': '[project]\nname = "x"\n' });
    expect(p.candidates[0]!.commands[1]).toEqual({
      command: "pip install -e '.'",
      from: 'pyproject.toml',
    });
  });

  it('runs npm ci for a lockfile, and yarn or pnpm through corepack, saying so without it', async () => {
    const npm = await plan({ 'package.json': '{}', 'package-lock.json': '{}' });
    expect(npm.ecosystems).toEqual(['node']);
    expect(npm.candidates).toEqual([
      { name: 'project files', commands: [{ command: 'npm ci', from: 'package-lock.json' }] },
    ]);
    const yarn = await plan({ 'package.json': '{}', 'yarn.lock': '' });
    expect(yarn.candidates[0]!.commands[0]!.command).toContain('corepack yarn install');
    expect(yarn.candidates[0]!.commands[0]!.command).toContain('this image has no corepack');
    const bare = await plan({ 'package.json': '{}' });
    expect(bare.candidates).toEqual([]);
    expect(bare.notes[0]).toContain('package.json has no lockfile');
  });

  it('adds the devcontainer lifecycle commands and CI install steps as later candidates', async () => {
    const p = await plan({
      'requirements.txt': 'attrs\n',
      '.devcontainer/devcontainer.json': `{
        // comments and trailing commas, as VS Code writes it
        "image": "mcr.microsoft.com/devcontainers/python:3",
        "postCreateCommand": "pip install -r requirements.txt && echo http://x",
        "onCreateCommand": ["bash", "-c", "echo it's made"],
        "updateContentCommand": { "a": "make deps", },
      }`,
      '.github/workflows/ci.yml': [
        'on: push',
        'jobs:',
        '  test:',
        '    runs-on: ubuntu-latest',
        '    steps:',
        '      - uses: actions/checkout@v4',
        '      - run: python -m pip install -e ".[test]"',
        '      - run: pip install ${{ matrix.extra }}',
        '      - run: pytest',
      ].join('\n'),
      '.github/workflows/lint.yml': 'jobs:\n  lint:\n    steps:\n      - run: ruff check\n',
    });
    expect(p.candidates.map((c) => c.name)).toEqual([
      'project files',
      '.devcontainer/devcontainer.json',
      '.github/workflows/ci.yml',
    ]);
    expect(p.candidates[1]!.commands).toEqual([
      { command: VENV, from: 'automatic setup: one venv for the project' },
      {
        command: "'bash' '-c' 'echo it'\\''s made'",
        from: '.devcontainer/devcontainer.json onCreateCommand',
      },
      { command: 'make deps', from: '.devcontainer/devcontainer.json updateContentCommand' },
      {
        command: 'pip install -r requirements.txt && echo http://x',
        from: '.devcontainer/devcontainer.json postCreateCommand',
      },
    ]);
    expect(p.candidates[2]!.commands.slice(1)).toEqual([
      { command: 'python -m pip install -e ".[test]"', from: '.github/workflows/ci.yml' },
    ]);
    expect(p.files).toEqual([
      '.devcontainer/devcontainer.json',
      '.github/workflows/ci.yml',
      'requirements.txt',
    ]);
  });

  it('never reads through a link out of the tree', async () => {
    const outside = tree({ 'devcontainer.json': '{"postCreateCommand": "leak"}' });
    const dir = tree({ 'requirements.txt': 'x\n' });
    symlinkSync(outside, path.join(dir, '.devcontainer'));
    symlinkSync(path.join(outside, 'devcontainer.json'), path.join(dir, 'setup.py'));
    const texts = await readSetupTexts(dir);
    expect([...texts.keys()]).toEqual(['requirements.txt']);
  });

  it('parses JSONC and tox deps defensively', () => {
    expect(parseJsonc('{"a": "//not a comment", /* c */ "b": [1,],}')).toEqual({
      a: '//not a comment',
      b: [1],
    });
    expect(parseJsonc('{')).toBeUndefined();
    expect(toxDeps(undefined)).toEqual([]);
    expect(toxDeps('[testenv:lint]\ndeps = ruff\n')).toEqual([]);
  });
});
