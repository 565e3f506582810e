// The Node part of automatic setup: the lockfile says which client installs exactly what it
// pins. yarn and pnpm come through corepack, which not every image has: then the command says
// so and fails, and the Environment section shows that line.
import type { PlannedCommand, TreeTexts } from './setup-plan-types.js';

export const NODE_LOCKFILES = [
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
] as const;

/** The install command for the first lockfile found, or none. */
export function nodeCommands(texts: TreeTexts): PlannedCommand[] {
  if (!texts.has('package.json')) return [];
  if (texts.has('package-lock.json')) return [{ command: 'npm ci', from: 'package-lock.json' }];
  if (texts.has('npm-shrinkwrap.json')) return [{ command: 'npm ci', from: 'npm-shrinkwrap.json' }];
  if (texts.has('yarn.lock'))
    return [{ command: corepack('yarn', 'install --frozen-lockfile'), from: 'yarn.lock' }];
  if (texts.has('pnpm-lock.yaml'))
    return [{ command: corepack('pnpm', 'install --frozen-lockfile'), from: 'pnpm-lock.yaml' }];
  return [];
}

function corepack(tool: 'yarn' | 'pnpm', args: string): string {
  const lockfile = tool === 'yarn' ? 'yarn.lock' : 'pnpm-lock.yaml';
  return `if ! command -v corepack >/dev/null; then echo "${lockfile}: this image has no corepack to run ${tool}; install ${tool} in setup: or pick an image that has it" >&2; exit 127; fi; corepack ${tool} ${args}`;
}
