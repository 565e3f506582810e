// The files automatic setup's plan is made from, read from the run's tree on the host: regular
// files only (a symbolic link could lead out of the untrusted tree), each capped.
import { lstat, readdir, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { setupPlanFiles } from './plan-setup.js';
import type { TreeTexts } from './setup-plan-types.js';

const MAX_FILE_BYTES = 2 * 1024 * 1024;
// Only these directories can hold a file the plan reads.
const DIRS = ['', 'requirements', '.devcontainer', '.github/workflows'];

export async function readSetupTexts(treeDir: string): Promise<TreeTexts> {
  const paths: string[] = [];
  const root = await realpath(treeDir);
  for (const dir of DIRS) {
    // A directory that is a link (`.devcontainer -> /etc`) would read the host's files.
    const real = await realpath(path.join(treeDir, dir)).catch(() => undefined);
    if (real !== path.join(root, dir).replace(/\/$/, '')) continue;
    const entries = await readdir(path.join(treeDir, dir), { withFileTypes: true }).catch(() => []);
    for (const entry of entries)
      if (entry.isFile()) paths.push(dir ? `${dir}/${entry.name}` : entry.name);
  }
  const texts = new Map<string, string>();
  for (const file of setupPlanFiles(paths.sort())) {
    const full = path.join(treeDir, file);
    const info = await lstat(full).catch(() => undefined);
    if (!info?.isFile() || info.size > MAX_FILE_BYTES) continue;
    texts.set(file, await readFile(full, 'utf8'));
  }
  return texts;
}
