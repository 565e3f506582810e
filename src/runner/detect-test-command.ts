// Without `test:` in the repo config, guess the command that proves a fix, and say why,
// so the summary can tell the reviewer where the command came from.
import { readdir, readFile, lstat } from 'node:fs/promises';
import path from 'node:path';

export interface DetectedTestCommand {
  command: string;
  /** Human explanation, e.g. `detected pytest: found pytest.ini`. */
  detail: string;
}

export const PYTEST_COMMAND = 'python3 -m pytest';
export const NPM_TEST_COMMAND = 'npm test';

// What `npm init` writes: a test script that only fails is no test at all.
const NPM_PLACEHOLDER = /no test specified/i;
// Directories that hold other people's code or build output, not the project's tests.
const SKIP_DIRS = new Set([
  '.git',
  'node_modules',
  '.venv',
  'venv',
  'env',
  '.tox',
  '.nox',
  '__pycache__',
  'site-packages',
  'build',
  'dist',
  '.mypy_cache',
  '.pytest_cache',
]);
const MAX_SCAN_DEPTH = 4;
const MAX_SCAN_ENTRIES = 5000;

export async function detectTestCommand(treeDir: string): Promise<DetectedTestCommand | undefined> {
  const pyproject = await readSmall(path.join(treeDir, 'pyproject.toml'));
  // Explicit pytest configuration wins over everything else.
  if (await isFile(path.join(treeDir, 'pytest.ini'))) return pytest('found pytest.ini');
  if (pyproject !== undefined && /^\s*\[tool\.pytest(\.ini_options)?\]/m.test(pyproject)) {
    return pytest('found [tool.pytest.ini_options] in pyproject.toml');
  }
  const npm = await npmTestScript(treeDir);
  if (npm)
    return {
      command: NPM_TEST_COMMAND,
      detail: `detected npm test: package.json has a test script (${npm})`,
    };
  if (pyproject !== undefined) return pytest('found pyproject.toml');
  for (const marker of ['setup.py', 'setup.cfg', 'tox.ini']) {
    if (await isFile(path.join(treeDir, marker))) return pytest(`found ${marker}`);
  }
  const testFile = await findPythonTestFile(treeDir);
  if (testFile) return pytest(`found ${testFile}`);
  return undefined;
}

function pytest(reason: string): DetectedTestCommand {
  return { command: PYTEST_COMMAND, detail: `detected pytest: ${reason}` };
}

async function npmTestScript(treeDir: string): Promise<string | undefined> {
  const text = await readSmall(path.join(treeDir, 'package.json'));
  if (text === undefined) return undefined;
  let pkg: unknown;
  try {
    pkg = JSON.parse(text);
  } catch {
    return undefined;
  }
  const scripts = (pkg as { scripts?: unknown } | null)?.scripts;
  const test = (scripts as { test?: unknown } | null | undefined)?.test;
  if (typeof test !== 'string' || test.trim() === '' || NPM_PLACEHOLDER.test(test))
    return undefined;
  const shown = test.length > 60 ? `${test.slice(0, 57)}...` : test;
  return JSON.stringify(shown);
}

/** Breadth-first, bounded: the first `test_*.py` / `*_test.py`, as a tree-relative path. */
async function findPythonTestFile(treeDir: string): Promise<string | undefined> {
  let level = [''];
  let seen = 0;
  for (let depth = 0; depth <= MAX_SCAN_DEPTH && level.length > 0; depth++) {
    const next: string[] = [];
    for (const rel of level) {
      let entries;
      try {
        entries = await readdir(path.join(treeDir, rel), { withFileTypes: true });
      } catch {
        continue;
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const entry of entries) {
        if (++seen > MAX_SCAN_ENTRIES) return undefined;
        const child = rel ? `${rel}/${entry.name}` : entry.name;
        if (entry.isFile() && /^(test_.*|.*_test)\.py$/.test(entry.name)) return child;
        if (entry.isDirectory() && !SKIP_DIRS.has(entry.name)) next.push(child);
      }
    }
    level = next;
  }
  return undefined;
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await lstat(file)).isFile();
  } catch {
    return false;
  }
}

/** Regular files only (no symlinks out of the untrusted tree), at most 1 MiB. */
async function readSmall(file: string): Promise<string | undefined> {
  try {
    const info = await lstat(file);
    if (!info.isFile() || info.size > 1024 * 1024) return undefined;
    return await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}
