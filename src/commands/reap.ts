// `frognano reap`: remove what dead runs of this data directory left behind: containers of
// its instance whose owning process is gone, and work directories of dead runs. A live
// `frognano solve` or App on the same data directory, and other instances, are left alone.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadProcessConfig } from '../config.js';
import { connectDocker, describeDockerEndpoint } from '../sandbox/docker-engine.js';
import { RunQueue } from '../queue/queue.js';
import { reap } from '../sandbox/reap.js';

export async function reapCommand(io: {
  stdout: (line: string) => void;
  env: NodeJS.ProcessEnv;
}): Promise<number> {
  const config = loadProcessConfig(io.env);
  const dataDir = path.resolve(config.FROGNANO_DATA_DIR);
  const liveRunIds = liveRuns(dataDir);
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
    workRoot: path.join(dataDir, 'runs'),
  });
  io.stdout(
    `reaped ${result.containers} container(s), ${result.images} snapshot image(s), ${result.workDirs} work dir(s); spared ${liveRunIds.length} live run(s) and ${result.spared ?? 0} container(s) of live processes`,
  );
  return 0;
}

function liveRuns(dataDir: string): string[] {
  // No queue database yet means no run was ever started from this data dir.
  if (!existsSync(path.join(dataDir, 'frognano.sqlite'))) return [];
  const queue = RunQueue.open({ dataDir, concurrency: 1 });
  try {
    return queue.runningIds();
  } finally {
    queue.close();
  }
}
