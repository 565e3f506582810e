// A run's files (trajectory.json, ...) for whoever shows them (serve's trajectory link, the run
// viewer): from this host's data directory when the run was here, else from the shared queue
// (a worker on another host put it there). Names are plain file names, never paths.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunArtifacts } from './types.js';
import { runOutDir } from '../data-dir.js';

/** How long a run's shared files stay in a shared queue (bullmq), unless configured. */
export const DEFAULT_ARTIFACT_TTL_SECONDS = 14 * 24 * 3600;

const RUN_ID = /^[0-9a-f-]{36}$/;
// A plain file name, or one inside the folder of attempt K (`attempt-2/trajectory.json`).
const NAME = /^(?:attempt-[1-9]\d{0,2}\/)?\w[\w.-]*$/;

export interface RunArtifactSource {
  dataDir: string;
  queue?: Pick<RunArtifacts, 'getArtifact'>;
}

/** The file's bytes, or undefined when neither place has it. */
export async function readRunArtifact(
  runId: string,
  name: string,
  from: RunArtifactSource,
): Promise<Buffer | undefined> {
  if (!RUN_ID.test(runId) || !NAME.test(name) || name.includes('..')) {
    throw new Error(`not a run artifact: ${JSON.stringify(runId)} / ${JSON.stringify(name)}`);
  }
  try {
    return await readFile(join(runOutDir(from.dataDir, runId), name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return from.queue?.getArtifact(runId, name);
}

/** A run's files by name, as readRunArtifact finds them (the run viewer's RunFiles). */
export function runArtifacts(
  runId: string,
  from: RunArtifactSource,
): (name: string) => Promise<Buffer | undefined> {
  return (name) => readRunArtifact(runId, name, from);
}
