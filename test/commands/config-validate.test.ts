// `frognano config validate` and `frognano config show`, through the real CLI on real files in
// real git repositories.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createPythonRepo } from '../support/python-repo.js';

const CLI = path.resolve('bin/frognano.js');
const root = mkdtempSync(path.join(tmpdir(), 'frognano-config-cli-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

function runCli(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, cwd, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

let n = 0;
function repoWith(config?: string, files: Record<string, string> = {}): string {
  n += 1;
  const extra = config === undefined ? files : { ...files, '.github/frognano.yml': config };
  return createPythonRepo(path.join(root, `r${n}`), extra).dir;
}

describe('frognano config validate', () => {
  it('prints valid and exits 0 for a good file', async () => {
    const dir = repoWith('test: python3 -m pytest\nsetup: [make]\n');
    expect(await runCli(['config', 'validate'], dir)).toEqual({
      code: 0,
      stdout: 'valid\n',
      stderr: '',
    });
  });

  it('prints every problem with its line, worded as a run words it, and exits 1', async () => {
    const dir = repoWith(
      [
        'image: python:3.12',
        'max_step: 3',
        'setup:',
        '  - make',
        '  - 3',
        'network: full',
        '',
      ].join('\n'),
    );
    const run = await runCli(['config', 'validate'], dir);
    expect(run.code).toBe(1);
    expect(run.stdout.split('\n')).toEqual([
      '.github/frognano.yml:2:1: unknown key "max_step", did you mean "max_steps"? (expected one of: image, setup, test, network, network_allow, instructions, instructions_files, max_steps, timeout_minutes, attempts, blocked_paths, _extends)',
      '.github/frognano.yml:5:5: setup[1] must be a non-empty command (got 3)',
      '.github/frognano.yml:6:10: network must be "none", "registries" or "open" (got "full")',
      '',
    ]);
    const json = await runCli(['config', 'validate', '--json', '.github/frognano.yml'], dir);
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as {
      valid: boolean;
      problems: { line: number; key: string }[];
    };
    expect(report.valid).toBe(false);
    expect(report.problems.map((p) => [p.line, p.key])).toEqual([
      [2, 'max_step'],
      [5, 'setup[1]'],
      [6, 'network'],
    ]);
  });

  it('refuses an image id or id prefix as a run does, at its line', async () => {
    const dir = repoWith('test: make\nimage: "b"\n');
    expect(await runCli(['config', 'validate'], dir)).toEqual({
      code: 1,
      stdout:
        '.github/frognano.yml:2:8: image must name an image (name, name:tag, registry/name:tag or name@sha256:<64 hex digits>), not an image id or id prefix (got "b")\n',
      stderr: '',
    });
  });

  it('gives a YAML bomb, a huge file and a binary file one clear line each', async () => {
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 9; i++) {
      const [name, prev] = [String.fromCharCode(97 + i), String.fromCharCode(96 + i)];
      bomb.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    }
    const dir = path.join(root, 'bad');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'bomb.yml'), bomb.join('\n'));
    writeFileSync(path.join(dir, 'huge.yml'), `instructions: "${'x'.repeat(70_000)}"\n`);
    writeFileSync(path.join(dir, 'binary.yml'), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1]));
    writeFileSync(path.join(dir, 'deep.yml'), `setup: ${'['.repeat(3000)}${']'.repeat(3000)}\n`);
    expect((await runCli(['config', 'validate', 'bomb.yml'], dir)).stdout).toBe(
      'bomb.yml: uses YAML aliases (*name) to expand to too much data, which is how a YAML bomb works: write the values out\n',
    );
    expect((await runCli(['config', 'validate', 'huge.yml'], dir)).stdout).toBe(
      'huge.yml: is 70017 bytes, at most 65536 allowed\n',
    );
    expect((await runCli(['config', 'validate', 'binary.yml'], dir)).stdout).toBe(
      'binary.yml: is a binary file, not YAML text\n',
    );
    expect((await runCli(['config', 'validate', 'deep.yml'], dir)).stdout).toBe(
      'deep.yml:1:23: nests values more than 16 levels deep at line 1, column 23 (a frognano config needs 3)\n',
    );
    const missing = await runCli(['config', 'validate', 'nope.yml'], dir);
    expect(missing).toMatchObject({
      code: 1,
      stdout: 'nope.yml: not found: give the path of a frognano config file\n',
    });
  });

  it('refuses .github/frognano.yml reached through a linked .github, as a run does', async () => {
    const dir = repoWith();
    mkdirSync(path.join(root, 'elsewhere'));
    writeFileSync(path.join(root, 'elsewhere/frognano.yml'), 'max_steps: 10\n');
    symlinkSync(path.join(root, 'elsewhere'), path.join(dir, '.github'));
    const expected = {
      code: 1,
      stdout:
        '.github/frognano.yml: must be a regular file, not a symbolic link (a run refuses it too)\n',
      stderr: '',
    };
    expect(await runCli(['config', 'validate'], dir)).toEqual(expected);
    expect(await runCli(['config', 'validate', '.github/frognano.yml'], dir)).toEqual(expected);
    // Named as a file of its own, it is only a file.
    expect(
      (await runCli(['config', 'validate', path.join(root, 'elsewhere/frognano.yml')], dir)).code,
    ).toBe(0);
  });
});

