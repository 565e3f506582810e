import { describe, expect, it } from 'vitest';
import {
  addsRootModule,
  changedLines,
  isHarnessChange,
  isHarnessFile,
  isTestFile,
  patchFacts,
} from '../../src/runner/patch-facts.js';
import type { AppliedChange } from '../../src/runner/patch-changes.js';

describe('isHarnessFile and isTestFile', () => {
  it('knows the files that decide how tests run, at any depth', () => {
    for (const file of [
      'conftest.py',
      'tests/unit/conftest.py',
      'pytest.ini',
      'pytest.toml',
      '.pytest.toml',
      'tox.ini',
      'setup.cfg',
      'pyproject.toml',
      'noxfile.py',
      'src/evil.pth',
      'sitecustomize.py',
      'package.json',
      'web/package.json',
      '.npmrc',
      'jest.config.js',
      'vitest.config.ts',
      'vite.config.mjs',
      '.mocharc.yml',
      'Makefile',
      '.cargo/config.toml',
      // Installed-package metadata on sys.path: its [pytest11] entry points load as plugins.
      'frog.dist-info/entry_points.txt',
      'frog.dist-info/METADATA',
      'src/frog.egg-info/entry_points.txt',
    ]) {
      expect(isHarnessFile(file), file).toBe(true);
    }
    for (const file of ['calc.py', 'src/app.ts', 'README.md', 'docs/conf.py', 'setup.py']) {
      expect(isHarnessFile(file), file).toBe(false);
    }
  });

  it('counts the files the test command names as harness', () => {
    expect(isHarnessFile('scripts/run-tests.sh', 'bash ./scripts/run-tests.sh -q')).toBe(true);
    expect(isHarnessFile('runtests.py', 'python3 runtests.py')).toBe(true);
    expect(isHarnessFile('scripts/other.sh', 'bash ./scripts/run-tests.sh')).toBe(false);
  });

  it('knows test files by name and by directory', () => {
    for (const file of [
      'test_calc.py',
      'pkg/calc_test.py',
      'tests/helpers.py',
      'src/__tests__/a.js',
      'a.test.ts',
      'b.spec.js',
      'x_test.go',
    ]) {
      expect(isTestFile(file), file).toBe(true);
    }
    for (const file of ['calc.py', 'testing.md', 'src/contest.py', 'latest/x.py']) {
      expect(isTestFile(file), file).toBe(false);
    }
  });
});

describe('addsRootModule', () => {
  it('knows a new module or package at the root, which shadows what the test run imports', () => {
    for (const path of [
      'pytest.py',
      'dataclasses.py',
      'argparse.pyc',
      'fast.cpython-311-x86_64-linux-gnu.so',
      'pytest/__init__.py',
      '_pytest/__init__.cpython-311-x86_64-linux-gnu.so',
    ]) {
      expect(addsRootModule({ path, status: 'A' }), path).toBe(true);
    }
    // A module the repository already had is its source; deeper modules are not on sys.path.
    expect(addsRootModule({ path: 'calc.py', status: 'M' })).toBe(false);
    for (const path of ['calc/util.py', 'src/pytest.py', 'calc/sub/__init__.py', 'notes.txt']) {
      expect(addsRootModule({ path, status: 'A' }), path).toBe(false);
    }
  });
});

describe('isHarnessChange', () => {
  it('counts compiled modules anywhere as harness: Python runs them in place of the source', () => {
    for (const path of [
      'pkg/calc.pyc',
      'pkg/__pycache__/calc.cpython-311.pyc',
      'a/b/fast.so',
      'x.pyd',
    ])
      expect(isHarnessChange({ path, status: 'A', newMode: '100644' }), path).toBe(true);
    expect(isHarnessChange({ path: 'pkg/calc.pyc', status: 'M', newMode: '100644' })).toBe(true);
    // Deleting one is the source's change (the tests then run without it).
    expect(isHarnessChange({ path: 'pkg/old.pyc', status: 'D', newMode: '000000' })).toBe(false);
    expect(isHarnessChange({ path: 'pkg/calc.py', status: 'M', newMode: '100644' })).toBe(false);
    expect(isHarnessChange({ path: 'conftest.py', status: 'A', newMode: '100644' })).toBe(true);
  });
});

describe('changedLines', () => {
  it('counts a binary file by its size, so bytecode is never the smaller change', () => {
    const file = (added: number | null, removed: number | null, size: number) => ({
      path: 'f',
      status: 'M',
      oldMode: '100644',
      newMode: '100644',
      added,
      removed,
      size,
    });
    expect(changedLines({ files: [file(3, 2, 100)] })).toBe(5);
    expect(changedLines({ files: [file(null, null, 4000), file(1, 1, 10)] })).toBe(102);
    expect(changedLines({ files: [file(null, null, 0)] })).toBe(1);
  });
});

describe('patchFacts', () => {
  const change = (c: Partial<AppliedChange> & { path: string }): AppliedChange => ({
    oldMode: '100644',
    newMode: '100644',
    status: 'M',
    added: 1,
    removed: 1,
    size: 10,
    ...c,
  });

  it('lists links, binaries, mode changes, harness, tests and .gitattributes', () => {
    const facts = patchFacts(
      [
        change({ path: '.gitattributes', oldMode: '000000', status: 'A' }),
        change({
          path: 'bin/tool',
          oldMode: '000000',
          newMode: '100755',
          status: 'A',
          added: null,
          removed: null,
          size: 8400,
        }),
        change({ path: 'conftest.py', oldMode: '000000', status: 'A' }),
        change({
          path: 'link',
          oldMode: '000000',
          newMode: '120000',
          status: 'A',
          linkTarget: '/etc',
        }),
        change({ path: 'run.sh', newMode: '100755', added: 0, removed: 0 }),
        change({
          path: 'gone.bin',
          newMode: '000000',
          status: 'D',
          added: null,
          removed: null,
          size: 0,
        }),
        change({ path: 'tests/test_a.py' }),
      ],
      'python3 -m pytest',
    );
    expect(facts.symlinks).toEqual([{ path: 'link', target: '/etc' }]);
    expect(facts.binaries).toEqual([{ path: 'bin/tool', size: 8400, mode: '100755' }]);
    expect(facts.modeChanges).toEqual([
      { path: 'bin/tool', oldMode: '000000', newMode: '100755' },
      { path: 'run.sh', oldMode: '100644', newMode: '100755' },
    ]);
    expect(facts.harnessFiles).toEqual(['conftest.py']);
    expect(facts.testFiles).toEqual(['tests/test_a.py']);
    expect(facts.gitattributes).toEqual(['.gitattributes']);
    expect(facts.files).toHaveLength(7);
  });
});
