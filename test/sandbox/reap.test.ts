import { instanceId } from '../../src/instance-id.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE, LABEL_RUN } from '../../src/sandbox/docker-sandbox.js';
import {
  LABEL_OWNER,
  LABEL_OWNER_PID,
  LABEL_OWNER_PROCESS,
  ownerLabels,
  sandboxOwner,
  type SandboxOwner,
} from '../../src/sandbox/owner.js';
import { reap } from '../../src/sandbox/reap.js';
import {
  ATTEMPT_IMAGE_REPOSITORY,
  LABEL_ATTEMPT_BASE,
  attemptBaseImage,
} from '../../src/sandbox/attempt-base-image.js';
import { ATTEMPT_HEADER } from '../../src/runner/phases/connect-model.js';
import { SNAPSHOT_LABEL, SNAPSHOT_REPOSITORY } from '../../src/sandbox/snapshot-cache.js';
import { RUN_MARKER } from '../../src/sandbox/run-marker.js';
import { LABEL_SETUP_NETWORK, SETUP_NETWORK_PREFIX } from '../../src/sandbox/setup-network.js';
import {
  describeDocker,
  ensureSandboxImage,
  labelledContainers,
  removeLabelledContainers,
  testRunId,
} from '../support/docker-engine.js';
import { ISSUE_TEXT, createPythonRepo } from '../support/python-repo.js';
import {
  finalAnswer,
  startScriptedModelServer,
  type RecordedRequest,
  type ResponseSpec,
  type ScriptStep,
} from '../support/scripted-model-server.js';

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
    expect(result).toEqual({ containers: 0, images: 0, attemptImages: 0, workDirs: 1 });
    expect(existsSync(dead)).toBe(false);
    for (const kept of [live, foreign, copied, broken]) expect(existsSync(kept)).toBe(true);
  });

  it('is fine with a work root that does not exist yet', async () => {
    expect(await reap(undefined, { liveRunIds: [], workRoot: path.join(root, 'missing') })).toEqual(
      {
        containers: 0,
        images: 0,
        attemptImages: 0,
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
    // The dead run's owner never held a lock here (gone); the live run is this process's own.
    const deadOwner = { instance: instanceId(root), process: randomUUID() };
    const make = (runId: string, owner: SandboxOwner) =>
      docker.createContainer({
        Image: DEFAULT_SANDBOX_IMAGE,
        Cmd: ['true'],
        Labels: { [LABEL_RUN]: runId, ...ownerLabels(owner) },
      });
    const [dead, live] = await Promise.all([
      make(deadId, deadOwner),
      make(liveId, sandboxOwner(root)),
    ]);
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

describeDocker('reap of setup networks', () => {
  const docker = connectDocker();
  it('removes the setup network of a dead run, keeps a live run’s and another instance’s', async () => {
    const dataDir = mkdtempSync(path.join(root, 'data-net-'));
    const [deadId, liveId] = [testRunId('reap-net-dead'), testRunId('reap-net-live')];
    const deadOwner = { instance: instanceId(dataDir), process: randomUUID() };
    const foreign = { instance: randomUUID(), process: randomUUID() };
    const make = (runId: string, owner: SandboxOwner) =>
      docker.createNetwork({
        Name: `${SETUP_NETWORK_PREFIX}${runId}-${randomUUID().slice(0, 8)}`,
        Internal: true,
        Labels: { [LABEL_RUN]: runId, [LABEL_SETUP_NETWORK]: '1', ...ownerLabels(owner) },
      });
    const dead = await make(deadId, deadOwner);
    const live = await make(liveId, sandboxOwner(dataDir));
    const other = await make(deadId, foreign);
    try {
      const result = await reap(docker, {
        liveRunIds: [liveId],
        workRoot: path.join(dataDir, 'runs'),
        snapshotCap: Number.MAX_SAFE_INTEGER,
      });
      expect(result.networks).toBe(1);
      await expect(dead.inspect()).rejects.toMatchObject({ statusCode: 404 });
      expect(await live.inspect()).toBeTruthy();
      expect(await other.inspect()).toBeTruthy();
    } finally {
      for (const n of [dead, live, other]) await n.remove().catch(() => undefined);
    }
  });
});

/** A child process holding the owner lock of `dataDir` until killed. */
async function ownerProcess(
  dataDir: string,
): Promise<{ owner: SandboxOwner; kill: () => Promise<void> }> {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(import.meta.dirname, 'helpers', 'owner-process.ts'), dataDir],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const owner = await new Promise<SandboxOwner>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (out.includes('\n')) resolve(JSON.parse(out) as SandboxOwner);
    });
    child.once('exit', (code) => reject(new Error(`owner process exited (${code})`)));
  });
  return {
    owner,
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

function markRunDir(workRoot: string, runId: string, owner: string): string {
  return runDir(workRoot, runId, JSON.stringify({ runId, pid: 1, owner }));
}

describe('reap of what dead owner processes left (no engine needed)', () => {
  it('keeps a live process’s work directory and lock, removes a killed one’s', async () => {
    const dataDir = mkdtempSync(path.join(root, 'data-owners-'));
    const [alive, dead] = await Promise.all([ownerProcess(dataDir), ownerProcess(dataDir)]);
    try {
      await dead.kill();
      const workRoot = path.join(dataDir, 'runs');
      const aliveDir = markRunDir(workRoot, 'run-alive', alive.owner.process);
      const deadDir = markRunDir(workRoot, 'run-dead', dead.owner.process);
      const lock = (o: SandboxOwner) => path.join(dataDir, 'owners', `${o.process}.lock`);
      expect(existsSync(lock(dead.owner))).toBe(true);
      const result = await reap(undefined, { liveRunIds: [], workRoot });
      expect(result.workDirs).toBe(1);
      expect(existsSync(aliveDir)).toBe(true);
      expect(existsSync(deadDir)).toBe(false);
      expect(existsSync(lock(alive.owner))).toBe(true);
      expect(existsSync(lock(dead.owner))).toBe(false);
    } finally {
      await alive.kill();
    }
  }, 60_000);
});

describeDocker('reap touches only what its instance owns, and only when the owner is gone', () => {
  const docker = connectDocker();
  const made: string[] = [];
  const kills: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const kill of kills) await kill();
    for (const runId of made) await removeLabelledContainers(runId, docker);
  });

  const container = async (runId: string, labels: Record<string, string>) => {
    made.push(runId);
    return docker.createContainer({
      Image: DEFAULT_SANDBOX_IMAGE,
      Cmd: ['true'],
      Labels: { [LABEL_RUN]: runId, ...labels },
    });
  };
  const exists = async (id: string) =>
    docker
      .getContainer(id)
      .inspect()
      .then(
        () => true,
        (e: { statusCode?: number }) => (e.statusCode === 404 ? false : Promise.reject(e)),
      );
  const reapFrom = (dataDir: string, liveRunIds: string[] = []) =>
    reap(docker, {
      liveRunIds,
      dataDir,
      workRoot: path.join(dataDir, 'runs'),
      snapshotCap: Number.MAX_SAFE_INTEGER,
    });

  it('keeps a living owner process’s container and work directory, reaps both once it is killed, and drops its lock', async () => {
    await ensureSandboxImage();
    const dataDir = mkdtempSync(path.join(root, 'data-a-'));
    const child = await ownerProcess(dataDir);
    kills.push(child.kill);
    expect(child.owner.instance).toBe(instanceId(dataDir));
    const runId = testRunId('reap-owned');
    const box = await container(runId, ownerLabels(child.owner));
    const dir = markRunDir(path.join(dataDir, 'runs'), runId, child.owner.process);
    const lock = path.join(dataDir, 'owners', `${child.owner.process}.lock`);
    expect(existsSync(lock)).toBe(true);

    expect(await reapFrom(dataDir)).toMatchObject({ containers: 0, workDirs: 0, spared: 1 });
    expect(await exists(box.id)).toBe(true);
    expect(existsSync(dir)).toBe(true);

    await child.kill();
    expect(await reapFrom(dataDir)).toMatchObject({ containers: 1, workDirs: 1, spared: 0 });
    expect(await exists(box.id)).toBe(false);
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(lock)).toBe(false);
  }, 60_000);

  it('leaves another instance’s containers alone, even when their owner is dead', async () => {
    await ensureSandboxImage();
    const mine = mkdtempSync(path.join(root, 'data-mine-'));
    const theirs = mkdtempSync(path.join(root, 'data-theirs-'));
    const child = await ownerProcess(theirs);
    kills.push(child.kill);
    const runId = testRunId('reap-theirs');
    const box = await container(runId, ownerLabels(child.owner));
    await child.kill();
    // Dead, but not ours: only its own instance may reap it.
    expect((await reapFrom(mine)).containers).toBe(0);
    expect(await exists(box.id)).toBe(true);
    expect((await reapFrom(theirs)).containers).toBe(1);
    expect(await exists(box.id)).toBe(false);
  }, 60_000);

  it('leaves containers with no owner labels alone', async () => {
    await ensureSandboxImage();
    const dataDir = mkdtempSync(path.join(root, 'data-none-'));
    const box = await container(testRunId('reap-unowned'), {});
    const forged = await container(testRunId('reap-no-process'), {
      [LABEL_OWNER]: instanceId(dataDir),
    });
    expect((await reapFrom(dataDir)).containers).toBe(0);
    expect(await exists(box.id)).toBe(true);
    expect(await exists(forged.id)).toBe(true);
  }, 60_000);

  it('reaps this process’s own container only when its queue says the run ended', async () => {
    await ensureSandboxImage();
    const dataDir = mkdtempSync(path.join(root, 'data-self-'));
    const owner = sandboxOwner(dataDir);
    const [liveId, endedId] = [testRunId('reap-self-live'), testRunId('reap-self-ended')];
    const live = await container(liveId, ownerLabels(owner));
    const ended = await container(endedId, ownerLabels(owner));
    expect((await reapFrom(dataDir, [liveId])).containers).toBe(1);
    expect(await exists(live.id)).toBe(true);
    expect(await exists(ended.id)).toBe(false);
  }, 60_000);

  it('a live frognano solve survives `frognano reap` from its own data directory and from another, and finishes its run', async () => {
    await ensureSandboxImage();
    const work = mkdtempSync(path.join(root, 'solve-'));
    const dataDir = path.join(work, 'data');
    const other = path.join(work, 'other-data');
    const repo = createPythonRepo(work);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const modelReached = new Promise<void>((resolve) => (reached = resolve));
    const held: ScriptStep = async () => {
      reached();
      await released;
      return { content: 'Nothing needed changing.' };
    };
    const model = await startScriptedModelServer({ script: [held, finalAnswer('Done.')] });
    const cli = path.resolve('bin/frognano.js');
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      FROGNANO_MODEL_URL: model.baseUrl,
      LOG_LEVEL: 'silent',
    };
    const solve = spawn(
      process.execPath,
      [cli, 'solve', '--repo', repo.dir, '--issue', ISSUE_TEXT, '--out', path.join(work, 'out')],
      { env: { ...env, FROGNANO_DATA_DIR: dataDir }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    solve.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const solveExit = new Promise<number | null>((resolve) => solve.once('exit', resolve));
    kills.push(async () => {
      if (solve.exitCode === null) solve.kill('SIGKILL');
    });
    try {
      // The agent loop is waiting on the model: the sandbox is up, the work directory too.
      await Promise.race([
        modelReached,
        solveExit.then(() => Promise.reject(new Error(`solve ended early: ${stderr}`))),
      ]);
      const ours = await docker.listContainers({
        all: true,
        filters: { label: [`${LABEL_OWNER}=${instanceId(dataDir)}`] },
      });
      expect(ours).toHaveLength(1);
      const box = ours[0]!;
      made.push(box.Labels[LABEL_RUN]!);
      expect(box.Labels[LABEL_OWNER_PROCESS]).toMatch(/^[0-9a-f-]{36}$/);
      expect(box.Labels[LABEL_OWNER_PID]).toBe(String(solve.pid));

      const reapCli = (dir: string) =>
        new Promise<string>((resolve, reject) => {
          const child = spawn(process.execPath, [cli, 'reap'], {
            env: { ...env, FROGNANO_DATA_DIR: dir },
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          let out = '';
          child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
          child.once('exit', (code) =>
            code === 0 ? resolve(out) : reject(new Error(`reap exited ${code}`)),
          );
        });
      expect(await reapCli(dataDir)).toMatch(
        /reaped 0 container\(s\), \d+ snapshot image\(s\), 0 attempt-base image\(s\), 0 work dir\(s\); spared 0 live run\(s\) and 1 container\(s\) of live processes/,
      );
      expect(await reapCli(other)).toMatch(/reaped 0 container\(s\)/);
      expect(await exists(box.Id)).toBe(true);
      expect(existsSync(path.join(dataDir, 'runs', box.Labels[LABEL_RUN]!))).toBe(true);

      release();
      expect(await solveExit, stderr).toBe(0);
      expect(stderr).not.toContain('tool_error');
      expect(await exists(box.Id)).toBe(false);
    } finally {
      release();
      await model.close();
    }
  }, 240_000);
  const imageExists = async (tag: string) =>
    docker
      .getImage(tag)
      .inspect()
      .then(
        () => true,
        (e: { statusCode?: number }) => (e.statusCode === 404 ? false : Promise.reject(e)),
      );

  it('reaps a dead owner’s attempt-base image, and never one of a live owner or run, another instance, no owner, or one a container uses', async () => {
    await ensureSandboxImage();
    const mine = mkdtempSync(path.join(root, 'data-images-'));
    const theirs = mkdtempSync(path.join(root, 'data-images-theirs-'));
    const [alive, dead, deadTheirs] = await Promise.all([
      ownerProcess(mine),
      ownerProcess(mine),
      ownerProcess(theirs),
    ]);
    kills.push(alive.kill, dead.kill, deadTheirs.kill);
    await Promise.all([dead.kill(), deadTheirs.kill()]);
    const self = sandboxOwner(mine);
    const source = await container(testRunId('reap-image-source'), {});
    const tags: string[] = [];
    const commit = async (name: string, owner: SandboxOwner | 'none') => {
      const runId = testRunId(name);
      const base = attemptBaseImage(runId, owner === 'none' ? self : owner);
      // As attempt bases were committed before they carried an owner.
      const labels =
        owner === 'none'
          ? {
              [LABEL_RUN]: '',
              [LABEL_ATTEMPT_BASE]: runId,
              [LABEL_OWNER]: '',
              [LABEL_OWNER_PROCESS]: '',
            }
          : base.labels;
      const [repo, tag] = base.tag.split(':');
      await source.commit({
        _query: { container: source.id, repo, tag },
        _body: { Labels: labels },
      });
      tags.push(base.tag);
      return { runId, tag: base.tag };
    };
    const deadRun = await commit('img-dead', dead.owner);
    const selfEnded = await commit('img-self-ended', self);
    const aliveRun = await commit('img-alive', alive.owner);
    const selfLive = await commit('img-self-live', self);
    const queuedLive = await commit('img-queued-live', dead.owner);
    const inUse = await commit('img-in-use', dead.owner);
    const other = await commit('img-theirs', deadTheirs.owner);
    const unowned = await commit('img-unowned', 'none');
    const noProcess = await commit('img-no-process', { instance: self.instance, process: '' });
    // A live run's container on a dead owner's image: the image is not removed from under it.
    const userRun = testRunId('img-user');
    made.push(userRun);
    const user = await docker.createContainer({
      Image: inUse.tag,
      Cmd: ['true'],
      Labels: { [LABEL_RUN]: userRun, ...ownerLabels(alive.owner) },
    });
    try {
      const result = await reapFrom(mine, [selfLive.runId, queuedLive.runId]);
      expect(result.attemptImages).toBe(2);
      expect(await imageExists(deadRun.tag)).toBe(false);
      expect(await imageExists(selfEnded.tag)).toBe(false);
      for (const kept of [aliveRun, selfLive, queuedLive, inUse, other, unowned, noProcess])
        expect(await imageExists(kept.tag), kept.runId).toBe(true);
      expect(await exists(user.id)).toBe(true);
      // Its own instance reaps it.
      expect((await reapFrom(theirs)).attemptImages).toBe(1);
      expect(await imageExists(other.tag)).toBe(false);
    } finally {
      await user.remove({ force: true }).catch(() => undefined);
      for (const tag of tags) {
        await docker
          .getImage(tag)
          .remove({ force: true })
          .catch(() => undefined);
      }
    }
  }, 120_000);

  it('a killed `frognano solve --attempts 2` leaves its attempt-base image: reap spares it while the solve lives, removes it once it is gone', async () => {
    await ensureSandboxImage();
    const work = mkdtempSync(path.join(root, 'solve-attempts-'));
    const dataDir = path.join(work, 'data');
    const repo = createPythonRepo(work);
    // Every attempt waits on the model until the solve is killed.
    const waiting = new Set<string>();
    const model = await startScriptedModelServer({
      onExhausted: (request: RecordedRequest): ResponseSpec => {
        waiting.add(String(request.headers[ATTEMPT_HEADER]));
        return { kind: 'hang' };
      },
    });
    const cli = path.resolve('bin/frognano.js');
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      FROGNANO_MODEL_URL: model.baseUrl,
      FROGNANO_DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
    };
    const args = ['solve', '--repo', repo.dir, '--issue', ISSUE_TEXT, '--attempts', '2'];
    const solve = spawn(process.execPath, [cli, ...args, '--out', path.join(work, 'out')], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    solve.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const solveExit = new Promise<void>((resolve) => solve.once('exit', () => resolve()));
    kills.push(async () => {
      if (solve.exitCode === null && solve.signalCode === null) solve.kill('SIGKILL');
    });
    const ownImages = () =>
      docker.listImages({
        filters: JSON.stringify({
          label: [LABEL_ATTEMPT_BASE, `${LABEL_OWNER}=${instanceId(dataDir)}`],
        }),
      });
    try {
      // Both attempts wait on the model, and every container of the run is made (attempt 1's,
      // attempt 2's, and one verification sandbox per attempt): none is created after the kill.
      const deadline = Date.now() + 180_000;
      let runId: string | undefined;
      for (;;) {
        if (solve.exitCode !== null) throw new Error(`solve ended early: ${stderr}`);
        if (Date.now() > deadline) throw new Error(`the run did not get going: ${stderr}`);
        if (!runId) {
          runId = (await ownImages())[0]?.Labels[LABEL_ATTEMPT_BASE];
          if (runId) made.push(runId);
        }
        if (runId && waiting.size === 2 && (await labelledContainers(runId)).length === 4) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      const images = await ownImages();
      expect(images).toHaveLength(1);
      const image = images[0]!;
      expect(image.RepoTags).toHaveLength(1);
      expect(image.RepoTags![0]).toMatch(new RegExp(`^${ATTEMPT_IMAGE_REPOSITORY}:solve-`));
      expect(image.Labels[LABEL_OWNER_PID]).toBe(String(solve.pid));

      const reapCli = () =>
        new Promise<string>((resolve, reject) => {
          const child = spawn(process.execPath, [cli, 'reap'], {
            env,
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          let out = '';
          child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
          child.once('exit', (code) =>
            code === 0 ? resolve(out) : reject(new Error(`reap exited ${code}`)),
          );
        });
      expect(await reapCli()).toMatch(
        /reaped 0 container\(s\), \d+ snapshot image\(s\), 0 attempt-base image\(s\), 0 work dir\(s\)/,
      );
      expect((await ownImages()).map((i) => i.Id)).toEqual([image.Id]);

      solve.kill('SIGKILL');
      await solveExit;
      expect(await reapCli()).toMatch(
        /reaped 4 container\(s\), \d+ snapshot image\(s\), 1 attempt-base image\(s\), 1 work dir\(s\)/,
      );
      expect(await ownImages()).toEqual([]);
      expect(await labelledContainers(runId)).toEqual([]);
    } finally {
      await model.close();
      for (const image of await ownImages()) {
        await docker
          .getImage(image.Id)
          .remove({ force: true })
          .catch(() => undefined);
      }
    }
  }, 300_000);
});
