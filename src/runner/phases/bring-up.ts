// Phase 2, setup: a sandbox with the ORIGINAL tree (a follow-up's base revision: no tree a
// model wrote), set up, network cut. Used for the agent
// (`timed`: its steps are the run's phases) and again, fresh, to verify each patch. A setup
// snapshot replaces setup when one matches; a cold setup saves one for next time.
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { loadProcessConfig } from '../../config.js';
import type { Sandbox } from '../../leaf/sandbox.js';
import {
  LABEL_RUN,
  createDockerSandbox,
  type DockerSandbox,
  type DockerSandboxLimits,
} from '../../sandbox/docker-sandbox.js';
import { createLocalSandbox } from '../../sandbox/local-sandbox.js';
import { sandboxOwner } from '../../sandbox/owner.js';
import {
  DEFAULT_SNAPSHOT_CAP,
  SNAPSHOT_LABEL,
  evictSnapshots,
  findSnapshot,
  hashDependencyManifests,
  refreshTreeCommand,
  setupInputs,
  snapshotKey,
  snapshotLabels,
  snapshotTag,
} from '../../sandbox/snapshot-cache.js';
import { withTestbedPaths } from '../../sandbox/testbed-paths.js';
import {
  COMMAND_OUTPUT_BYTES,
  OUTPUT_TAIL_CHARS,
  combined,
  combinedOutput,
  errorText,
  limitNote,
  shortCommand,
  tail,
} from '../command-output.js';
import { hostTreeTurn } from '../host-tree-turn.js';
import { limitOf, type Failure, type RunContext } from '../run-context.js';
import type { RunPhase, RunRequest } from '../run-types.js';
import type { Prepared } from './prepare.js';

export const DEFAULT_SETUP_TIMEOUT_MS = 20 * 60_000;

export async function bringUp(
  run: RunContext,
  prepared: Prepared,
  timed: boolean,
): Promise<Sandbox | Failure> {
  const step = <T>(name: RunPhase, fn: () => Promise<T>): Promise<T> =>
    timed ? run.phase(name, fn) : fn();
  const started: { sandbox?: Sandbox; snapshot?: Snapshot } = {};
  try {
    await step('sandbox', () =>
      hostTreeTurn(prepared.workspace, () => startSandbox(run, prepared, started)),
    );
  } catch (error) {
    const limit = limitOf([started.sandbox], error);
    if (limit) return { outcome: 'sandbox_limit', error: limit.message };
    return { outcome: 'sandbox_failed', error: errorText(error) };
  }
  const sandbox = started.sandbox!;
  const hit = started.snapshot?.hitImage !== undefined;
  if (timed) run.result.snapshotHit = hit;

  const { config, docker, setupNetwork } = prepared;
  if (config.setup.length > 0 && !hit) {
    if (timed) run.result.setupNetwork = setupNetwork || sandbox.kind === 'local';
    const failure = await step('setup', () => runSetup(run, config.setup, sandbox, timed));
    if (failure) return { outcome: 'setup_failed', error: failure };
    if (started.snapshot && docker)
      await saveSnapshot(docker, sandbox as DockerSandbox, started.snapshot.key, run);
  }

  // Cut the network before anything else runs in there.
  if (setupNetwork && !hit && sandbox.kind === 'docker') {
    try {
      await (sandbox as DockerSandbox).disconnectNetwork();
    } catch (error) {
      return {
        outcome: 'sandbox_failed',
        error: `could not cut the sandbox network before the agent: ${errorText(error)}`,
      };
    }
  }
  return sandbox;
}

interface Snapshot {
  key: string;
  hitImage?: string;
}

