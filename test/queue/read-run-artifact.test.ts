// A run's files by name: this host's data directory first, then the shared queue; names are
// plain file names or attempt K's folder, never a path that leaves the run.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRunArtifact } from '../../src/queue/read-run-artifact.js';

const dataDir = mkdtempSync(join(tmpdir(), 'run-artifact-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const runId = '6f1c2a9e-0000-4000-8000-000000000001';

describe('readRunArtifact', () => {
  it('reads the local file first, else asks the queue, else undefined', async () => {
    const dir = join(dataDir, 'trajectories', runId, 'attempt-2');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'trajectory.json'), 'local');
    const asked: string[] = [];
    const queue = {
      getArtifact: async (_id: string, name: string) => {
        asked.push(name);
        return name === 'run.json' ? Buffer.from('shared') : undefined;
      },
    };
    const from = { dataDir, queue };
    expect(String(await readRunArtifact(runId, 'attempt-2/trajectory.json', from))).toBe('local');
    expect(String(await readRunArtifact(runId, 'run.json', from))).toBe('shared');
    expect(await readRunArtifact(runId, 'attempt-3/trajectory.json', from)).toBeUndefined();
    expect(asked).toEqual(['run.json', 'attempt-3/trajectory.json']);
  });

  it.each([
    '../run.json',
    'attempt-2/../../x',
    'a/b.json',
    '.hidden',
    'attempt-0/x',
    '/etc/passwd',
  ])('refuses %s', async (name) => {
    await expect(readRunArtifact(runId, name, { dataDir })).rejects.toThrow(/not a run artifact/);
  });
});
