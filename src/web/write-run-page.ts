// `frognano solve` writes the same page the App serves, beside trajectory.json.
import { writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import type { RunResult } from '../runner/run-types.js';
import { runPageData } from './run-page-data.js';
import { filesIn, readAttemptTrajectories, readTrajectory } from './run-record.js';
import { renderRunPage } from './render-run-page.js';

export interface SolveRunPageInput {
  result: RunResult;
  /** `--repo` as given. */
  repo: string;
  /** The task: title, blank line, body. */
  issueText: string;
  model?: string;
}

/** Writes `trajectory.html` into `outDir` and returns its path. */
export async function writeRunPage(outDir: string, input: SolveRunPageInput): Promise<string> {
  const trajectory = await readTrajectory(
    filesIn(path.dirname(input.result.trajectoryPath ?? path.join(outDir, 'trajectory.json'))),
  );
  let user = 'you';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry (some containers): the generic word will do.
  }
  const html = renderRunPage(
    runPageData({
      runId: input.result.runId,
      repo: input.repo,
      issue: { title: input.issueText.split('\n')[0]?.trim() || '(no title)' },
      model: input.model,
      trigger: `frognano solve by ${user}`,
      state: 'finished',
      trajectory,
      attemptTrajectories: await readAttemptTrajectories(filesIn(outDir), input.result),
      result: input.result,
    }),
  );
  const file = path.join(outDir, 'trajectory.html');
  await writeFile(file, html);
  return file;
}
