// What setup and verify-before left in the tree is not the agent's work: keep it out of the
// patch the loop captures.
import type { Logger } from 'pino';
import type { Sandbox } from '../../leaf/sandbox.js';
import { COMMAND_OUTPUT_BYTES, SANDBOX_GIT } from '../command-output.js';

/**
 * Caches and build products no reviewer wants in a pull request, wherever they appear
 * (the agent's own test runs make them too). Only untracked files are affected: a
 * repository that tracks such a file keeps it tracked.
 */
export const UNTRACKED_NOISE: readonly string[] = [
  '__pycache__/',
  '*.py[cod]',
  '.pytest_cache/',
  '.mypy_cache/',
  '.ruff_cache/',
  '.tox/',
  '.nox/',
  '.coverage',
  '*.egg-info/',
  'node_modules/',
];

/**
 * What setup and verify-before left in the tree (an .egg-info, node_modules, a generated
 * file) is not the agent's work: list it, and the usual caches, in the sandbox's
 * .git/info/exclude so the patch captured after the loop (`git add -A`) holds only the
 * agent's changes.
 */
export async function excludeUntracked(
  sandbox: Sandbox,
  signal: AbortSignal,
  log: Logger,
): Promise<void> {
  const list = await sandbox.exec(
    `${SANDBOX_GIT} ls-files -z --others --exclude-standard --directory`,
    { timeoutMs: 120_000, signal, maxOutputBytes: COMMAND_OUTPUT_BYTES },
  );
  let paths: string[] = [];
  if (list.exitCode !== 0 || list.stdoutDroppedChars > 0) {
    log.warn(
      { exitCode: list.exitCode },
      'could not list setup outputs; they may show up in the patch',
    );
  } else {
    paths = list.stdout
      .toString('utf8')
      .split('\0')
      .filter((p) => p !== '');
  }
  // Anchored, with gitignore's special characters escaped: each line names exactly one path.
  const lines = paths.map(
    (p) => `/${p.replace(/[\\*?[\]]/g, (c) => `\\${c}`).replace(/ $/, '\\ ')}`,
  );
  const text = [
    '',
    '# frognano: caches, and what setup and verify-before left; not part of the patch',
    ...UNTRACKED_NOISE,
    ...lines,
    '',
  ].join('\n');
  const write = await sandbox.exec('mkdir -p .git/info && cat >> .git/info/exclude', {
    stdin: text,
    timeoutMs: 60_000,
    signal,
  });
  if (write.exitCode !== 0)
    log.warn({ exitCode: write.exitCode }, 'could not record setup outputs in .git/info/exclude');
}
