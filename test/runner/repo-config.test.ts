import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_BLOCKED_PATHS,
  RepoConfigError,
  loadRepoConfig,
} from '../../src/runner/repo-config.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tree(config?: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'repo-config-'));
  dirs.push(dir);
  if (config !== undefined) {
    mkdirSync(path.join(dir, '.github'));
    writeFileSync(path.join(dir, '.github/frognano.yml'), config);
  }
  return dir;
}

async function errorOf(config: string): Promise<string> {
  const err = await loadRepoConfig(tree(config)).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RepoConfigError);
  const message = (err as Error).message;
  expect(message).not.toContain('\n');
  return message;
}

describe('loadRepoConfig', () => {
  it('gives the defaults when the file is missing or empty', async () => {
    // No `setup`: automatic setup (issue 25).
    const defaults = {
      setup: 'auto',
      network: 'registries',
      blocked_paths: ['.github/**', '.gitmodules'],
    };
    expect(await loadRepoConfig(tree())).toEqual(defaults);
    expect(await loadRepoConfig(tree(''))).toEqual(defaults);
    expect(await loadRepoConfig(tree('# only a comment\n'))).toEqual(defaults);
  });

  it('reads every field', async () => {
    const config = await loadRepoConfig(
      tree(
        [
          'image: python:3.12-slim',
          'setup:',
          '  - pip install -e .',
          '  - pip install pytest',
          'test: python3 -m pytest -x tests',
          'network: setup',
          'instructions: |',
          '  Keep the public API stable.',
          'max_steps: 40',
          'timeout_minutes: 12.5',
          'blocked_paths: ["docs/**", "*.lock"]',
        ].join('\n'),
      ),
    );
    expect(config).toEqual({
      image: 'python:3.12-slim',
      setup: ['pip install -e .', 'pip install pytest'],
      test: 'python3 -m pytest -x tests',
      network: 'open',
      instructions: 'Keep the public API stable.',
      max_steps: 40,
      timeout_minutes: 12.5,
      blocked_paths: ['.github/**', '.gitmodules', 'docs/**', '*.lock'],
    });
  });

  it('accepts setup as a single command, `auto`, or [] for none', async () => {
    expect((await loadRepoConfig(tree('setup: make deps'))).setup).toEqual(['make deps']);
    expect((await loadRepoConfig(tree('setup: auto'))).setup).toBe('auto');
    expect((await loadRepoConfig(tree('setup: []'))).setup).toEqual([]);
  });

  it('extends the default blocked paths instead of replacing them', async () => {
    const config = await loadRepoConfig(tree('blocked_paths: []'));
    expect(config.blocked_paths).toEqual([...DEFAULT_BLOCKED_PATHS]);
    const again = await loadRepoConfig(tree('blocked_paths: [".github/**", "x/**"]'));
    expect(again.blocked_paths).toEqual(['.github/**', '.gitmodules', 'x/**']);
  });

  it('drops blank instructions', async () => {
    expect((await loadRepoConfig(tree('instructions: "   "'))).instructions).toBeUndefined();
  });

  it.each([
    ['max_steps: lots', '.github/frognano.yml: max_steps must be a positive integer (got "lots")'],
    ['max_steps: 0', '.github/frognano.yml: max_steps must be a positive integer (got 0)'],
    ['max_steps: 1.5', '.github/frognano.yml: max_steps must be a positive integer (got 1.5)'],
    [
      'timeout_minutes: -3',
      '.github/frognano.yml: timeout_minutes must be a positive number of minutes (got -3)',
    ],
    [
      'timeout_minutes: 100000',
      '.github/frognano.yml: timeout_minutes must be at most 1440 minutes (got 100000)',
    ],
    [
      'network: full',
      '.github/frognano.yml: network must be "none", "registries" or "open" (got "full")',
    ],
    ['setup: [make, 3]', '.github/frognano.yml: setup[1] must be a non-empty command (got 3)'],
    [
      'setup: {a: b}',
      '.github/frognano.yml: setup must be a command or a list of commands (got a mapping)',
    ],
    ['test: ""', '.github/frognano.yml: test must be a non-empty command (got "")'],
    [
      'image: "python 3"',
      '.github/frognano.yml: image must be an image name without spaces (got "python 3")',
    ],
    [
      'blocked_paths: docs',
      '.github/frognano.yml: blocked_paths must be a list of globs (got "docs")',
    ],
    ['instructions: [a]', '.github/frognano.yml: instructions must be text (got a list)'],
    [
      'max_step: 3',
      '.github/frognano.yml: unknown key "max_step", did you mean "max_steps"? (expected one of: image, setup, test, network, network_allow, instructions, instructions_files, max_steps, timeout_minutes, attempts, blocked_paths, _extends)',
    ],
    [
      'sandbox: x',
      '.github/frognano.yml: unknown key "sandbox" (expected one of: image, setup, test, network, network_allow, instructions, instructions_files, max_steps, timeout_minutes, attempts, blocked_paths, _extends)',
    ],
    [
      'instructions_files: [../x.md]',
      '.github/frognano.yml: instructions_files[0] must be a path inside the repository, like AGENTS.md or docs/AGENTS.md (got "../x.md")',
    ],
    [
      'instructions_files: AGENTS.md',
      '.github/frognano.yml: instructions_files must be a list of paths in the repository (got "AGENTS.md")',
    ],
    [
      '_extends: "not a repo"',
      '.github/frognano.yml: _extends must name a repository: repo, owner/repo or owner/repo:path.yml (got "not a repo")',
    ],
    ['- a\n- b', '.github/frognano.yml: must be a mapping of keys'],
  ])('rejects %j with one line naming the key', async (config, expected) => {
    expect(await errorOf(config)).toContain(expected);
  });

  it.each([
    // Docker resolves a short hex prefix of an image id (one digit will do) and `sha256:` ids.
    'b',
    '6399ab10',
    '6399ab101dcb665a2cb4aa3367599d4c8868e7528f987efe29a1f13fb59aebba',
    'sha256:6399ab101dcb665a2cb4aa3367599d4c8868e7528f987efe29a1f13fb59aebba',
    'sha256:6399',
    'Python:3',
    'python:',
    'python@sha256:abc',
  ])('refuses image %j: a repository names an image, never an id', async (image) => {
    const got = image.length > 58 ? `${JSON.stringify(image).slice(0, 57)}...` : `"${image}"`;
    expect(await errorOf(`image: "${image}"\n`)).toBe(
      `.github/frognano.yml: image must name an image (name, name:tag, registry/name:tag or name@sha256:<64 hex digits>), not an image id or id prefix (got ${got})`,
    );
  });

  it.each([
    'python',
    'python:3.12-slim',
    'ghcr.io/acme/sandbox:1',
    'localhost:5000/acme/sandbox',
    'deadbeef:latest',
    `python@sha256:${'a'.repeat(64)}`,
    `python:3.12@sha256:${'a'.repeat(64)}`,
  ])('accepts image %j, a reference by name', async (image) => {
    expect((await loadRepoConfig(tree(`image: "${image}"\n`))).image).toBe(image);
  });

  it('reports YAML syntax errors with their position', async () => {
    expect(await errorOf('setup: [make\ntest: x')).toMatch(
      /^\.github\/frognano\.yml: invalid YAML at line \d+, column \d+: /,
    );
    expect(await errorOf('test: a\ntest: b')).toBe(
      '.github/frognano.yml: invalid YAML at line 2, column 1: Map keys must be unique',
    );
  });

  it.each([
    ['timeout: 10', 'timeout_minutes'],
    ['setup_commands: [make]', 'setup'],
    ['network_mode: none', 'network'],
    ['Blocked-Paths: [docs/**]', 'blocked_paths'],
  ])('suggests for %j the known key whose words it starts or shares', async (config, near) => {
    expect(await errorOf(config)).toContain(`, did you mean "${near}"? (expected one of:`);
  });

  it('words what the YAML library would say in the terms of the file, not of its API', async () => {
    expect(await errorOf('max_steps: 1\n---\nmax_steps: 2\n')).toBe(
      '.github/frognano.yml: invalid YAML at line 2, column 1: holds more than one YAML document (a --- line after the first one): keep one',
    );
    expect(await errorOf('max_steps: !!binary aGVsbG8=\n')).toBe(
      '.github/frognano.yml: max_steps must be a positive integer (got binary data)',
    );
  });

  it('refuses a config that is a symlink (it could point at a host file)', async () => {
    const dir = tree();
    mkdirSync(path.join(dir, '.github'));
    symlinkSync('/etc/hostname', path.join(dir, '.github/frognano.yml'));
    await expect(loadRepoConfig(dir)).rejects.toThrow(
      '.github/frognano.yml: must be a regular file, not a symbolic link',
    );
    const other = tree();
    const outside = tree('test: echo leaked');
    symlinkSync(path.join(outside, '.github'), path.join(other, '.github'));
    await expect(loadRepoConfig(other)).rejects.toThrow(RepoConfigError);
  });

  it('refuses an oversized file', async () => {
    await expect(loadRepoConfig(tree(`instructions: "${'x'.repeat(70_000)}"`))).rejects.toThrow(
      /at most 65536 allowed/,
    );
  });
});

