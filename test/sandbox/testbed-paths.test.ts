// The path layer that shows the local sandbox's copy as /testbed (as the Docker sandbox does).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLocalSandbox } from '../../src/sandbox/local-sandbox.js';
import { withTestbedPaths } from '../../src/sandbox/testbed-paths.js';
import type { Sandbox } from '../../src/leaf/sandbox.js';

let source: string;
let sandbox: Sandbox;

beforeEach(async () => {
  source = await mkdtemp(path.join(tmpdir(), 'frognano-testbed-'));
  await writeFile(path.join(source, 'a.py'), 'print(1)\n');
  sandbox = withTestbedPaths(await createLocalSandbox({ sourceDir: source }));
});

afterEach(async () => {
  await sandbox.dispose();
  await rm(source, { recursive: true, force: true });
});

describe('withTestbedPaths', () => {
  it('maps /testbed as a whole path segment in commands, and the copy back in output', async () => {
    expect(sandbox.workdir).toBe('/testbed');
    const r = await sandbox.exec(
      'cat /testbed/a.py; echo "/testbed2 x/testbed /testbed"; pwd; cd /testbed/ && pwd',
    );
    expect(r.stdout.toString()).toBe(
      'print(1)\n/testbed2 x/testbed /testbed\n/testbed\n/testbed\n',
    );
    const cwd = await sandbox.exec('pwd', { cwd: '/testbed' });
    expect(cwd.stdout.toString()).toBe('/testbed\n');
  });

  it('maps file paths, glob patterns and the paths in Python errors', async () => {
    expect((await sandbox.readFile('/testbed/a.py')).realPath).toBe('/testbed/a.py');
    expect(await sandbox.glob('/testbed/*.py')).toEqual([
      { path: '/testbed/a.py', realPath: '/testbed/a.py' },
    ]);
    await expect(sandbox.readFile('/testbed/nope.py')).rejects.toMatchObject({
      pythonType: 'FileNotFoundError',
      message: "[Errno 2] No such file or directory: '/testbed/nope.py'",
    });
  });
});
