// The disk guard (issue 8 item 1): a sandbox that writes past FROGNANO_SANDBOX_DISK, or an
// engine whose disk falls under FROGNANO_DISK_FLOOR, stops the run with that reason and
// leaves no container. Writers here stay at a few hundred MB: never fill the real disk.
import { execFileSync } from 'node:child_process';
import { linkSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderSummary } from '../../src/github/publishing/render-summary.js';
import { describeResult } from '../../src/github/status/status-comment.js';
import { runPipeline } from '../../src/runner/run.js';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import {
  SandboxLimitExceeded,
  allocatedBytes,
  formatBytes,
  layerBytes,
  startDiskGuard,
} from '../../src/sandbox/disk-guard.js';
import { createDockerSandbox, type DockerSandbox } from '../../src/sandbox/docker-sandbox.js';
import {
  describeDocker,
  ensureSandboxImage,
  labelledContainers,
  removeLabelledContainers,
  testRunId,
} from '../support/docker-engine.js';
import { createPythonRepo } from '../support/python-repo.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
} from '../support/scripted-model-server.js';

const MiB = 1024 * 1024;
const root = mkdtempSync(path.join(tmpdir(), 'disk-guard-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const silent = pino({ level: 'silent' });

describe('allocatedBytes', () => {
  it('counts allocated blocks as du does: a sparse file by what it uses, a hard link once', async () => {
    const dir = mkdtempSync(path.join(root, 'du-'));
    writeFileSync(path.join(dir, 'data'), Buffer.alloc(4 * MiB, 1));
    linkSync(path.join(dir, 'data'), path.join(dir, 'data-link'));
    // 1 GiB apparent size, nothing written.
    execFileSync('truncate', ['-s', '1G', path.join(dir, 'sparse')]);
    const du = Number(execFileSync('du', ['-sk', dir], { encoding: 'utf8' }).split('\t')[0]) * 1024;
    const measured = await allocatedBytes(dir);
    expect(measured).toBeGreaterThanOrEqual(4 * MiB);
    expect(measured).toBeLessThan(5 * MiB);
    expect(measured).toBe(du);
    expect(await layerBytes([dir])).toBe(du);
  });

  it('counts a file linked from two measured directories once, with du or without', async () => {
    const a = mkdtempSync(path.join(root, 'two-a-'));
    const b = mkdtempSync(path.join(root, 'two-b-'));
    writeFileSync(path.join(a, 'data'), Buffer.alloc(2 * MiB, 1));
    linkSync(path.join(a, 'data'), path.join(b, 'data'));
    const seen = new Set<string>();
    const walked = (await allocatedBytes(a, seen)) + (await allocatedBytes(b, seen));
    expect(walked).toBeLessThan(3 * MiB);
    expect(await layerBytes([a, b])).toBe(walked);
  });

  it('is 0 for a directory that is gone', async () => {
    expect(await allocatedBytes(path.join(root, 'missing'))).toBe(0);
  });
});

describe('formatBytes', () => {
  it('writes limits as FROGNANO_SANDBOX_DISK spells them', () => {
    expect(formatBytes(10 * 1024 * MiB)).toBe('10 GB');
    expect(formatBytes(64 * MiB)).toBe('64 MB');
    expect(formatBytes(1536 * MiB)).toBe('1.5 GB');
  });
});

describeDocker('the disk guard against the Docker engine', () => {
  const docker = connectDocker();
  const runId = testRunId('disk');
  beforeAll(async () => {
    await ensureSandboxImage();
  });
  afterAll(async () => {
    await removeLabelledContainers(runId, docker);
  });

  const small = (limits: { diskBytes?: number; diskFloorBytes?: number }) =>
    createDockerSandbox({ runId, docker, logger: silent, diskCheckMs: 500, limits });

  it('stops a writer past the limit: the command fails with the reason, the container is killed, later calls fail alike', async () => {
    const sandbox = await small({ diskBytes: 64 * MiB });
    try {
      const error = await sandbox
        .exec('dd if=/dev/zero of=/testbed/big bs=1M count=300 status=none; echo survived', {
          timeoutMs: 60_000,
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(SandboxLimitExceeded);
      expect((error as SandboxLimitExceeded).limit).toBe('disk');
      expect((error as Error).message).toMatch(/^the sandbox wrote more than 64 MB \(/);
      expect(sandbox.limitExceeded).toBe(error);
      const info = await docker.getContainer(sandbox.containerId).inspect();
      expect(info.State.Running).toBe(false);
      await expect(sandbox.readFile('/testbed/big')).rejects.toBe(error);
    } finally {
      await sandbox.dispose();
    }
    await expect(docker.getContainer(sandbox.containerId).inspect()).rejects.toMatchObject({
      statusCode: 404,
    });
  }, 90_000);

  it('fails a command that passed the limit and ended before the next measurement', async () => {
    // fallocate takes a few milliseconds: no periodic measurement falls inside the command,
    // so only the look every command gets at its end can tell that it passed the limit.
    const sandbox = await small({ diskBytes: 64 * MiB });
    try {
      const error = await sandbox
        .exec('fallocate -l 200M /testbed/big && echo ended', { timeoutMs: 60_000 })
        .then(
          (result) => result,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(SandboxLimitExceeded);
      expect((error as Error).message).toMatch(/^the sandbox wrote more than 64 MB \(/);
      await expect(sandbox.exec('true')).rejects.toBe(error);
    } finally {
      await sandbox.dispose();
    }
  }, 90_000);

  it('counts /tmp in the look at the end of a command too', async () => {
    const sandbox = await small({ diskBytes: 32 * MiB });
    try {
      await expect(
        sandbox.exec('fallocate -l 100M /tmp/big && echo ended', { timeoutMs: 60_000 }),
      ).rejects.toThrow(/^the sandbox wrote more than 32 MB/);
    } finally {
      await sandbox.dispose();
    }
  }, 90_000);

  it('counts /tmp (a tmpfs, not in the writable layer) towards the limit', async () => {
    const sandbox = await small({ diskBytes: 32 * MiB });
    try {
      await expect(
        sandbox.exec('dd if=/dev/zero of=/tmp/big bs=1M count=200 status=none; sleep 20', {
          timeoutMs: 60_000,
        }),
      ).rejects.toThrow(/^the sandbox wrote more than 32 MB/);
    } finally {
      await sandbox.dispose();
    }
  }, 90_000);

  it('stops the run when the engine has less free disk than the floor', async () => {
    // A floor above any real disk: the first measurement trips it, nothing need be written.
    let sandbox: DockerSandbox | undefined;
    try {
      // It may trip while the sandbox starts (then creation fails with it) or in the command.
      const error = await small({ diskFloorBytes: 2 ** 52 })
        .then((created) => {
          sandbox = created;
          return created.exec('sleep 30', { timeoutMs: 60_000 });
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(SandboxLimitExceeded);
      expect((error as SandboxLimitExceeded).limit).toBe('disk_floor');
      expect((error as Error).message).toMatch(
        /^the Docker engine's disk has less than 4194304 GB free \(\d+(\.\d)? GB left\); free space on it or lower FROGNANO_DISK_FLOOR$/,
      );
    } finally {
      await sandbox?.dispose();
    }
    expect(await labelledContainers(runId, docker)).toEqual([]);
  }, 90_000);

  it('settles a command through the engine as on the host: nothing new, no trip; past the limit, a trip', async () => {
    const sandbox = await small({});
    const guards: Awaited<ReturnType<typeof startDiskGuard>>[] = [];
    const trips: Record<'auto' | 'engine', SandboxLimitExceeded[]> = { auto: [], engine: [] };
    try {
      const container = docker.getContainer(sandbox.containerId);
      for (const measureVia of ['auto', 'engine'] as const) {
        guards.push(
          await startDiskGuard({
            docker,
            container,
            limitBytes: 64 * MiB,
            floorBytes: 0,
            intervalMs: 60_000,
            execUser: '1000:1000',
            log: silent,
            runId,
            measureVia,
            onTrip: (reason) => trips[measureVia].push(reason),
          }),
        );
      }
      await Promise.all(guards.map((g) => g.measure()));
      await Promise.all(guards.map((g) => g.settle()));
      expect(trips).toEqual({ auto: [], engine: [] });
      await sandbox.exec('fallocate -l 100M /testbed/big', { timeoutMs: 60_000 });
      await Promise.all(guards.map((g) => g.settle()));
      for (const kind of ['auto', 'engine'] as const) {
        expect(trips[kind]).toHaveLength(1);
        expect(trips[kind][0]!.message).toMatch(/^the sandbox wrote more than 64 MB \(/);
      }
    } finally {
      for (const g of guards) g.stop();
      await sandbox.dispose();
    }
  }, 90_000);

  it('measures the same through the engine (no access to the layer) as on the host', async () => {
    const sandbox = await small({});
    const guards: Awaited<ReturnType<typeof startDiskGuard>>[] = [];
    try {
      const wrote = await sandbox.exec(
        'dd if=/dev/zero of=/testbed/f bs=1M count=40 status=none && dd if=/dev/zero of=/tmp/t bs=1M count=8 status=none && sync',
        { timeoutMs: 60_000 },
      );
      expect(wrote.exitCode).toBe(0);
      const container = docker.getContainer(sandbox.containerId);
      const guard = (measureVia: 'auto' | 'engine') =>
        startDiskGuard({
          docker,
          container,
          limitBytes: 1024 * MiB,
          floorBytes: 0,
          intervalMs: 60_000,
          execUser: '1000:1000',
          log: silent,
          runId,
          measureVia,
          onTrip: () => undefined,
        });
      guards.push(await guard('engine'), await guard('auto'));
      const [viaEngine, viaAuto] = await Promise.all(guards.map((g) => g.measure()));
      expect(viaEngine!.via).toBe('engine');
      for (const usage of [viaEngine!, viaAuto!]) {
        expect(usage.usedBytes).toBeGreaterThanOrEqual(48 * MiB);
        expect(usage.usedBytes).toBeLessThan(64 * MiB);
        expect(usage.freeBytes).toBeGreaterThan(0);
      }
    } finally {
      for (const g of guards) g.stop();
      await sandbox.dispose();
    }
  }, 90_000);

  it('stops the run when many empty files (no blocks, only inodes) take the engine disk under its inode floor', async () => {
    const sandbox = await small({});
    const guards: Awaited<ReturnType<typeof startDiskGuard>>[] = [];
    try {
      const container = docker.getContainer(sandbox.containerId);
      const trips: Record<string, SandboxLimitExceeded[]> = { auto: [], engine: [] };
      const guard = async (measureVia: 'auto' | 'engine') => {
        // The floor sits 30,000 inodes under what the engine's disk has free now.
        const probe = await startDiskGuard({
          docker,
          container,
          limitBytes: 1024 * MiB,
          floorBytes: 0,
          intervalMs: 60_000,
          execUser: '1000:1000',
          log: silent,
          runId,
          measureVia,
          onTrip: () => undefined,
        });
        const now = await probe.measure();
        probe.stop();
        expect(now.freeInodes).toBeGreaterThan(0);
        const g = await startDiskGuard({
          docker,
          container,
          limitBytes: 1024 * MiB,
          floorBytes: 0,
          floorInodes: now.freeInodes! - 30_000,
          intervalMs: 60_000,
          execUser: '1000:1000',
          log: silent,
          runId,
          measureVia,
          onTrip: (reason) => trips[measureVia]!.push(reason),
        });
        guards.push(g);
        return g;
      };
      const guarded = [await guard('auto'), await guard('engine')];
      const made = await sandbox.exec(
        'mkdir /testbed/many && cd /testbed/many && seq 1 60000 | xargs touch && du -sk . && sync',
        { timeoutMs: 120_000 },
      );
      expect(made.exitCode).toBe(0);
      // 60,000 files and almost no blocks: far under the 1 GB byte limit.
      expect(Number(made.stdout.toString().split('\t')[0])).toBeLessThan(8 * 1024);
      await Promise.all(guarded.map((g) => g.measure()));
      for (const via of ['auto', 'engine']) {
        expect(trips[via], via).toHaveLength(1);
        expect(trips[via]![0]!.limit).toBe('disk_floor');
        expect(trips[via]![0]!.message).toMatch(
          /^the Docker engine's disk has fewer than \d+ free inodes \(\d+ left\): the sandbox made too many files; remove files on that disk$/,
        );
      }
    } finally {
      for (const g of guards) g.stop();
      await sandbox.dispose();
    }
  }, 180_000);

  it('falls back to the guard where the storage driver has no quota (overlay2 off xfs)', async () => {
    const info = (await docker.info()) as { Driver?: string; DriverStatus?: [string, string][] };
    const backing = info.DriverStatus?.find(([key]) => key === 'Backing Filesystem')?.[1];
    const sandbox: DockerSandbox = await small({ diskBytes: 64 * MiB });
    try {
      const config = await docker.getContainer(sandbox.containerId).inspect();
      const quota = (config.HostConfig as { StorageOpt?: Record<string, string> | null })
        .StorageOpt;
      if (info.Driver === 'overlay2' && backing !== 'xfs') expect(quota ?? {}).toEqual({});
      else expect(quota).toEqual({ size: String(64 * MiB) });
      expect((await sandbox.exec('echo ok')).stdout.toString()).toBe('ok\n');
    } finally {
      await sandbox.dispose();
    }
  }, 60_000);

  it('a run whose agent fills the disk ends sandbox_limit with the reason in summary.md and the status comment, and leaves no container', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'run-')));
    const server = await startScriptedModelServer({
      script: [
        toolCall('Bash', {
          command: 'dd if=/dev/zero of=/testbed/fill bs=1M count=300 status=none; echo wrote',
        }),
        finalAnswer('Done.'),
      ],
    });
    const id = `${runId}-run`;
    try {
      const result = await runPipeline(
        {
          runId: id,
          instanceId: 'fixture/calc#1',
          repo: repo.dir,
          issueText: 'Fill the disk.',
          sandbox: 'docker',
          outDir: path.join(root, 'out-run'),
        },
        {
          modelConfig: { baseUrl: server.baseUrl, maxRetries: 0 },
          docker,
          dataDir: path.join(root, 'data'),
          logger: silent,
          handleSignals: false,
          // The limit as an operator sets it: FROGNANO_SANDBOX_DISK in the environment.
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            FROGNANO_SANDBOX_DISK: '64m',
            FROGNANO_SANDBOX_MEMORY: '512m',
            FROGNANO_SANDBOX_PIDS: '256',
          },
        },
      );
      expect(result.outcome).toBe('sandbox_limit');
      expect(result.error).toMatch(/^the sandbox wrote more than 64 MB \(/);
      expect(renderSummary(result)).toContain(
        `- Outcome: sandbox_limit (\`the sandbox wrote more than 64 MB`,
      );
      const status = describeResult(result);
      expect(status).toMatchObject({ kind: 'failed' });
      expect((status as { reason: string }).reason).toContain(
        'the run was stopped: the sandbox wrote more than 64 MB',
      );
      expect(await labelledContainers(id, docker)).toEqual([]);
    } finally {
      await server.close();
      await removeLabelledContainers(id, docker);
    }
  }, 180_000);
});
