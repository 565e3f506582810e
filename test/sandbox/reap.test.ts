import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE, LABEL_RUN } from '../../src/sandbox/docker-sandbox.js';
import { reap } from '../../src/sandbox/reap.js';
import { SNAPSHOT_LABEL, SNAPSHOT_REPOSITORY } from '../../src/sandbox/snapshot-cache.js';
import { RUN_MARKER } from '../../src/runner/workspace.js';
import {
  describeDocker,
  ensureSandboxImage,
  labelledContainers,
  testRunId,
} from '../support/docker-engine.js';

const root = mkdtempSync(path.join(tmpdir(), 'reap-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function runDir(workRoot: string, name: string, marker: string | undefined): string {
  const dir = path.join(workRoot, name);
  mkdirSync(path.join(dir, 'tree'), { recursive: true });
  writeFileSync(path.join(dir, 'tree', 'f.txt'), 'x');
  if (marker !== undefined) writeFileSync(path.join(dir, RUN_MARKER), marker);
  return dir;
}

describe('reap of work directories', () => {
  it('removes dead runs, keeps live ones and anything that is not provably ours', async () => {
    const workRoot = path.join(root, 'runs');
    const dead = runDir(workRoot, 'dead-1', JSON.stringify({ runId: 'dead-1', pid: 1 }));
    const live = runDir(workRoot, 'live-1', JSON.stringify({ runId: 'live-1', pid: 1 }));
    const foreign = runDir(workRoot, 'not-ours', undefined);
    const copied = runDir(workRoot, 'copied', JSON.stringify({ runId: 'elsewhere' }));
    const broken = runDir(workRoot, 'broken', '{');
    writeFileSync(path.join(workRoot, 'plain-file'), 'x');
    const result = await reap(undefined, { liveRunIds: ['live-1'], workRoot });
    expect(result).toEqual({ containers: 0, images: 0, workDirs: 1 });
    expect(existsSync(dead)).toBe(false);
    for (const kept of [live, foreign, copied, broken]) expect(existsSync(kept)).toBe(true);
  });

  it('is fine with a work root that does not exist yet', async () => {
    expect(await reap(undefined, { liveRunIds: [], workRoot: path.join(root, 'missing') })).toEqual(
      {
        containers: 0,
        images: 0,
        workDirs: 0,
      },
    );
  });
});

describeDocker('reap against the Docker engine', () => {
  const docker = connectDocker();

  it('removes containers of dead runs and untagged snapshot images, and keeps the live run', async () => {
    await ensureSandboxImage();
    const deadId = testRunId('reap-dead');
    const liveId = testRunId('reap-live');
    const make = (runId: string) =>
      docker.createContainer({
        Image: DEFAULT_SANDBOX_IMAGE,
        Cmd: ['true'],
        Labels: { [LABEL_RUN]: runId },
      });
    const [dead, live] = await Promise.all([make(deadId), make(liveId)]);
    // Two commits to one snapshot tag: the first becomes an untagged ("dangling") snapshot.
    const tag = `reap-test-${Date.now()}`;
    const commit = async () =>
      (
        (await dead.commit({
          _query: { container: dead.id, repo: SNAPSHOT_REPOSITORY, tag },
          _body: { Labels: { [SNAPSHOT_LABEL]: '1', [LABEL_RUN]: '' } },
        })) as { Id: string }
      ).Id;
    const oldImage = await commit();
    const newImage = await commit();
    expect(oldImage).not.toBe(newImage);
    try {
      // Other test files run their own containers on this engine right now: only the dead
      // run of this test may be reaped, so every other run counts as live.
      const others = await docker.listContainers({ all: true, filters: { label: [LABEL_RUN] } });
      const running = others.map((c) => c.Labels[LABEL_RUN] ?? '').filter((id) => id !== deadId);
      const result = await reap(docker, {
        liveRunIds: [liveId, ...running],
        workRoot: path.join(root, 'docker-runs'),
        snapshotCap: Number.MAX_SAFE_INTEGER,
      });
      expect(result.containers).toBeGreaterThanOrEqual(1);
      expect(result.images).toBeGreaterThanOrEqual(1);
      expect(await labelledContainers(deadId)).toEqual([]);
      expect(await labelledContainers(liveId)).toEqual([live.id]);
      await expect(docker.getImage(oldImage).inspect()).rejects.toMatchObject({ statusCode: 404 });
      expect((await docker.getImage(newImage).inspect()).Id).toBe(newImage);
    } finally {
      await live.remove({ force: true }).catch(() => undefined);
      await dead.remove({ force: true }).catch(() => undefined);
      await docker
        .getImage(`${SNAPSHOT_REPOSITORY}:${tag}`)
        .remove()
        .catch(() => undefined);
      await docker
        .getImage(oldImage)
        .remove({ force: true })
        .catch(() => undefined);
    }
  });
});
