// The step's files the runner reads after it: GITHUB_OUTPUT (the step's outputs) and
// GITHUB_STEP_SUMMARY (Markdown shown on the workflow run's page). Both are appended to, as
// other steps' writes may be there already.
import { randomBytes } from 'node:crypto';
import { appendFile } from 'node:fs/promises';

/** The step's outputs (action.yml names the same four); empty strings when there is none. */
export interface ActionOutputs {
  outcome: string;
  'run-id': string;
  'pr-number': string;
  'pr-url': string;
}

/**
 * Appends each output in the multiline form (`name<<DELIMITER`, value, `DELIMITER`), with a
 * random delimiter no value can contain: a value can never set another output.
 */
export async function writeOutputs(file: string, outputs: ActionOutputs): Promise<void> {
  const lines: string[] = [];
  for (const [name, value] of Object.entries(outputs)) {
    const text = String(value);
    let delimiter = `ghadelimiter_${randomBytes(16).toString('hex')}`;
    while (text.includes(delimiter)) delimiter = `ghadelimiter_${randomBytes(16).toString('hex')}`;
    lines.push(`${name}<<${delimiter}`, text, delimiter);
  }
  await appendFile(file, `${lines.join('\n')}\n`);
}

export async function appendStepSummary(file: string, markdown: string): Promise<void> {
  await appendFile(file, markdown.endsWith('\n') ? markdown : `${markdown}\n`);
}
