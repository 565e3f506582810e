// The repository's CI workflows as setup candidates: the `run:` steps that install its
// dependencies, as its own CI runs them. Steps that need the workflow's context (`${{ }}`) or
// only run the tests are left out: setup prepares, the test command judges.
import { parse } from 'yaml';
import type { PlannedCommand, TreeTexts } from './setup-plan-types.js';

export const WORKFLOW_FILE = /^\.github\/workflows\/[^/]+\.ya?ml$/;

// A line that installs dependencies with the tools this sandbox has.
const INSTALLS =
  /(^|[\s;&|(])((python3?\s+-m\s+)?pip3?\s+install|npm\s+(ci|install)\b|yarn(\s+install)?\s*($|[;&|])|pnpm\s+install|corepack\s+\w+\s+install|make\s+(install|deps|dev|setup)\b)/m;

export interface WorkflowCandidate {
  file: string;
  commands: PlannedCommand[];
}

/** One candidate per workflow file that has install steps, files in name order. */
export function workflowCandidates(texts: TreeTexts): WorkflowCandidate[] {
  const files = [...texts.keys()].filter((f) => WORKFLOW_FILE.test(f)).sort();
  const out: WorkflowCandidate[] = [];
  for (const file of files) {
    const commands = installSteps(texts.get(file)!).map((command) => ({ command, from: file }));
    if (commands.length > 0) out.push({ file, commands });
  }
  return out;
}

function installSteps(text: string): string[] {
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 50 });
  } catch {
    return [];
  }
  const jobs = (doc as { jobs?: unknown } | null)?.jobs;
  if (typeof jobs !== 'object' || jobs === null) return [];
  const runs: string[] = [];
  for (const job of Object.values(jobs)) {
    const steps = (job as { steps?: unknown } | null)?.steps;
    if (!Array.isArray(steps)) continue;
    for (const step of steps) {
      const run = (step as { run?: unknown } | null)?.run;
      if (typeof run !== 'string' || run.includes('${{') || !INSTALLS.test(run)) continue;
      if (!runs.includes(run.trim())) runs.push(run.trim());
    }
    // The first job that installs anything is the one that prepares the tests.
    if (runs.length > 0) break;
  }
  return runs;
}
