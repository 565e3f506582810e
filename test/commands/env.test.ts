// `frognano env` (issue 25): the environment a run would make, proven, with the exit code that
// says whether the tests can run there; --json's one object; bad input exits 2 in one line.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { envCommand } from '../../src/commands/env.js';
import { UsageError } from '../../src/commands/solve-options.js';
import { createPythonRepo } from '../support/python-repo.js';

const root = mkdtempSync(path.join(tmpdir(), 'env-command-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function env(options: Parameters<typeof envCommand>[0]) {
  const out: string[] = [];
  const code = await envCommand(
    { sandbox: 'local', ...options },
    {
      stdout: (line) => out.push(line),
      stderr: () => undefined,
      env: { FROGNANO_DATA_DIR: path.join(root, 'data') },
      cwd: root,
    },
  );
  return { code, out };
}

describe('frognano env', () => {
  it('exits 0 with the proof when the tests can run, and prints one JSON object with --json', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'ok-')));
    const text = await env({ dir: repo.dir });
    expect(text.code).toBe(0);
    expect(text.out).toContain('tests collected: 2');
    expect(text.out).toContain('the tests can run in this environment');
    expect(text.out).toContain('# .github/frognano.yml');
    const json = await env({ dir: repo.dir, json: true });
    expect(json.code).toBe(0);
    expect(json.out).toHaveLength(1);
    expect(JSON.parse(json.out[0]!)).toEqual({
      source: 'auto',
      ecosystems: [],
      commands: [],
      network: 'registries',
      allowed_hosts: [],
      blocked: [],
      tests_collected: 2,
      import_errors: [],
      ok: true,
      seconds: null,
      snapshot: 'none',
    });
  });

  it('exits 1 and says why when the tests cannot run, with the plan and where it came from', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'missing-')), {
      'requirements.txt': 'frogdate\n',
      'test_calc.py': 'import frogdate\n\ndef test_x():\n    assert frogdate\n',
    });
    const run = await env({ dir: repo.dir });
    expect(run.code).toBe(1);
    expect(run.out).toContain("    pip install -r 'requirements.txt'    # requirements.txt");
    expect(run.out).toContain("import error: No module named 'frogdate'");
    expect(run.out.join('\n')).toContain(
      "the tests cannot run here: import errors at collection: No module named 'frogdate'",
    );
    expect(run.out).toContain('network: registries');
  });

  it('refuses bad input with one line (exit 2)', async () => {
    await expect(env({ repo: 'not a repo' })).rejects.toThrow(UsageError);
    await expect(env({ dir: path.join(root, 'nowhere') })).rejects.toThrow(/does not exist/);
    await expect(env({ repo: 'octo/x', dir: '.' })).rejects.toThrow(/not both/);
  });
});
