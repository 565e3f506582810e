// The clone phase: the repository on the host, from a cached bare mirror into a fresh working
// clone at the run's revision (a follow-up's: at its base revision), in the run's own work
// directory, which cleanup removes.
import { sandboxOwner } from '../../sandbox/owner.js';
import { errorText } from '../command-output.js';
import type { Failure, RunContext } from '../run-context.js';
import { prepareWorkspace, type Workspace } from '../workspace.js';

export async function clone(run: RunContext): Promise<Workspace | Failure> {
  const { request } = run;
  let workspace: Workspace;
  try {
    // Before the work directory exists: the owner lock is what keeps a reaper off it.
    sandboxOwner(run.dataDir);
    workspace = await run.phase('clone', () =>
      prepareWorkspace({
        runId: request.runId,
        repo: request.repo,
        revision: request.revision,
        ...(request.followUp ? { baseRevision: request.followUp.diffBase } : {}),
        getCredential: request.getCredential,
        cacheDir: run.cacheDir,
        workRoot: run.workRoot,
        signal: run.signal,
        log: run.log,
        env: run.env,
      }),
    );
  } catch (error) {
    return { outcome: 'clone_failed', error: errorText(error) };
  }
  run.workspace = workspace;
  return workspace;
}
