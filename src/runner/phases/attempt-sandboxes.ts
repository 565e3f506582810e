// The sandbox phase again, for attempts 2..N: one setup, N sandboxes. They start from the state
// attempt 1's sandbox has after setup and verify-before (the same post-setup image in Docker, a
// copy of the same prepared tree for the local sandbox), each its own hardened container with
// no network.
import type { Sandbox } from '../../leaf/sandbox.js';
import { attemptBaseImage } from '../../sandbox/attempt-base-image.js';
import { createDockerSandbox, DockerSandbox } from '../../sandbox/docker-sandbox.js';
import { createLocalSandbox } from '../../sandbox/local-sandbox.js';
import { sandboxOwner } from '../../sandbox/owner.js';
import { withTestbedPaths } from '../../sandbox/testbed-paths.js';
import { errorText } from '../command-output.js';
import type { Failure, RunContext } from '../run-context.js';
import { limitsFromEnv, localSourceOf, snapshotRepo } from './sandbox.js';
import type { Prepared } from './config.js';
import { rebuildFrom, singleAttemptImage } from './rebuild-source.js';
import { warmBytecode } from './run-test.js';

/**
 * Attempt 1 gets `base` itself; the others are started from a copy of it, taken right after
 * setup, before verify-before and before any attempt runs. Each entry fails on its own.
 */
export interface AttemptSandboxes {
  /** One per attempt, attempt 1's first. */
  sandboxes: Promise<Sandbox | Failure>[];
  /**
   * Docker: a new sandbox from the frozen prepared image, which no agent has touched: a fresh
   * sandbox for verification without copying the tree in or setting up again.
   */
  fresh?: () => Promise<Sandbox>;
}

export async function attemptSandboxes(
  run: RunContext,
  prepared: Prepared,
  base: Sandbox,
  count: number,
  snapshotImage?: string,
): Promise<AttemptSandboxes> {
  if (count === 1) {
    const from = singleAttemptImage(prepared, snapshotImage);
    if (from && base instanceof DockerSandbox) rebuildFrom(run, prepared, base, from);
    return { sandboxes: [Promise.resolve(base)] };
  }
  let start: () => Promise<Sandbox>;
  try {
    start = await run.phase('sandbox', () => copySource(run, prepared, base));
  } catch (error) {
    const failure: Failure = {
      outcome: 'sandbox_failed',
      error: `could not copy the prepared sandbox for the other attempts: ${errorText(error)}`,
    };
    return {
      sandboxes: [
        Promise.resolve(base),
        ...Array.from({ length: count - 1 }, () => Promise.resolve(failure)),
      ],
    };
  }
  const track = (sandbox: Sandbox): Sandbox => {
    run.sandboxes.add(sandbox);
    return sandbox;
  };
  const others = Array.from({ length: count - 1 }, () =>
    start().then(track, (error: unknown): Failure => ({
      outcome: 'sandbox_failed',
      error: errorText(error),
    })),
  );
  run.starting.push(...others);
  const sandboxes = [Promise.resolve(base), ...others];
  // A local copy reads attempt 1's directory: all are made before attempt 1 changes it.
  if (!(base instanceof DockerSandbox)) {
    await Promise.all(others);
    return { sandboxes };
  }
  // The verification sandboxes start (and compile pytest) while the attempts wait for the
  // model: one per attempt, once every attempt has its own (the first model requests go first).
  const pool: Promise<Sandbox>[] = [];
  // Only for a run that gets as far as the attempts (not one whose tests cannot run).
  const warm = Promise.all([run.agentStarted, Promise.all(others)]).then(([agent]) => {
    if (!agent || run.signal.aborted) return;
    for (let i = 0; i < count; i++) {
      const next = start()
        .then(track)
        .then(async (sandbox) => {
          if (prepared.test) await warmBytecode(sandbox, prepared.test, run.signal);
          return sandbox;
        });
      next.catch(() => undefined);
      pool.push(next);
      run.starting.push(next);
    }
  });
  run.starting.push(warm);
  return {
    sandboxes,
    fresh: async () => {
      await warm;
      return (await pool.shift()) ?? track(await start());
    },
  };
}

/** Freezes the prepared state and returns how to start a sandbox from it. */
async function copySource(
  run: RunContext,
  prepared: Prepared,
  base: Sandbox,
): Promise<() => Promise<Sandbox>> {
  const { request, deps, env, log } = run;
  const docker = prepared.docker;
  if (!docker || !(base instanceof DockerSandbox)) {
    const sourceDir = localSourceOf(base);
    if (!sourceDir) throw new Error('the prepared sandbox has no directory to copy');
    return async () =>
      withTestbedPaths(
        await createLocalSandbox({
          sourceDir,
          ...(deps.localTempRoot ? { tempRoot: deps.localTempRoot } : {}),
        }),
      );
  }
  const owner = sandboxOwner(run.dataDir);
  // Owned like the run's containers: if this process is killed, `reap` can remove it.
  const { tag, labels } = attemptBaseImage(request.runId, owner);
  await base.commit(tag, labels);
  run.cleanups.push(async () => {
    await docker.getImage(tag).remove({ force: true });
  });
  // Every attempt, the first too, starts again from the attempt base when its sandbox is lost.
  const from = { kind: 'attempt-base', image: tag } as const;
  rebuildFrom(run, prepared, base, from);
  const rebuildable = (sandbox: DockerSandbox): DockerSandbox => {
    rebuildFrom(run, prepared, sandbox, from);
    return sandbox;
  };
  return async () =>
    rebuildable(
      await createDockerSandbox({
        docker,
        image: tag,
        runId: request.runId,
        repo: snapshotRepo(request),
        network: 'none',
        // Attempt 1's runtime: the one chosen for the agent (setup.ts moved it there).
        ...(base.runtime !== undefined ? { runtime: base.runtime } : {}),
        limits: deps.sandboxLimits ?? limitsFromEnv(env, log),
        owner,
        logger: log,
      }),
    );
}
