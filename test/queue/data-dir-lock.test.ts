import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dataDirOwner, lockDataDir } from '../../src/queue/data-dir-lock.js';
import { instanceId, INSTANCE_ID_FILE } from '../../src/instance-id.js';

let dir: string;
const children: ChildProcess[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'frognano-lock-'));
});
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function holdInChild(mode: string, halves: string[]): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, 'lock-holder-child.ts'), dir, mode, ...halves],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      if (c.toString().includes('locked')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`lock holder exited with ${code}`)));
  });
  return child;
}

describe('instanceId', () => {
  it('is created once per data directory and stays the same', () => {
    const id = instanceId(dir);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(instanceId(dir)).toBe(id);
    expect(readFileSync(join(dir, INSTANCE_ID_FILE), 'utf8').trim()).toBe(id);
    const other = mkdtempSync(join(tmpdir(), 'frognano-lock-other-'));
    try {
      expect(instanceId(other)).not.toBe(id);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('refuses a damaged id file with one line', () => {
    writeFileSync(join(dir, INSTANCE_ID_FILE), 'not an id\n');
    expect(() => instanceId(dir)).toThrow(/does not hold an instance id: delete the file/);
  });
});

describe('lockDataDir', () => {
  it('refuses a second owner of a half held by a live process, naming it', async () => {
    const child = await holdInChild('start', ['intake', 'worker']);
    expect(() => lockDataDir(dir, ['worker'], 'worker')).toThrow(
      new RegExp(
        `the data directory .* is in use by frognano start \\(pid ${child.pid} on .*\\) for its runs: stop that process first, or give this one its own FROGNANO_DATA_DIR`,
      ),
    );
    expect(() => lockDataDir(dir, ['intake'], 'serve')).toThrow(/for its webhooks/);
    expect(dataDirOwner(dir, 'intake')).toMatchObject({
      mode: 'start',
      pid: child.pid,
      instanceId: instanceId(dir),
    });
  });

  it('lets serve and worker share a directory, not two of one kind', async () => {
    await holdInChild('serve', ['intake']);
    const worker = lockDataDir(dir, ['worker'], 'worker');
    try {
      expect(() => lockDataDir(dir, ['worker'], 'worker')).toThrow(/in use by frognano worker/);
      expect(() => lockDataDir(dir, ['intake', 'worker'], 'start')).toThrow(
        /in use by frognano serve/,
      );
    } finally {
      worker.release();
    }
    // The failed `start` took nothing: the worker half is free again.
    lockDataDir(dir, ['worker'], 'worker').release();
  });

  it('takes over the lock of an owner that died without releasing it', async () => {
    const child = await holdInChild('start', ['intake', 'worker']);
    const exited = new Promise((r) => child.on('exit', r));
    child.kill('SIGKILL');
    await exited;
    expect(dataDirOwner(dir, 'worker')).toBeUndefined();
    const lock = lockDataDir(dir, ['intake', 'worker'], 'start');
    expect(dataDirOwner(dir, 'worker')).toMatchObject({ pid: process.pid, mode: 'start' });
    lock.release();
    expect(dataDirOwner(dir, 'worker')).toBeUndefined();
  });

  it('is exclusive within one process too, and released on release()', () => {
    const first = lockDataDir(dir, ['intake'], 'serve');
    expect(() => lockDataDir(dir, ['intake'], 'serve')).toThrow(/in use by frognano serve/);
    first.release();
    lockDataDir(dir, ['intake'], 'serve').release();
  });
});
