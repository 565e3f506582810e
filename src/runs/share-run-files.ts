// With a shared queue, serve (another host) shows the run from there and `/frognano use K` finds
// its attempts: the run's record and trajectories go into the queue for a while.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { RunArtifacts } from '../queue/types.js';
import { DEFAULT_ARTIFACT_TTL_SECONDS } from '../queue/read-run-artifact.js';
import type { RunResult } from '../runner/run-types.js';
import { RUN_RECORD_FILE, attemptTrajectoryName } from '../data-dir.js';

export async function shareRunFiles(
  queue: RunArtifacts,
  run: { runId: string; outDir: string; result: RunResult; ttlSeconds?: number },
  log: Logger,
): Promise<void> {
  if (queue.kind === 'sqlite') return;
  const ttl = run.ttlSeconds ?? DEFAULT_ARTIFACT_TTL_SECONDS;
  const names = [
    RUN_RECORD_FILE,
    ...(run.result.attempts ?? [{ attempt: 1 }]).map((a) => attemptTrajectoryName(a.attempt)),
  ];
  for (const name of names) {
    try {
      const body = await readFile(join(run.outDir, name)).catch(() => undefined);
      if (body) await queue.putArtifact(run.runId, name, body, ttl);
    } catch (error) {
      // The PR still opens; only the run page and `use K` on other hosts miss this file.
      log.warn({ err: error, name }, 'run file not shared through the queue');
    }
  }
}
