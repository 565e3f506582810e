// What a finished run leaves beside its trajectory for the viewer: the pipeline's result (test
// evidence, patch, budgets) and the model that ran, in `run.json`.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Trajectory, writeFileAtomic } from '../leaf/trajectory.js';
import type { RunRequest, RunResult } from '../runner/run-types.js';

export const RUN_RECORD_FILE = 'run.json';

export interface RunRecordFile {
  model?: string;
  result: RunResult;
}

export async function writeRunRecord(outDir: string, record: RunRecordFile): Promise<void> {
  await writeFileAtomic(path.join(outDir, RUN_RECORD_FILE), JSON.stringify(record));
}

/** Undefined while the run is active (or when it never finished). */
export async function readRunRecord(outDir: string): Promise<RunRecordFile | undefined> {
  try {
    return JSON.parse(await readFile(path.join(outDir, RUN_RECORD_FILE), 'utf8')) as RunRecordFile;
  } catch {
    return undefined;
  }
}

/** Undefined when there is none yet (the loop has not finished its first step) or it is unreadable. */
export async function readTrajectory(outDir: string): Promise<Trajectory | undefined> {
  let raw: string;
  try {
    raw = await readFile(path.join(outDir, 'trajectory.json'), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = Trajectory.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
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