/** Starts the sandbox (from a snapshot when one matches) and copies today's tree in. */
async function startSandbox(
  run: RunContext,
  prepared: Prepared,
  started: { sandbox?: Sandbox; snapshot?: Snapshot },
): Promise<void> {
  const { request, deps, env, log } = run;
  const { docker, config, image, workspace } = prepared;
  const treeDir = workspace.treeDir;
  if (!docker) {
    if (config.setup.length > 0) {
      log.warn({}, 'the local sandbox has no network isolation: setup runs with the host network');
    }
    // The model sees /testbed, as in Docker (src/sandbox/testbed-paths.ts).
    const local = await createLocalSandbox({
      sourceDir: treeDir,
      ...(deps.localTempRoot ? { tempRoot: deps.localTempRoot } : {}),
    });
    const shown = withTestbedPaths(local);
    localSources.set(shown, local.workdir);
    started.sandbox = track(run, shown);
    return;
  }
  const baseImageId = await baseImage(docker, image);
  if (prepared.snapshotsOn) {
    const manifests = await hashDependencyManifests(treeDir, setupInputs(config.setup));
    const key = snapshotKey({
      repo: snapshotRepo(request),
      baseImageId,
      setup: config.setup,
      network: config.network,
      manifestsHash: manifests.hash,
      // The origin: a follow-up's setup and snapshot are the base revision's, never the head's.
      treeCommit: setupInstallsTree(config.setup) ? workspace.originCommit : undefined,
    });
    started.snapshot = { key, hitImage: await findSnapshot(docker, key).catch(() => undefined) };
  }
  const snapshot = started.snapshot;
  const start = (fromSnapshot: boolean) =>
    createDockerSandbox({
      docker,
      image: fromSnapshot ? snapshotTag(snapshot!.key) : image,
      runId: request.runId,
      repo: snapshotRepo(request),
      network: prepared.setupNetwork && !fromSnapshot ? 'bridge' : 'none',
      limits: deps.sandboxLimits ?? limitsFromEnv(env, log),
      owner: sandboxOwner(run.dataDir),
      logger: log,
    });
  let hit = snapshot?.hitImage !== undefined;
  let created: DockerSandbox;
  try {
    created = await start(hit);
  } catch (error) {
    if (!hit) throw error;
    // Evicted between lookup and start (another worker): a cold start still works.
    log.warn({ err: errorText(error) }, 'setup snapshot unusable; running setup');
    snapshot!.hitImage = undefined;
    hit = false;
    created = await start(false);
  }
  started.sandbox = track(run, created);
  if (hit) {
    // The snapshot holds the tree of its own time: drop what git tracked then, keep
    // what setup made (snapshot-cache.ts explains), and bring in today's tree.
    const refreshed = await created.exec(refreshTreeCommand(created.workdir), {
      timeoutMs: 120_000,
      signal: run.signal,
    });
    if (refreshed.exitCode !== 0) {
      throw new Error(`could not refresh the snapshot's tree: ${tail(combined(refreshed), 300)}`);
    }
  }
  await created.copyIn(treeDir);
}

// The host directory of a local sandbox, for copies of its prepared tree.
const localSources = new WeakMap<Sandbox, string>();

export function localSourceOf(sandbox: Sandbox): string | undefined {
  return localSources.get(sandbox);
}

function track<S extends Sandbox>(run: RunContext, sandbox: S): S {
  run.sandboxes.add(sandbox);
  return sandbox;
}

/** The base image's id; a setup snapshot is refused as a base (it is picked only by its key). */
async function baseImage(docker: Docker, image: string): Promise<string> {
  try {
    const info = await docker.getImage(image).inspect();
    // A setup snapshot holds what one repository's setup made (its private dependencies,
    // whatever setup fetched); it is only ever picked by its own key, never by name.
    if (info.Config?.Labels?.[SNAPSHOT_LABEL] === '1') {
      throw new Error(
        `sandbox image ${image} is a frognano setup snapshot; name a base image instead (snapshots are used only by their own repository's runs)`,
      );
    }
    return info.Id;
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) {
      throw new Error(
        `sandbox image ${image} is not on the Docker engine: build it (see sandbox/README.md) or pass another --image`,
      );
    }
    throw error;
  }
}

