// Python bytecode across the test runs of one verification sandbox: what an earlier run
// compiled OUTSIDE the tree (pytest, the standard library) is reused, so the second and third
// runs do not compile pytest again; nothing compiled from the tree ever is, so a source edit
// of the same size within the same second is tested as the new code.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Sandbox } from '../../src/leaf/sandbox.js';
import { runTest, warmBytecode } from '../../src/runner/phases/run-test.js';
import { testPassed } from '../../src/runner/test-report.js';
import { createLocalSandbox } from '../../src/sandbox/local-sandbox.js';
import { describeDocker, testRunId } from '../support/docker-engine.js';
import { dockerSandboxWithTree } from '../support/docker-sandbox-factory.js';

const root = mkdtempSync(path.join(tmpdir(), 'run-test-bytecode-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const test = { command: 'python3 -m pytest -q', source: 'config' as const };
const signal = new AbortController().signal;

function tree(): string {
  const dir = mkdtempSync(path.join(root, 'tree-'));
  writeFileSync(path.join(dir, 'mod.py'), 'X = 1\n');
  writeFileSync(
    path.join(dir, 'test_mod.py'),
    'from mod import X\n\n\ndef test_x():\n    assert X == 1\n',
  );
  return dir;
}

async function sameSecondEdit(sandbox: Sandbox): Promise<void> {
  // Same size, same mtime: only a cache that ignores what the earlier run compiled sees it.
  const edit = await sandbox.exec(
    'm=$(stat -c %Y mod.py) && printf "X = 2\\n" > mod.py && touch -d "@$m" mod.py',
    { timeoutMs: 30_000, signal },
  );
  expect(edit.exitCode).toBe(0);
}

async function inode(sandbox: Sandbox, file: string): Promise<string> {
  const found = await sandbox.exec(
    `f=$(find "$HOME/.cache/frognano-pycache/${file}" -name 'python.cpython-*.pyc' -path '*_pytest*' | head -1) && stat -c %i "$f"`,
    { timeoutMs: 30_000, signal },
  );
  return found.stdout.toString().trim();
}

async function sequence(sandbox: Sandbox): Promise<void> {
  const first = await runTest(sandbox, test, 'verify-after', { signal });
  expect(testPassed(first)).toBe(true);
  await sameSecondEdit(sandbox);
  const second = await runTest(sandbox, test, 'agent-tests', { signal });
  expect(second.exitCode).toBe(1);
  expect(second.outputTail).toContain('assert 2 == 1');
}

describeDocker('runTest bytecode in a Docker sandbox', () => {
  it('a sandbox warmed while the model works starts its first run with pytest compiled', async () => {
    const warmed = await dockerSandboxWithTree(tree(), {
      runId: testRunId('bytecode-warm'),
      repo: 'test/bytecode',
    });
    try {
      await warmBytecode(warmed, test, signal);
      const warm = await inode(warmed, 'warm');
      expect(warm).toMatch(/^\d+$/);
      await sequence(warmed);
      expect(await inode(warmed, 'verify-after')).toBe(warm);
      // A command that is not pytest is not guessed at.
      const other = await dockerSandboxWithTree(tree(), {
        runId: testRunId('bytecode-warm'),
        repo: 'test/bytecode',
      });
      try {
        await warmBytecode(other, { command: 'make test' }, signal);
        expect(await inode(other, 'warm')).toBe('');
      } finally {
        await other.dispose();
      }
    } finally {
      await warmed.dispose();
    }
  });

  let sandbox: Sandbox | undefined;
  beforeAll(async () => {
    sandbox = await dockerSandboxWithTree(tree(), {
      runId: testRunId('bytecode'),
      repo: 'test/bytecode',
    });
  });
  afterAll(() => sandbox?.dispose());

  it('reuses what was compiled outside the tree and never what was compiled from it', async () => {
    await sequence(sandbox!);
    // pytest's own bytecode is the earlier run's file, linked, not compiled again.
    const first = await inode(sandbox!, 'verify-after');
    expect(first).toMatch(/^\d+$/);
    expect(await inode(sandbox!, 'agent-tests')).toBe(first);
  });
});

it('the local sandbox tests a same-second edit as the new code too', async () => {
  const sandbox = await createLocalSandbox({ sourceDir: tree(), tempRoot: root });
  try {
    await sequence(sandbox);
  } finally {
    await sandbox.dispose();
  }
});
