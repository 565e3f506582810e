// The CLI as a user installs it: `npm pack` of this checkout, installed into a temporary global
// prefix (`npm install -g --prefix`), run from a directory that has nothing of the checkout.
// Only what `files` in package.json ships and the `dependencies` (no devDependencies) are there.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const work = mkdtempSync(path.join(tmpdir(), 'frognano-install-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      {
        cwd,
        // npm's own settings (cache, registry) stay; nothing of the checkout's PATH does.
        env: { ...process.env, PATH: path.dirname(process.execPath) + ':/usr/bin:/bin' },
        timeout: 1_200_000,
        maxBuffer: 16 << 20,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe('the packed CLI', () => {
  it('installs with npm install -g and runs from any directory', async () => {
    const npm = path.join(path.dirname(process.execPath), 'npm');
    const packed = await run(npm, ['pack', '--pack-destination', work], path.resolve('.'));
    expect(packed.code, packed.stderr).toBe(0);
    const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
    expect(tarball).toBeDefined();

    const prefix = path.join(work, 'prefix');
    // From npm's cache where it can (this checkout's `npm ci` filled it), the registry otherwise.
    const installed = await run(
      npm,
      [
        'install',
        '--global',
        '--prefix',
        prefix,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        path.join(work, tarball!),
      ],
      work,
    );
    expect(installed.code, installed.stderr).toBe(0);
    const shipped = path.join(prefix, 'lib', 'node_modules', 'frognano-bot');
    // Devdependencies are not installed: the CLI must not need them.
    expect(readdirSync(path.join(shipped, 'node_modules'))).not.toContain('vitest');
    expect(readdirSync(shipped)).not.toContain('test');

    const elsewhere = path.join(work, 'my-project');
    mkdirSync(path.join(elsewhere, '.github'), { recursive: true });
    const frognano = path.join(prefix, 'bin', 'frognano');
    const version = await run(frognano, ['--version'], elsewhere);
    const pkg = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    expect(version, version.stderr).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });

    // `config validate` reads the current directory's file, as README says.
    const missing = await run(frognano, ['config', 'validate'], elsewhere);
    expect(missing).toMatchObject({ code: 1 });
    expect(missing.stdout).toContain('.github/frognano.yml: not found');
    writeFileSync(path.join(elsewhere, '.github', 'frognano.yml'), 'test: python3 -m pytest\n');
    const valid = await run(frognano, ['config', 'validate'], elsewhere);
    expect(valid, valid.stderr).toMatchObject({ code: 0, stdout: 'valid\n' });
  }, 1_500_000);
});