describe('loadRepoConfig with operator caps', () => {
  const caps = { maxSteps: 50, timeoutMinutes: 10 };

  it('bounds max_steps and timeout_minutes the file asks for', async () => {
    const config = await loadRepoConfig(tree('max_steps: 500\ntimeout_minutes: 600\n'), caps);
    expect(config.max_steps).toBe(50);
    expect(config.timeout_minutes).toBe(10);
  });

  it('keeps what the file asks below the caps', async () => {
    const config = await loadRepoConfig(tree('max_steps: 20\ntimeout_minutes: 5\n'), caps);
    expect(config.max_steps).toBe(20);
    expect(config.timeout_minutes).toBe(5);
  });

  it('bounds the defaults too when a cap is below them', async () => {
    const config = await loadRepoConfig(tree(), caps);
    expect(config.max_steps).toBe(50);
    expect(config.timeout_minutes).toBe(10);
    const roomy = await loadRepoConfig(tree(), { maxSteps: 1000, timeoutMinutes: 600 });
    expect(roomy.max_steps).toBeUndefined();
    expect(roomy.timeout_minutes).toBeUndefined();
  });
});

describe('attempts', () => {
  it('accepts 1 to 8 parallel attempts and refuses anything else with one line', async () => {
    expect((await loadRepoConfig(tree('attempts: 4\n'))).attempts).toBe(4);
    expect((await loadRepoConfig(tree())).attempts).toBeUndefined();
    await expect(loadRepoConfig(tree('attempts: 9\n'))).rejects.toThrow(
      '.github/frognano.yml: attempts must be an integer from 1 to 8 (got 9)',
    );
    await expect(loadRepoConfig(tree('attempts: 2.5\n'))).rejects.toThrow(
      /attempts must be an integer from 1 to 8/,
    );
  });

  it('takes network none, registries or open (setup meaning open), registries by default', async () => {
    expect((await loadRepoConfig(tree('network: none\n'))).network).toBe('none');
    expect((await loadRepoConfig(tree('network: registries\n'))).network).toBe('registries');
    expect((await loadRepoConfig(tree('network: open\n'))).network).toBe('open');
    expect((await loadRepoConfig(tree('network: setup\n'))).network).toBe('open');
    expect((await loadRepoConfig(tree('test: x\n'))).network).toBe('registries');
  });

  it('lowers network to the operator cap (a clamp, not an error)', async () => {
    expect((await loadRepoConfig(tree('network: open\n'), { network: 'registries' })).network).toBe(
      'registries',
    );
    expect((await loadRepoConfig(tree('test: x\n'), { network: 'none' })).network).toBe('none');
    expect((await loadRepoConfig(tree('network: none\n'), { network: 'open' })).network).toBe(
      'none',
    );
  });

  it('reads network_allow and names a bad entry', async () => {
    const config = await loadRepoConfig(
      tree('network_allow: [files.example.com, "*.corp.example", "mirror.example:8080"]\n'),
    );
    expect(config.network_allow).toEqual([
      'files.example.com',
      '*.corp.example',
      'mirror.example:8080',
    ]);
    expect(await errorOf('network_allow: [example.com/path]\n')).toBe(
      '.github/frognano.yml: network_allow[0] "example.com/path" is a URL or path, not a host; use host, host:port or *.suffix (like files.example.com, 10.0.0.5:8080, *.corp.example) (got "example.com/path")',
    );
    expect(await errorOf('network_allow: example.com\n')).toBe(
      '.github/frognano.yml: network_allow must be a list of hosts (host, host:port or *.suffix) (got "example.com")',
    );
  });

  it('is bounded by the operator (FROGNANO_MAX_ATTEMPTS)', async () => {
    expect((await loadRepoConfig(tree('attempts: 6\n'), { attempts: 2 })).attempts).toBe(2);
    expect((await loadRepoConfig(tree('attempts: 2\n'), { attempts: 4 })).attempts).toBe(2);
  });
});
