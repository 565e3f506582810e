// What a finished run leaves beside its trajectory for the viewer: the pipeline's result (test
// evidence, patch, budgets) and the model that ran, in `run.json`.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Trajectory, writeFileAtomic } from '../leaf/trajectory.js';
import type { RunRequest, RunResult } from '../runner/run-types.js';
import { RUN_RECORD_FILE, attemptTrajectoryName } from '../data-dir.js';

export interface RunRecordFile {
  model?: string;
  result: RunResult;
}

export async function writeRunRecord(outDir: string, record: RunRecordFile): Promise<void> {
  await writeFileAtomic(path.join(outDir, RUN_RECORD_FILE), JSON.stringify(record));
}

/**
 * Reads one of a run's files by name (`trajectory.json`, `run.json`, `attempt-2/trajectory.json`):
 * from a directory, or wherever the run's host shared them (src/queue/read-run-artifact.ts).
 * Undefined when the file is not there.
 */
export type RunFiles = (name: string) => Promise<Buffer | undefined>;

/** A run's files in its output directory. */
export function filesIn(outDir: string): RunFiles {
  return async (name) => {
    try {
      return await readFile(path.join(outDir, name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  };
}

/** Undefined while the run is active (or when it never finished). */
export async function readRunRecord(files: RunFiles): Promise<RunRecordFile | undefined> {
  try {
    const raw = await files(RUN_RECORD_FILE);
    return raw && (JSON.parse(raw.toString('utf8')) as RunRecordFile);
  } catch {
    return undefined;
  }
}

/** Undefined when there is none yet (the loop has not finished its first step) or it is unreadable. */
export async function readTrajectory(
  files: RunFiles,
  name = 'trajectory.json',
): Promise<Trajectory | undefined> {
  try {
    const raw = await files(name);
    if (!raw) return undefined;
    const parsed = Trajectory.safeParse(JSON.parse(raw.toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The trajectories of attempts 2..N of a run with several (attempt 1's is `trajectory.json`). */
export async function readAttemptTrajectories(
  files: RunFiles,
  result: RunResult | undefined,
): Promise<Record<number, Trajectory | undefined>> {
  const numbers = (result?.attempts ?? []).map((a) => a.attempt).filter((k) => k > 1);
  const read = await Promise.all(
    numbers.map((k) => readTrajectory(files, attemptTrajectoryName(k))),
  );
  return Object.fromEntries(numbers.map((k, i) => [k, read[i]]));
}

/** Wraps a pipeline so every run's result is kept in its output directory for the viewer. */
export function recordingRunResults<R extends RunRequest>(
  pipeline: (request: R) => Promise<RunResult>,
  model: string | undefined,
  onError: (error: unknown) => void,
): (request: R) => Promise<RunResult> {
  return async (request) => {
    const result = await pipeline(request);
    await writeRunRecord(request.outDir, { model, result }).catch(onError);
    return result;
  };
}
