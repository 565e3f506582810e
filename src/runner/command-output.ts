// How the pipeline runs commands in a sandbox and keeps their output: interleaved, capped,
// only the tail kept (a test runner's summary is last), errors as one line.
import type { ExecResult } from '../leaf/sandbox.js';

/** Characters of combined output kept for setup and test results. */
export const OUTPUT_TAIL_CHARS = 4000;
/** Setup and test output is read whole up to this, then its tail kept. */
export const COMMAND_OUTPUT_BYTES = 16 * 1024 * 1024;
/**
 * Git inside the sandbox reads the repository's own .git/config (the agent's, once the loop
 * has run): settings that would run a program are overridden on the command line.
 */
export const SANDBOX_GIT = 'git -c core.fsmonitor=false -c core.hooksPath=/dev/null';

/** stdout and stderr interleaved as a terminal would show them. */
export function combinedOutput(command: string): string {
  return `{\n${command}\n} 2>&1`;
}

export function combined(run: ExecResult): string {
  const out = run.stdout.toString('utf8') + run.stderr.toString('utf8');
  return run.stdoutDroppedChars > 0
    ? `${out}\n[output beyond ${COMMAND_OUTPUT_BYTES} bytes not kept]`
    : out;
}

export function tail(text: string, chars: number): string {
  return text.length > chars ? `…${text.slice(text.length - chars)}` : text;
}

export function shortCommand(command: string): string {
  const line = command.trim().split('\n')[0] ?? '';
  return `\`${line.length > 80 ? `${line.slice(0, 77)}...` : line}\``;
}

export function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] ?? text;
}

/** The Docker sandbox tells when a limit, not the command itself, ended it. */
export function limitNote(
  run: ExecResult & { oomKilled?: boolean; pidsLimitHit?: boolean },
): string {
  if (run.oomKilled) return ' (out of memory: raise FROGNANO_SANDBOX_MEMORY)';
  if (run.pidsLimitHit) return ' (process limit reached: raise FROGNANO_SANDBOX_PIDS)';
  return '';
}
