// The environment alone, as a run makes it (`frognano env`): clone, config, sandbox and setup
// (or its snapshot), the collection that proves it, then cleanup. No model, no agent; the
// result carries the environment facts the run's own would.
import { assembleResult, type RunPieces } from './assemble-result.js';
import { clone } from './phases/clone.js';
import { configure } from './phases/config.js';
import { setUp } from './phases/setup.js';
import {
  isFailure,
  startRun,
  unexpectedFailure,
  type Failure,
  type PipelineDeps,
} from './run-context.js';
import type { RunRequest, RunResult } from './run-types.js';

export async function prepareEnvironment(
  request: RunRequest,
  deps: PipelineDeps = {},
): Promise<RunResult> {
  const run = startRun(request, deps);
  const made: RunPieces = {};
  let failure: Failure | undefined;
  let wallMs = 0;
  try {
    const workspace = await clone(run);
    if (isFailure(workspace)) failure = workspace;
    else {
      made.baseCommit = workspace.baseCommit;
      const configured = await configure(run, workspace);
      made.config = configured.facts;
      if (configured.failure) failure = configured.failure;
      else {
        const setup = await setUp(run, configured.prepared);
        made.setup = setup.facts;
        if (setup.failure) failure = setup.failure;
      }
    }
    failure = failure && run.ending(failure);
  } catch (error) {
    failure = run.ending(unexpectedFailure(run, error));
  } finally {
    // The sandbox and the work directory go, whatever happened above.
    wallMs = await run.finish();
  }
  return assembleResult(request, made, { failure, timings: run.timings, wallMs });
}