/** Runs setup's commands in order under one time limit; the reason it failed, or undefined. */
async function runSetup(
  run: RunContext,
  setup: readonly string[],
  sandbox: Sandbox,
  timed: boolean,
): Promise<string | undefined> {
  const deadline = Date.now() + (run.deps.setupTimeoutMs ?? DEFAULT_SETUP_TIMEOUT_MS);
  const tails: string[] = [];
  for (const [index, command] of setup.entries()) {
    const left = deadline - Date.now();
    const done =
      left > 0
        ? await sandbox.exec(combinedOutput(command), {
            timeoutMs: left,
            signal: run.signal,
            maxOutputBytes: COMMAND_OUTPUT_BYTES,
          })
        : undefined;
    if (done) tails.push(combined(done));
    if (timed) run.result.setupTail = tail(tails.join('\n'), OUTPUT_TAIL_CHARS);
    if (!done || done.timedOut)
      return `setup command ${index + 1} (${shortCommand(command)}) did not finish within the setup time limit`;
    if (done.exitCode !== 0)
      return `setup command ${index + 1} (${shortCommand(command)}) failed with exit code ${done.exitCode}${limitNote(done)}`;
  }
  return undefined;
}

async function saveSnapshot(
  docker: Docker,
  sandbox: DockerSandbox,
  key: string,
  run: RunContext,
): Promise<void> {
  // A failed snapshot costs the next run its head start, never this run its result.
  try {
    // The run label is the container's; the image must not look like a live run's.
    await sandbox.commit(snapshotTag(key), {
      ...snapshotLabels({ repo: snapshotRepo(run.request), key }),
      [LABEL_RUN]: '',
    });
    const evicted = await evictSnapshots(docker, {
      keep: run.deps.snapshots?.keep ?? DEFAULT_SNAPSHOT_CAP,
    });
    run.log.info({ key, evicted: evicted.length }, 'setup snapshot saved');
  } catch (error) {
    run.log.warn({ key, err: errorText(error) }, 'setup snapshot failed');
  }
}

export function limitsFromEnv(env: NodeJS.ProcessEnv, log: Logger): Partial<DockerSandboxLimits> {
  try {
    const config = loadProcessConfig(env);
    return {
      memoryBytes: config.FROGNANO_SANDBOX_MEMORY,
      nanoCpus: Math.round(config.FROGNANO_SANDBOX_CPUS * 1e9),
      pidsLimit: config.FROGNANO_SANDBOX_PIDS,
      diskBytes: config.FROGNANO_SANDBOX_DISK,
      diskFloorBytes: config.FROGNANO_DISK_FLOOR,
    };
  } catch (error) {
    // Entry points validate the environment first; here a bad value falls back to defaults.
    log.warn(
      { err: errorText(error) },
      'sandbox limits from the environment are invalid; using defaults',
    );
    return {};
  }
}

/** The repository a snapshot belongs to (never shared across repositories): no credentials. */
export function snapshotRepo(request: RunRequest): string {
  return request.repo.replace(/(\/\/)[^/@\s]+@/, '$1').slice(0, 500);
}

/**
 * `pip install .` (not editable) copies the project's current sources into site-packages:
 * a snapshot of that is only right for the same commit, so the commit joins the key.
 */
export function setupInstallsTree(setup: readonly string[]): boolean {
  return setup.some((command) =>
    command.split(/[;&|\n]+/).some((part) => {
      const words = part.trim().split(/\s+/);
      const isPipInstall = /(^|\/)pip3?$/.test(words[0] ?? '')
        ? words[1] === 'install'
        : words.includes('pip') && words.includes('install');
      const setupPy = /setup\.py$/.test(words[1] ?? '') && words.includes('install');
      if (setupPy) return true;
      if (!isPipInstall) return false;
      const editable = words.some(
        (w) => w === '-e' || w === '--editable' || w.startsWith('--editable='),
      );
      return !editable && words.some((w) => /^\.{1,2}(\/|$|\[)/.test(w));
    }),
  );
}
