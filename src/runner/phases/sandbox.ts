// The sandbox phase: a hardened sandbox with the ORIGINAL tree (a follow-up's base revision: no
// tree a model wrote), started from a setup snapshot when one matches (setup.ts saves them).
// Docker in production; the local sandbox for tests and development.
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { loadProcessConfig } from '../../config.js';
import type { Sandbox } from '../../leaf/sandbox.js';
import {
  createDockerSandbox,
  type DockerSandbox,
  type DockerSandboxLimits,
} from '../../sandbox/docker-sandbox.js';
import { createLocalSandbox } from '../../sandbox/local-sandbox.js';
import {
  RUNC_RUNTIME,
  chooseSandboxRuntime,
  type SandboxRuntime,
} from '../../sandbox/sandbox-runtime.js';
import { sandboxOwner } from '../../sandbox/owner.js';
import {
  SNAPSHOT_LABEL,
  findSnapshot,
  hashDependencyManifests,
  refreshTreeCommand,
  setupInputs,
  snapshotKey,
  snapshotTag,
} from '../../sandbox/snapshot-cache.js';
import { withTestbedPaths } from '../../sandbox/testbed-paths.js';
import { shellQuote } from '../../shell-quote.js';
import { combined, errorText, tail } from '../command-output.js';
import { setupKeyCommands, setupKeyFiles, setupRuns } from '../setup-plan/planned-setup.js';
import type { RunContext } from '../run-context.js';
import type { RunRequest } from '../run-types.js';
import type { Prepared } from './config.js';
import { openSetupEgress, type SetupEgress } from './setup-egress.js';

/** The setup snapshot this run's sandbox matched (`hitImage`), or would save under `key`. */
export interface Snapshot {
  key: string;
  hitImage?: string;
}

/** What startSandbox got as far as: cleanup and the disk guard's verdict need the sandbox. */
export interface Started {
  sandbox?: Sandbox;
  snapshot?: Snapshot;
  /** Docker: the runtime the agent and verification run under (sandbox-runtime.ts). */
  runtime?: SandboxRuntime;
  /** Setup's network and environment, for a cold start with setup (the caller closes it). */
  egress?: SetupEgress;
}

/** Starts the sandbox (from a snapshot when one matches) and copies today's tree in. */
export async function startSandbox(
  run: RunContext,
  prepared: Prepared,
  started: Started,
): Promise<void> {
  const { docker, workspace } = prepared;
  if (!docker) {
    if (setupRuns(prepared.setup)) {
      run.log.warn(
        {},
        'the local sandbox has no network isolation: setup runs with the host network',
      );
    }
    started.sandbox = await startLocal(run, workspace.treeDir);
    return;
  }
  const baseImageId = await baseImage(docker, prepared.image, prepared.imageNamedByRepo === true);
  started.runtime = await chooseSandboxRuntime(docker, {
    wanted: runtimeWanted(run.env),
    image: prepared.image,
    logger: run.log,
  });
  if (prepared.snapshotsOn) started.snapshot = await lookUpSnapshot(run, prepared, baseImageId);
  const created = await startDocker(run, prepared, docker, started);
  started.sandbox = track(run, created);
  if (started.snapshot?.hitImage !== undefined) await refreshTree(run, created);
  else await emptyWorkdir(run, created, prepared.image);
  await created.copyIn(workspace.treeDir);
}

/** The local sandbox, on a copy of the tree. */
async function startLocal(run: RunContext, treeDir: string): Promise<Sandbox> {
  const { deps } = run;
  // The model sees /testbed, as in Docker (src/sandbox/testbed-paths.ts).
  const local = await createLocalSandbox({
    sourceDir: treeDir,
    ...(deps.localTempRoot ? { tempRoot: deps.localTempRoot } : {}),
  });
  const shown = withTestbedPaths(local);
  localSources.set(shown, local.workdir);
  return track(run, shown);
}

/** The snapshot key of this setup, and the image saved under it if there is one. */
async function lookUpSnapshot(
  run: RunContext,
  prepared: Prepared,
  baseImageId: string,
): Promise<Snapshot> {
  const { config, workspace, docker } = prepared;
  // Automatic setup: the plan and the files it read, never the commit (its install is editable).
  const setup = setupKeyCommands(prepared.setup);
  const manifests = await hashDependencyManifests(
    workspace.treeDir,
    prepared.setup.source === 'auto' ? setupKeyFiles(prepared.setup) : setupInputs(setup),
  );
  const key = snapshotKey({
    repo: snapshotRepo(run.request),
    baseImageId,
    setup,
    network: config.network,
    manifestsHash: manifests.hash,
    // The origin: a follow-up's setup and snapshot are the base revision's, never the head's.
    treeCommit: setupInstallsTree(setup) ? workspace.originCommit : undefined,
  });
  return { key, hitImage: await findSnapshot(docker!, key).catch(() => undefined) };
}

