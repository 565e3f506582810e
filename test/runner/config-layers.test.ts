import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  configLayer,
  mergeConfigLayers,
  resolveRepoConfig,
} from '../../src/runner/config-layers.js';
import { RepoConfigError } from '../../src/runner/repo-config.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tree(config?: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'config-layers-'));
  dirs.push(dir);
  if (config !== undefined) {
    mkdirSync(path.join(dir, '.github'));
    writeFileSync(path.join(dir, '.github/frognano.yml'), config);
  }
  return dir;
}

const org = { name: 'acme/.github:.github/frognano.yml', text: '' };

describe('mergeConfigLayers', () => {
  it('lets a later file override an earlier one key by key; blocked paths add up', () => {
    const { config, origins } = mergeConfigLayers([
      configLayer({
        ...org,
        text: 'max_steps: 50\ninstructions: Org rules.\nnetwork: setup\nblocked_paths: [secrets/**]\n',
      }),
      configLayer({
        name: '.github/frognano.yml',
        text: 'max_steps: 20\nblocked_paths: [docs/**]\n_extends: shared\n',
      }),
    ]);
    expect(config).toMatchObject({
      max_steps: 20,
      instructions: 'Org rules.',
      network: 'open',
      blocked_paths: ['.github/**', '.gitmodules', 'secrets/**', 'docs/**'],
    });
    expect(origins).toEqual({
      max_steps: ['.github/frognano.yml'],
      instructions: [org.name],
      network: [org.name],
      blocked_paths: [org.name, '.github/frognano.yml'],
    });
  });

  it('names the bad file, line and key of a file from another repository', () => {
    expect(() => configLayer({ ...org, text: 'test: x\nmax_stepz: 5\n' })).toThrow(
      new RepoConfigError(
        'acme/.github:.github/frognano.yml, line 2: an unknown key, did you mean "max_steps"? (expected one of: image, setup, test, network, network_allow, instructions, instructions_files, max_steps, timeout_minutes, attempts, blocked_paths, _extends)',
      ),
    );
    expect(() => configLayer({ ...org, text: `test: "${'x'.repeat(70_000)}"` })).toThrow(
      'acme/.github:.github/frognano.yml: is 70008 bytes, at most 65536 allowed',
    );
  });
});

describe('a file fetched from another repository', () => {
  const secret = 'correct-horse-battery-staple';
  const fetched = { name: 'acme/private-infra:deploy/passphrase.yml' };

  it.each([
    [
      `${secret}\n`,
      'acme/private-infra:deploy/passphrase.yml, line 1: must be a mapping of keys (image, setup, test, network, network_allow, instructions, instructions_files, max_steps, timeout_minutes, attempts, blocked_paths, _extends) to values',
    ],
    [
      `# deploy\nimage: "${secret} x"\n`,
      'acme/private-infra:deploy/passphrase.yml, line 2: image must be an image name without spaces',
    ],
    [
      `max_steps: ${secret}\n`,
      'acme/private-infra:deploy/passphrase.yml, line 1: max_steps must be a positive integer',
    ],
    [
      `setup: [make, [${secret}]]\n`,
      'acme/private-infra:deploy/passphrase.yml, line 1: setup[1] must be a non-empty command',
    ],
    [
      `${secret}: yes\n`,
      'acme/private-infra:deploy/passphrase.yml, line 1: an unknown key (expected one of: image, setup, test, network, network_allow, instructions, instructions_files, max_steps, timeout_minutes, attempts, blocked_paths, _extends)',
    ],
    [
      // The parser would say "Invalid escape sequence \q": its words can quote the file.
      `test: "${secret}\\q"\n`,
      'acme/private-infra:deploy/passphrase.yml: invalid YAML at line 1, column 36: bad dq escape',
    ],
  ])('never quotes what it holds: %j', (text, expected) => {
    let message = '';
    try {
      configLayer({ ...fetched, text });
    } catch (error) {
      expect(error).toBeInstanceOf(RepoConfigError);
      message = (error as Error).message;
    }
    expect(message).toBe(expected);
    expect(message).not.toContain('correct');
  });

  it("still quotes the repository's own file, which its writers see anyway", () => {
    expect(() =>
      configLayer({ name: '.github/frognano.yml', text: `max_steps: ${secret}\n` }),
    ).toThrow(`.github/frognano.yml: max_steps must be a positive integer (got "${secret}")`);
  });
});

describe('resolveRepoConfig', () => {
  it("puts the repository's file on top of the base it is given, and gives the base that file", async () => {
    const seen: (string | undefined)[] = [];
    const resolved = await resolveRepoConfig(tree('test: make test\n'), async (own) => {
      seen.push(own);
      return [{ ...org, text: 'test: make check\nattempts: 3\n' }];
    });
    expect(seen).toEqual(['test: make test\n']);
    expect(resolved.config).toMatchObject({ test: 'make test', attempts: 3 });
    expect(resolved.files).toEqual([org.name, '.github/frognano.yml']);
  });

  it('without a base reads only the local file and follows no _extends', async () => {
    const resolved = await resolveRepoConfig(tree('_extends: shared\nmax_steps: 9\n'), undefined);
    expect(resolved.config.max_steps).toBe(9);
    expect(resolved.files).toEqual(['.github/frognano.yml']);
    expect(resolved.config).not.toHaveProperty('_extends');
  });

  it('checks the local file before asking the base', async () => {
    let asked = false;
    await expect(
      resolveRepoConfig(tree('max_steps: lots\n'), async () => {
        asked = true;
        return [];
      }),
    ).rejects.toThrow('.github/frognano.yml: max_steps must be a positive integer (got "lots")');
    expect(asked).toBe(false);
  });
});
