// The one owner of the data directory's layout (FROGNANO_DATA_DIR): every path under it is named
// here, so the process that writes a file and the one that reads it (another command, another
// process on the host) agree on where it is.
//
//   frognano.sqlite          the SQLite queue: runs, notes, deliveries
//   locks/<half>.lock|json   which process serves or works on this directory
//   owners/<process>.lock    sandboxes' owners, so a reaper knows whose containers are alive
//   runs/<run>/              a run's work directory (clone, sandbox files); reaped
//   cache/                   setup snapshots' keys and downloads kept between runs
//   trajectories/<run>/      a run's kept files: trajectories, run record (run.json), run page
//   publish/                 clones made to push a run's branch; removed when done
//   publish-pending/         changes kept until their draft pull request is open
import { join } from 'node:path';

export const dataPaths = {
  queueFile: (dataDir: string) => join(dataDir, 'frognano.sqlite'),
  locksDir: (dataDir: string) => join(dataDir, 'locks'),
  ownersDir: (dataDir: string) => join(dataDir, 'owners'),
  runsDir: (dataDir: string) => join(dataDir, 'runs'),
  cacheDir: (dataDir: string) => join(dataDir, 'cache'),
  trajectoriesDir: (dataDir: string) => join(dataDir, 'trajectories'),
  publishDir: (dataDir: string) => join(dataDir, 'publish'),
  pendingPublishDir: (dataDir: string) => join(dataDir, 'publish-pending'),
} as const;

/** Where one run's kept files are (outside the work directories, which are reaped). */
export function runOutDir(dataDir: string, runId: string): string {
  return join(dataPaths.trajectoriesDir(dataDir), runId);
}

/** The run record among a run's kept files: the pipeline's result and the model that ran. */
export const RUN_RECORD_FILE = 'run.json';

/** Where attempt K's trajectory is among a run's files (attempt 1's is `trajectory.json`). */
export function attemptTrajectoryName(attempt: number): string {
  return attempt === 1 ? 'trajectory.json' : `attempt-${attempt}/trajectory.json`;
}
