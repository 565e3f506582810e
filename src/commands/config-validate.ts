// `frognano config validate [FILE]`: every problem of a `.github/frognano.yml`, worded as a run
// words it, at its line, before a run fails on it. Exit 0 (valid) or 1.
import { lstat, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { checkConfigBytes, type ConfigProblem } from '../runner/config-problems.js';
import { MAX_CONFIG_BYTES, REPO_CONFIG_PATH, tooLarge } from '../runner/repo-config.js';
import { terminalText } from './terminal-text.js';

export interface ConfigValidateIo {
  stdout: (line: string) => void;
  /** Where a relative FILE is found (default the process's directory). */
  cwd?: string;
}

export async function configValidateCommand(
  file: string | undefined,
  options: { json?: boolean },
  io: ConfigValidateIo,
): Promise<number> {
  const shown = file ?? REPO_CONFIG_PATH;
  const cwd = io.cwd ?? process.cwd();
  const resolved = path.resolve(cwd, shown);
  // The repository's own file: a run refuses it through a linked `.github` too.
  const problems =
    resolved === path.join(cwd, REPO_CONFIG_PATH) && (await leavesTree(cwd, resolved))
      ? [{ message: LINKED }]
      : await problemsOf(resolved);
  if (options.json) {
    io.stdout(JSON.stringify({ file: shown, valid: problems.length === 0, problems }));
  } else if (problems.length === 0) {
    io.stdout('valid');
  } else {
    for (const p of problems) {
      const at =
        p.line === undefined ? '' : `:${p.line}${p.column === undefined ? '' : `:${p.column}`}`;
      io.stdout(terminalText(`${shown}${at}: ${p.message}`));
    }
  }
  return problems.length === 0 ? 0 : 1;
}

const LINKED = 'must be a regular file, not a symbolic link (a run refuses it too)';

/** Whether `file`, which exists, is really somewhere else than under `root` (a linked dir). */
async function leavesTree(root: string, file: string): Promise<boolean> {
  const real = await realpath(file).catch(() => undefined);
  if (real === undefined) return false;
  return real !== path.join(await realpath(root), REPO_CONFIG_PATH);
}

async function problemsOf(file: string): Promise<ConfigProblem[]> {
  const info = await lstat(file).catch(() => undefined);
  if (!info) return [{ message: 'not found: give the path of a frognano config file' }];
  if (info.isSymbolicLink()) return [{ message: LINKED }];
  if (!info.isFile()) return [{ message: 'must be a regular file' }];
  // The run's own words, without the file name it puts first.
  if (info.size > MAX_CONFIG_BYTES) return [{ message: tooLarge('', info.size).slice(2) }];
  // In the file's order already: the run names the first, and so does `config show`.
  return checkConfigBytes(await readFile(file)).problems;
}
