// The environment is the agent's (issue 25): after setup, the venv it made (and the project's
// node_modules/.bin) come first on PATH for every exec in the sandbox. Every exec is
// `bash -lc`, and a login shell's /etc/profile resets PATH on Debian, so the sandbox user's own
// login profile reads a small script that puts them back; the snapshot keeps both files.
import type { Sandbox } from '../../leaf/sandbox.js';
import { shellQuote } from '../../shell-quote.js';

/** Where setup's venvs are looked for, in order: automatic setup's, then the usual names. */
export const VENV_DIRS = ['$HOME/.venv', '$HOME/venv', '{workdir}/.venv', '{workdir}/venv'];
export const ENV_SCRIPT = '$HOME/.frognano/env.sh';

/** The script a login shell sources: the first venv that has a python, node_modules/.bin. */
export function envScript(workdir: string): string {
  const dirs = VENV_DIRS.map((d) => `"${d.replace('{workdir}', workdir)}"`).join(' ');
  return [
    '# frognano: what setup installed comes first on PATH (issue 25); written at setup.',
    `if [ -d ${shellQuote(`${workdir}/node_modules/.bin`)} ]; then PATH=${shellQuote(`${workdir}/node_modules/.bin`)}":$PATH"; fi`,
    `for frognano_venv in ${dirs}; do`,
    '  if [ -x "$frognano_venv/bin/python" ]; then',
    '    PATH="$frognano_venv/bin:$PATH"; VIRTUAL_ENV="$frognano_venv"; export VIRTUAL_ENV; break',
    '  fi',
    'done',
    'unset frognano_venv',
    'export PATH',
  ].join('\n');
}

/**
 * Writes the script and hooks it into the login profile bash reads (the first of
 * ~/.bash_profile, ~/.bash_login, ~/.profile, which it creates when there is none).
 */
export function installEnvCommand(workdir: string): string {
  const hook = `if [ -r "${ENV_SCRIPT}" ]; then . "${ENV_SCRIPT}"; fi`;
  return [
    'mkdir -p "$HOME/.frognano"',
    `printf '%s\\n' ${shellQuote(envScript(workdir))} > "${ENV_SCRIPT}"`,
    'frognano_profile="$HOME/.profile"',
    'for f in "$HOME/.bash_profile" "$HOME/.bash_login" "$HOME/.profile"; do if [ -f "$f" ]; then frognano_profile="$f"; break; fi; done',
    `grep -qsF '.frognano/env.sh' "$frognano_profile" || printf '\\n%s\\n' ${shellQuote(hook)} >> "$frognano_profile"`,
  ].join(' && ');
}

/**
 * After setup: a venv that sees pytest only through the system's site-packages gets a
 * `pytest` of its own, so a plain `pytest` runs with the venv's packages too.
 */
export const PYTEST_SHIM_COMMAND = [
  'if [ -n "${VIRTUAL_ENV:-}" ] && [ ! -e "$VIRTUAL_ENV/bin/pytest" ] && "$VIRTUAL_ENV/bin/python" -c "import pytest" 2>/dev/null; then',
  `printf '%s\\n' '#!/bin/sh' 'exec "$(dirname "$0")/python" -m pytest "$@"' > "$VIRTUAL_ENV/bin/pytest" && chmod +x "$VIRTUAL_ENV/bin/pytest";`,
  'fi',
].join(' ');

/** Hooks the environment in before setup (so setup's own `pip` is the venv's once it exists). */
export async function installAgentEnvironment(
  sandbox: Sandbox,
  signal: AbortSignal,
): Promise<void> {
  const done = await sandbox.exec(installEnvCommand(sandbox.workdir), {
    timeoutMs: 60_000,
    signal,
  });
  if (done.exitCode !== 0)
    throw new Error(
      `could not put setup's environment on PATH: ${done.stderr.toString('utf8').trim().slice(-300)}`,
    );
}

/** After setup: the venv's pytest (best effort; without it `python -m pytest` still works). */
export async function finishAgentEnvironment(sandbox: Sandbox, signal: AbortSignal): Promise<void> {
  await sandbox.exec(PYTEST_SHIM_COMMAND, { timeoutMs: 60_000, signal }).catch(() => undefined);
}
