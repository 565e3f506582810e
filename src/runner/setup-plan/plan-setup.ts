// Automatic setup's plan (issue 25), a pure function of the tree's files: the project's own
// declarations first (Python packaging and requirement files, a Node lockfile), then its
// devcontainer, then its CI workflows' install steps. Nothing beyond what those files say.
import { devcontainerCommands } from './devcontainer-commands.js';
import { nodeCommands } from './node-commands.js';
import { pythonCommands, venvCommand } from './python-commands.js';
import type { Ecosystem, SetupCandidate, SetupPlan, TreeTexts } from './setup-plan-types.js';
import { WORKFLOW_FILE, workflowCandidates } from './workflow-commands.js';

// A candidate whose commands call pip gets the venv first, so its installs land in it.
const CALLS_PIP = /(^|[\s;&|(])(python3?\s+-m\s+)?pip3?\s/;

export function planSetup(texts: TreeTexts): SetupPlan {
  const python = pythonCommands(texts);
  const node = nodeCommands(texts);
  const candidates: SetupCandidate[] = [];
  const files = new Set<string>();
  const note = (from: string) => {
    const file = from.split(' ')[0]!;
    if (texts.has(file)) files.add(file);
  };
  if (python.length + node.length > 0)
    candidates.push({ name: 'project files', commands: [...python, ...node] });
  const devcontainer = devcontainerCommands(texts);
  if (devcontainer.file && devcontainer.commands.length > 0)
    candidates.push(withVenv({ name: devcontainer.file, commands: devcontainer.commands }));
  for (const workflow of workflowCandidates(texts))
    candidates.push(withVenv({ name: workflow.file, commands: workflow.commands }));
  for (const candidate of candidates) for (const c of candidate.commands) note(c.from);
  return {
    ecosystems: ecosystems(texts, python.length > 0, node.length > 0),
    candidates,
    files: [...files].sort(),
    notes: notes(texts),
  };
}

function withVenv(candidate: SetupCandidate): SetupCandidate {
  return candidate.commands.some((c) => CALLS_PIP.test(c.command))
    ? { ...candidate, commands: [venvCommand(), ...candidate.commands] }
    : candidate;
}

function ecosystems(texts: TreeTexts, python: boolean, node: boolean): Ecosystem[] {
  const out: Ecosystem[] = [];
  if (python || ['pyproject.toml', 'setup.py', 'setup.cfg'].some((f) => texts.has(f)))
    out.push('python');
  if (node || texts.has('package.json')) out.push('node');
  return out;
}

function notes(texts: TreeTexts): string[] {
  const out: string[] = [];
  if (texts.has('package.json') && nodeCommands(texts).length === 0)
    out.push(
      'package.json has no lockfile: not installed (commit package-lock.json, or name the install in setup:)',
    );
  return out;
}

/** Which tree paths detection reads (the caller reads these, regular files only). */
export function setupPlanFiles(paths: readonly string[]): string[] {
  return paths.filter(
    (p) =>
      WANTED.has(p) ||
      WORKFLOW_FILE.test(p) ||
      /^requirements[^/]*\.txt$/.test(p) ||
      /^requirements\/[^/]+\.txt$/.test(p),
  );
}

const WANTED = new Set([
  'pyproject.toml',
  'setup.py',
  'setup.cfg',
  'tox.ini',
  'test-requirements.txt',
  'dev-requirements.txt',
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  '.devcontainer/devcontainer.json',
  '.devcontainer.json',
]);
