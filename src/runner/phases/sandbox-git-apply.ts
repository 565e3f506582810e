// Applies a patch that host git wrote (never the agent's text) to a sandbox's tree.
import type { Sandbox } from '../../leaf/sandbox.js';
import { SANDBOX_GIT, combined, tail } from '../command-output.js';
import type { RunContext } from '../run-context.js';

/** Why `git apply` refused `text` in the sandbox's tree, or undefined once it is applied. */
export async function sandboxGitApply(
  run: RunContext,
  sandbox: Sandbox,
  text: string,
  reverse = false,
): Promise<string | undefined> {
  if (text === '') return undefined;
  const done = await sandbox.exec(
    `${SANDBOX_GIT} apply ${reverse ? '-R ' : ''}--whitespace=nowarn -`,
    { stdin: text, timeoutMs: 120_000, signal: run.signal },
  );
  return done.exitCode === 0 ? undefined : tail(combined(done).trim(), 300);
}
