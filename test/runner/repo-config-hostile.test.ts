// Hostile `.github/frognano.yml` files: each gets one clear line, quickly, and no run.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RepoConfigError, loadRepoConfig } from '../../src/runner/repo-config.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tree(config: string | Buffer): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'repo-config-hostile-'));
  dirs.push(dir);
  mkdirSync(path.join(dir, '.github'));
  writeFileSync(path.join(dir, '.github/frognano.yml'), config);
  return dir;
}

async function errorOf(config: string | Buffer): Promise<string> {
  const err = await loadRepoConfig(tree(config)).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RepoConfigError);
  const message = (err as Error).message;
  expect(message).not.toContain('\n');
  return message;
}

/** The billion laughs: nine levels of nine aliases each (9^9 strings once expanded). */
function aliasBomb(): string {
  const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i < 9; i++) {
    const name = String.fromCharCode(97 + i);
    const prev = `*${String.fromCharCode(96 + i)}`;
    lines.push(`${name}: &${name} [${Array(9).fill(prev).join(',')}]`);
  }
  return `${lines.join('\n')}\n`;
}

describe('hostile config files', () => {
  it('refuses a YAML bomb of aliases with one line', async () => {
    expect(await errorOf(aliasBomb())).toBe(
      '.github/frognano.yml: uses YAML aliases (*name) to expand to too much data, which is how a YAML bomb works: write the values out',
    );
  });

  it('refuses deep nesting, flow and block, before the parser recurses', async () => {
    expect(await errorOf(`setup: ${'['.repeat(5000)}${']'.repeat(5000)}\n`)).toBe(
      '.github/frognano.yml: nests values more than 16 levels deep at line 1, column 23 (a frognano config needs 3)',
    );
    const block = ['setup:', ...Array.from({ length: 300 }, (_, i) => `${' '.repeat(i + 2)}- `)];
    expect(await errorOf(block.join('\n'))).toBe(
      '.github/frognano.yml: nests values more than 16 levels deep at line 17, column 18 (a frognano config needs 3)',
    );
    expect(await errorOf(`setup:\n  ${'- '.repeat(20_000)}x\n`)).toBe(
      '.github/frognano.yml: nests values more than 16 levels deep at line 2, column 33 (a frognano config needs 3)',
    );
  });

  it('refuses a binary file', async () => {
    expect(await errorOf(Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x00, 0x00]))).toBe(
      '.github/frognano.yml: is a binary file, not YAML text',
    );
    expect(await errorOf(Buffer.from('test: "\xff\xfe"', 'latin1'))).toBe(
      '.github/frognano.yml: is a binary file, not YAML text',
    );
  });

  it('accepts a few aliases and nesting a config really uses', async () => {
    const config = await loadRepoConfig(
      tree('setup: &s\n  - make deps\ntest: make test\nblocked_paths: ["docs/**"]\n'),
    );
    expect(config.setup).toEqual(['make deps']);
  });
});