/**
 * The Docker sandbox, from the snapshot when it hit; a snapshot gone meanwhile starts cold.
 * A cold start with setup starts on setup's network (setup-egress.ts).
 */
async function startDocker(
  run: RunContext,
  prepared: Prepared,
  docker: Docker,
  started: Started,
): Promise<DockerSandbox> {
  const { request, deps, env, log } = run;
  const { snapshot, runtime } = started;
  const start = async (fromSnapshot: boolean) => {
    if (!fromSnapshot && setupRuns(prepared.setup))
      started.egress ??= await openSetupEgress(run, prepared, docker);
    const network = fromSnapshot ? 'none' : (started.egress?.dockerNetwork ?? 'none');
    return createDockerSandbox({
      docker,
      image: fromSnapshot ? snapshotTag(snapshot!.key) : prepared.image,
      runId: request.runId,
      repo: snapshotRepo(request),
      network,
      // Setup with a network under the engine's default (gVisor's own network is off here);
      // the agent then starts from its image under the chosen runtime (setup.ts).
      ...(network !== 'none' && runtime?.name !== RUNC_RUNTIME ? {} : { runtime: runtime?.name }),
      limits: deps.sandboxLimits ?? limitsFromEnv(env, log),
      owner: sandboxOwner(run.dataDir),
      logger: log,
    });
  };
  const hit = snapshot?.hitImage !== undefined;
  try {
    return await start(hit);
  } catch (error) {
    if (!hit) throw error;
    // Evicted between lookup and start (another worker): a cold start still works.
    log.warn({ err: errorText(error) }, 'setup snapshot unusable; running setup');
    snapshot!.hitImage = undefined;
    return await start(false);
  }
}

/**
 * The snapshot holds the tree of its own time: drop what git tracked then, keep what setup
 * made (snapshot-cache.ts explains), so today's tree comes in clean.
 */
export async function refreshTree(run: RunContext, sandbox: DockerSandbox): Promise<void> {
  const refreshed = await sandbox.exec(refreshTreeCommand(sandbox.workdir), {
    timeoutMs: 120_000,
    signal: run.signal,
  });
  if (refreshed.exitCode !== 0) {
    throw new Error(`could not refresh the snapshot's tree: ${tail(combined(refreshed), 300)}`);
  }
}

/**
 * A base image's own /testbed (whatever another tree left in it) must never mix with this one:
 * the workdir starts empty, or the image is refused.
 */
export async function emptyWorkdir(
  run: RunContext,
  sandbox: DockerSandbox,
  image: string,
): Promise<void> {
  const dir = shellQuote(sandbox.workdir);
  const emptied = await sandbox.exec(
    `cd ${dir} && find . -mindepth 1 -delete 2>/dev/null; cd ${dir} && [ -z "$(ls -A)" ]`,
    { timeoutMs: 120_000, signal: run.signal },
  );
  if (emptied.exitCode !== 0) {
    throw new Error(
      `sandbox image ${image} has files in ${sandbox.workdir} the sandbox user cannot remove: use an image whose ${sandbox.workdir} is empty or absent`,
    );
  }
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

/**
 * The base image's id; a setup snapshot is refused as a base (it is picked only by its key), and
 * so is any image a run made when a repository names it.
 */
async function baseImage(docker: Docker, image: string, namedByRepo: boolean): Promise<string> {
  try {
    const info = await docker.getImage(image).inspect();
    const labels = info.Config?.Labels ?? {};
    // A setup snapshot holds what one repository's setup made (its private dependencies,
    // whatever setup fetched); it is only ever picked by its own key, never by name.
    if (labels[SNAPSHOT_LABEL] === '1') {
      throw new Error(
        `sandbox image ${image} is a frognano setup snapshot; name a base image instead (snapshots are used only by their own repository's runs)`,
      );
    }
    // Every image a run commits (attempt bases, setup images) carries our labels and holds
    // some repository's tree: another repository must not start from it.
    const ours = Object.keys(labels)
      .filter((label) => label.startsWith('frognano.'))
      .sort();
    if (namedByRepo && ours[0] !== undefined) {
      throw new Error(
        `sandbox image ${image} was made by frognano (it carries the label ${ours[0]}): a repository may name only base images, never an image a run made`,
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

/** FROGNANO_SANDBOX_RUNTIME (entry points validate it; unset when empty). */
export function runtimeWanted(env: NodeJS.ProcessEnv): string | undefined {
  return env.FROGNANO_SANDBOX_RUNTIME?.trim() || undefined;
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
