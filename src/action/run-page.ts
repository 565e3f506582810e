// The run page a workflow run leaves for its artifact (action.yml uploads the run's directory):
// the same page the App serves at /frognano/runs/<id>/trajectory, written as a file beside the
// run's trajectory, since a workflow has no server to show it.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { IssueJob } from '../github/job.js';
import type { RunRecord } from '../queue/types.js';
import type { RunResult } from '../runner/run-types.js';
import {
  filesIn,
  readAttemptTrajectories,
  readTrajectory,
  renderRunPage,
  runPageData,
  triggerOf,
} from '../web/index.js';

export const RUN_PAGE_FILE = 'trajectory.html';

export async function writeActionRunPage(
  outDir: string,
  input: { run: RunRecord<IssueJob>; result?: RunResult; model?: string },
): Promise<string> {
  const { run, result } = input;
  const files = filesIn(outDir);
  const html = renderRunPage(
    runPageData({
      runId: run.id,
      repo: `${run.job.owner}/${run.job.repo}`,
      issue: { number: run.job.issueNumber, title: run.job.issueTitle },
      ...(input.model ? { model: input.model } : {}),
      trigger: triggerOf(run.job),
      state: 'finished',
      ...(run.outcome ? { outcome: run.outcome } : {}),
      trajectory: await readTrajectory(files),
      ...(result ? { result } : {}),
      attemptTrajectories: await readAttemptTrajectories(files, result),
    }),
  );
  const file = path.join(outDir, RUN_PAGE_FILE);
  await writeFile(file, html);
  return file;
}
