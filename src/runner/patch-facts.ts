// What a reviewer must see about a patch beyond its diff, from git's own reading of it: links,
// binaries, mode changes, .gitattributes, and which files belong to the test harness or the
// tests. The last two decide the evidence: the verdict runs the repository's own tests and
// harness as they were before the change (a `conftest.py` with `pytest_sessionfinish` forcing
// exit status 0 must not turn "fail" into "pass"); the agent's versions run separately.
import path from 'node:path';
import picomatch from 'picomatch';
import type { PatchFacts } from './run-types.js';
import type { AppliedChange } from './patch-changes.js';

// Files that decide how the test command runs or what it reports, at any depth. Whole files
// count (pyproject.toml and setup.cfg included, though only some sections configure tests):
// the verdict runs with the repository's versions, the agent's run with its own.
const HARNESS_GLOBS = [
  // Python: pytest collects every conftest.py; .pth and sitecustomize run at interpreter start.
  'conftest.py',
  'pytest.ini',
  '.pytest.ini',
  // pytest 9 reads its settings from these too, before pytest.ini.
  'pytest.toml',
  '.pytest.toml',
  'tox.ini',
  'setup.cfg',
  'pyproject.toml',
  'noxfile.py',
  '.coveragerc',
  'sitecustomize.py',
  'usercustomize.py',
  '*.pth',
  // Installed-package metadata: pytest loads the [pytest11] entry points of every distribution
  // on sys.path as plugins, and `python3 -m pytest` puts the repository root there.
  'entry_points.txt',
  '**/*.dist-info/**',
  '**/*.egg-info/**',
  // JavaScript: scripts, npm's own settings (script-shell), runner and transform configs.
  'package.json',
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.pnpmfile.cjs',
  'jest.config.*',
  'jest.setup.*',
  'setupTests.*',
  'vitest.config.*',
  'vitest.workspace.*',
  'vitest.setup.*',
  'vite.config.*',
  'karma.conf.*',
  '.mocharc*',
  'ava.config.*',
  'playwright.config.*',
  'cypress.config.*',
  'babel.config.*',
  '.babelrc*',
  // Build and task runners a test command often goes through.
  'Makefile',
  'makefile',
  'GNUmakefile',
  '*.mk',
  'justfile',
  'Justfile',
  'Taskfile.yml',
  'Rakefile',
  '.cargo/config',
  '.cargo/config.toml',
].map((glob) => picomatch(glob, { dot: true, basename: !glob.includes('/') }));

const TEST_FILE = picomatch(
  [
    'test_*.py',
    '*_test.py',
    '*_tests.py',
    'tests.py',
    '*.test.*',
    '*.spec.*',
    '*_test.go',
    '*_spec.rb',
  ],
  { dot: true, basename: true },
);
const TEST_DIRS = new Set(['test', 'tests', 'testing', '__tests__', 'spec', 'specs']);

/** A file that configures how the tests run, or one the test command names. */
export function isHarnessFile(file: string, testCommand?: string): boolean {
  if (HARNESS_GLOBS.some((match) => match(file))) return true;
  if (!testCommand) return false;
  return commandPaths(testCommand).has(path.posix.normalize(file));
}

/** A test file: test_*.py, *.test.js and the like, or anything under a tests directory. */
export function isTestFile(file: string): boolean {
  if (TEST_FILE(file)) return true;
  return file
    .split('/')
    .slice(0, -1)
    .some((seg) => TEST_DIRS.has(seg));
}

// A Python module or package that a change adds at the repository root. `python3 -m pytest`
// (and `python3 -m unittest`, `python3 runtests.py`) put the root first on sys.path, so a new
// `pytest.py` replaces the runner and a new `dataclasses.py` a module it imports, before any
// test runs: in effect harness, whatever its name says.
const ROOT_MODULE = /^(?:[^/]+\.(?:py|pyc|so)|[^/]+\/__init__(?:\.[^/]*)?\.(?:py|pyc|so))$/;

/** A change that adds an importable Python module or package at the repository root. */
export function addsRootModule(change: Pick<AppliedChange, 'path' | 'status'>): boolean {
  return change.status === 'A' && ROOT_MODULE.test(change.path);
}

// Compiled modules, anywhere: Python imports `pkg/calc.pyc` when `pkg/calc.py` is gone, and an
// extension module (`.so`, `.pyd`) before a `.py` of the same name. Bytecode and machine code
// are what runs in place of the source a reviewer reads: harness, never the verdict's.
const COMPILED_MODULE = /\.(?:pyc|pyo|so|pyd)$/;

/**
 * A change the verdict does not run: the harness, a new root module, a compiled module. It is
 * set aside with the agent's tests and run only as the agent's own evidence.
 */
export function isHarnessChange(
  change: Pick<AppliedChange, 'path' | 'status' | 'newMode'>,
  testCommand?: string,
): boolean {
  return (
    isHarnessFile(change.path, testCommand) ||
    addsRootModule(change) ||
    (change.newMode !== '000000' && COMPILED_MODULE.test(change.path))
  );
}

/** Paths the test command names (`bash scripts/run-tests.sh`, `python runtests.py`). */
function commandPaths(command: string): Set<string> {
  const out = new Set<string>();
  for (const word of command.split(/[\s;&|()<>'"`=]+/)) {
    if (!/[./]/.test(word) || word.startsWith('-') || word.startsWith('/')) continue;
    const clean = path.posix.normalize(word.replace(/^~\//, ''));
    if (!clean.startsWith('..')) out.add(clean);
  }
  return out;
}

/** The facts of git's reading of a patch. */
export function patchFacts(changes: readonly AppliedChange[], testCommand?: string): PatchFacts {
  const facts: PatchFacts = {
    files: changes.map((c) => ({
      path: c.path,
      status: c.status,
      oldMode: c.oldMode,
      newMode: c.newMode,
      added: c.added,
      removed: c.removed,
      size: c.size,
    })),
    symlinks: [],
    binaries: [],
    modeChanges: [],
    harnessFiles: [],
    testFiles: [],
    gitattributes: [],
  };
  for (const c of changes) {
    const gone = c.newMode === '000000';
    if (c.newMode === '120000') facts.symlinks.push({ path: c.path, target: c.linkTarget ?? '' });
    if (!gone && c.added === null && c.newMode !== '120000')
      facts.binaries.push({ path: c.path, size: c.size, mode: c.newMode });
    const changedMode = c.oldMode !== '000000' && !gone && c.oldMode !== c.newMode;
    const createdExecutable = c.oldMode === '000000' && c.newMode === '100755';
    if (changedMode || createdExecutable)
      facts.modeChanges.push({ path: c.path, oldMode: c.oldMode, newMode: c.newMode });
    if (isHarnessChange(c, testCommand)) facts.harnessFiles.push(c.path);
    else if (isTestFile(c.path)) facts.testFiles.push(c.path);
    if (path.posix.basename(c.path) === '.gitattributes') facts.gitattributes.push(c.path);
  }
  return facts;
}

/**
 * The size of a change in lines, as selection compares them: lines added and removed, and a
 * binary file (which no reviewer reads) one line per 40 bytes, so it is never the small change.
 */
export function changedLines(facts: Pick<PatchFacts, 'files'>): number {
  return facts.files.reduce(
    (n, f) =>
      n + (f.added === null ? Math.max(1, Math.ceil(f.size / 40)) : f.added + (f.removed ?? 0)),
    0,
  );
}
