// `frognano reap`: remove what dead runs of this data directory left behind: containers and
// attempt-base images of its instance whose owning process is gone, and work directories of
// dead runs. A live `frognano solve` or App on the same data directory, and other instances,
// are left alone.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadProcessConfig } from '../config.js';
import { connectDocker, describeDockerEndpoint } from '../sandbox/docker-engine.js';
import { openQueue } from '../queue/open-queue.js';
import { reap } from '../sandbox/reap.js';
import { dataPaths } from '../data-dir.js';

export async function reapCommand(io: {
  stdout: (line: string) => void;
  env: NodeJS.ProcessEnv;
}): Promise<number> {
  const config = loadProcessConfig(io.env);
  const dataDir = path.resolve(config.FROGNANO_DATA_DIR);
  const liveRunIds = await liveRuns(dataDir, io.env);
  const docker = connectDocker(io.env);
  let engine: typeof docker | undefined = docker;
  try {
    await docker.ping();
  } catch {
    io.stdout(
      `no Docker engine at ${describeDockerEndpoint(io.env)}: reaping work directories only`,
    );
    engine = undefined;
  }
  const result = await reap(engine, {
    liveRunIds,
    dataDir,
    workRoot: dataPaths.runsDir(dataDir),
  });
  io.stdout(
    `reaped ${result.containers} container(s), ${result.images} snapshot image(s), ${result.attemptImages} attempt-base image(s), ${result.workDirs} work dir(s); spared ${liveRunIds.length} live run(s) and ${result.spared ?? 0} container(s) of live processes`,
  );
  return 0;
}

async function liveRuns(dataDir: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  // No queue yet (no Redis configured, no database file) means no run ever started from here.
  if (!env.FROGNANO_REDIS_URL?.trim() && !existsSync(dataPaths.queueFile(dataDir))) {
    return [];
  }
  // With Redis: the running runs of every host (sparing a few ids of others costs nothing).
  const queue = await openQueue({ env, dataDir, concurrency: 1, worker: false });
  try {
    return (await queue.list('running')).map((run) => run.id);
  } finally {
    await queue.close();
  }
}
