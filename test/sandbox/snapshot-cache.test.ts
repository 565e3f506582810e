import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  hashDependencyManifests,
  refreshTreeCommand,
  setupInputs,
  snapshotKey,
  snapshotLabels,
  snapshotTag,
  snapshotsToEvict,
} from '../../src/sandbox/snapshot-cache.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'snap-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

describe('hashDependencyManifests', () => {
  const base = {
    'requirements.txt': 'requests==2.32\n',
    'requirements-dev.txt': 'pytest\n',
    'pkg/sub/pyproject.toml': '[project]\n',
    'web/package.json': '{}',
    'web/package-lock.json': '{}',
    'src/app.py': 'print(1)\n',
    'node_modules/dep/package.json': '{"name":"dep"}',
    '.venv/lib/pyproject.toml': '',
  };

  it('finds manifests at any depth, skipping dependency directories', async () => {
    const digest = await hashDependencyManifests(tree(base));
    expect(digest.files).toEqual([
      'pkg/sub/pyproject.toml',
      'requirements-dev.txt',
      'requirements.txt',
      'web/package-lock.json',
      'web/package.json',
    ]);
    expect(digest.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('ignores source edits but changes with any manifest edit, rename or addition', async () => {
    const h = async (files: Record<string, string>) =>
      (await hashDependencyManifests(tree(files))).hash;
    const original = await h(base);
    expect(await h({ ...base, 'src/app.py': 'print(2)\n', 'src/new.py': '' })).toBe(original);
    expect(await h({ ...base, 'requirements.txt': 'requests==2.33\n' })).not.toBe(original);
    expect(await h({ ...base, 'poetry.lock': '' })).not.toBe(original);
    const { 'web/package.json': moved, ...rest } = base;
    expect(await h({ ...rest, 'app/package.json': moved })).not.toBe(original);
  });

  it('includes extra files named by the setup commands, and does not follow symlinks', async () => {
    const dir = tree({ 'scripts/setup.sh': 'pip install .\n' });
    const before = await hashDependencyManifests(dir, ['scripts/setup.sh', '../outside.txt']);
    expect(before.files).toEqual(['scripts/setup.sh']);
    writeFileSync(path.join(dir, 'scripts/setup.sh'), 'pip install -e .\n');
    expect((await hashDependencyManifests(dir, ['scripts/setup.sh'])).hash).not.toBe(before.hash);
    const linked = tree({});
    symlinkSync('/etc/hostname', path.join(linked, 'requirements.txt'));
    const digest = await hashDependencyManifests(linked);
    expect(digest.files).toEqual([]);
  });
});

describe('setupInputs', () => {
  it('picks the tree files a setup command names', () => {
    expect(
      setupInputs([
        'bash scripts/bootstrap.sh && pip install -r ci/requirements.txt',
        'python3 -m venv /opt/venv; ./tools/gen.py --out=build/x.json',
        'pip install --no-index --find-links https://example.com/simple .',
      ]),
    ).toEqual(['build/x.json', 'ci/requirements.txt', 'scripts/bootstrap.sh', 'tools/gen.py']);
  });
});

describe('snapshotKey', () => {
  const input = {
    repo: 'o/r',
    baseImageId: 'sha256:aaa',
    setup: ['pip install .'],
    network: 'none' as const,
    manifestsHash: 'm1',
  };
  it('is stable and changes with each input', () => {
    const key = snapshotKey(input);
    expect(key).toMatch(/^[0-9a-f]{32}$/);
    expect(snapshotKey({ ...input })).toBe(key);
    const variants = [
      { ...input, baseImageId: 'sha256:bbb' },
      { ...input, setup: ['pip install -e .'] },
      { ...input, setup: ['pip install', '.'] },
      { ...input, network: 'open' as const },
      { ...input, manifestsHash: 'm2' },
      { ...input, repo: 'o/other' },
      { ...input, treeCommit: 'abc' },
    ];
    const keys = new Set([key, ...variants.map(snapshotKey)]);
    expect(keys.size).toBe(variants.length + 1);
    expect(snapshotTag(key)).toBe(`frognano-snapshot:${key}`);
  });

  it('labels snapshots for cleanup and LRU', () => {
    expect(snapshotLabels({ repo: 'o/r', key: 'k', now: new Date(0) })).toEqual({
      'frognano.snapshot': '1',
      'frognano.snapshot.repo': 'o/r',
      'frognano.snapshot.key': 'k',
      'frognano.snapshot.last-used': '1970-01-01T00:00:00.000Z',
    });
  });

  it('quotes the work directory in the refresh command', () => {
    expect(refreshTreeCommand("/test'bed")).toContain("cd '/test'\\''bed' && git");
  });
});

describe('snapshotsToEvict', () => {
  const image = (id: string, lastUsed: number, tags = [`frognano-snapshot:${id}`]) => ({
    id,
    tags,
    lastUsed,
  });
  it('takes untagged images, then the least recently used beyond the cap', () => {
    const all = [image('a', 3), image('b', 1), image('c', 5), image('d', 2), image('x', 9, [])];
    expect(snapshotsToEvict(all, 2).map((s) => s.id)).toEqual(['x', 'd', 'b']);
    expect(snapshotsToEvict(all, 10).map((s) => s.id)).toEqual(['x']);
    expect(snapshotsToEvict(all, 0).map((s) => s.id)).toEqual(['x', 'c', 'a', 'd', 'b']);
  });
});