describe('frognano config show', () => {
  it('names the same first problem as `config validate` lists first (and a run names)', async () => {
    // The schema reports the bad value of a later key before the unknown key above it.
    const dir = repoWith('max_step: 3\nimage: python:3.12\nnetwork: full\n');
    const validate = await runCli(['config', 'validate'], dir);
    expect(validate.code).toBe(1);
    const first = validate.stdout.split('\n')[0]!;
    expect(first).toMatch(/^\.github\/frognano\.yml:1:1: unknown key "max_step"/);
    const show = await runCli(['config', 'show'], dir);
    expect(show.code).toBe(1);
    expect(show.stderr).toBe(
      `frognano: .github/frognano.yml: ${first.replace(/^\.github\/frognano\.yml:1:1: /, '')}\n`,
    );
  });

  it('prints the configuration a run would use, marking where each value came from', async () => {
    const dir = repoWith(
      'max_steps: 500\nsetup: pip install -e .\nblocked_paths: [docs/**]\ninstructions_files: [AGENTS.md, CLAUDE.md]\n',
    );
    const run = await runCli(['config', 'show', '--repo', dir], root, {
      FROGNANO_MAX_STEPS_CAP: '100',
      FROGNANO_SETUP_NETWORK_CAP: 'none',
      FROGNANO_SANDBOX_IMAGE: 'acme/sandbox:1',
    });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const lines = run.stdout.split('\n');
    expect(lines).toContain('image: acme/sandbox:1 # FROGNANO_SANDBOX_IMAGE');
    expect(lines).toContain('setup: # .github/frognano.yml');
    expect(lines).toContain(
      'network: none # FROGNANO_SETUP_NETWORK_CAP (the default is registries)',
    );
    expect(lines).toContain('network_allow: [] # default (none)');
    expect(lines).toContain('test: python3 -m pytest # detected pytest: found pytest.ini');
    expect(lines).toContain('max_steps: 100 # FROGNANO_MAX_STEPS_CAP (the file asks 500)');
    expect(lines).toContain('timeout_minutes: 30 # default');
    expect(lines).toContain(
      'blocked_paths: # default (.github/**, .gitmodules) + .github/frognano.yml',
    );
    // It is YAML: what it shows is what a run uses.
    expect(parse(run.stdout)).toEqual({
      image: 'acme/sandbox:1',
      setup: ['pip install -e .'],
      network: 'none',
      network_allow: [],
      test: 'python3 -m pytest',
      instructions: null,
      instructions_files: ['AGENTS.md', 'CLAUDE.md'],
      max_steps: 100,
      timeout_minutes: 30,
      attempts: 1,
      blocked_paths: ['.github/**', '.gitmodules', 'docs/**'],
    });
  });

  it("says where the App follows _extends: the owner's .github, or no more private", async () => {
    const run = await runCli(['config', 'show', '--repo', repoWith('_extends: shared\n')], root);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout.split('\n')).toContain(
      "# _extends: shared (followed by the App only: to the owner's .github repository, or to a repository no more private than this one)",
    );
  });

  it('shows the defaults without a file, and refuses a bad file or a link with the run’s line', async () => {
    const plain = await runCli(['config', 'show'], repoWith());
    expect(plain.code).toBe(0);
    expect(parse(plain.stdout)).toMatchObject({
      instructions_files: ['AGENTS.md'],
      max_steps: 150,
    });
    const bad = await runCli(['config', 'show'], repoWith('max_steps: lots\n'));
    expect(bad).toEqual({
      code: 1,
      stdout: '',
      stderr: 'frognano: .github/frognano.yml: max_steps must be a positive integer (got "lots")\n',
    });
    const linked = repoWith();
    mkdirSync(path.join(linked, '.github'));
    symlinkSync('/etc/hostname', path.join(linked, '.github/frognano.yml'));
    expect((await runCli(['config', 'show'], linked)).stderr).toBe(
      'frognano: .github/frognano.yml: must be a regular file, not a symbolic link\n',
    );
    const notDir = await runCli(['config', 'show', '--repo', 'nowhere'], root);
    expect(notDir).toEqual({
      code: 2,
      stdout: '',
      stderr: "frognano: --repo nowhere is not a directory: give a repository's directory\n",
    });
  });
});
