// A follow-up starts at the pull request's head, which a model wrote. Setup (with its network,
// if any) and the setup snapshot only ever see the base revision's own tree: the previous
// revisions (base..head, as host git reads them) come into each agent sandbox afterwards,
// offline. Their source first, so verify-before judges the head's code with the base
// revision's harness; then their tests and harness, which the verdict never trusts.
import type { Sandbox } from '../../leaf/sandbox.js';
import { SANDBOX_GIT, combined, tail } from '../command-output.js';
import { hostTreeTurn } from '../host-tree-turn.js';
import { isHarnessChange, isTestFile, patchFacts } from '../patch-facts.js';
import type { Failure, RunContext } from '../run-context.js';
import type { Workspace } from '../workspace.js';
import { sandboxGitApply } from './sandbox-git-apply.js';

export interface PreviousRevisions {
  /** The base revision: the tree setup ran on. */
  origin: string;
  /** The run's base commit (the head): the agent's HEAD, so its patch applies there. */
  head: string;
  /** Their source changes (apply to the origin) and their tests and harness (on top). */
  kept: string;
  setAside: string;
  /** Test-harness files they add or change: reported, never run for the verdict. */
  harnessFiles: string[];
}

/** Whether the verdict leaves a change out: the harness, and the tests (run as the agent's). */
export function verdictSetsAside(
  change: Parameters<typeof isHarnessChange>[0],
  testCommand: string | undefined,
): boolean {
  return isHarnessChange(change, testCommand) || isTestFile(change.path);
}

/** The previous revisions of a follow-up, as git reads them on the host's clean clone. */
export async function previousRevisions(
  workspace: Workspace,
  testCommand: string | undefined,
): Promise<PreviousRevisions> {
  const applied = await hostTreeTurn(workspace, () =>
    workspace.previousChanges({ setAside: (_, c) => verdictSetsAside(c, testCommand) }),
  );
  return {
    origin: workspace.originCommit,
    head: workspace.baseCommit,
    kept: applied.split?.kept ?? '',
    setAside: applied.split?.setAside ?? '',
    harnessFiles: patchFacts(applied.sinceOrigin ?? applied.changes, testCommand).harnessFiles,
  };
}

/**
 * Brings the previous revisions into a set-up sandbox whose network is cut: `source` alone,
 * `rest` after it, or `all`. Once all is in, HEAD moves to the head, keeping the tree.
 */
export async function enterPrevious(
  run: RunContext,
  previous: PreviousRevisions | undefined,
  sandbox: Sandbox,
  part: 'source' | 'rest' | 'all',
): Promise<Failure | undefined> {
  if (!previous) return undefined;
  const texts =
    part === 'source'
      ? [previous.kept]
      : part === 'rest'
        ? [previous.setAside]
        : [previous.kept, previous.setAside];
  for (const text of texts) {
    const failed = await sandboxGitApply(run, sandbox, text);
    if (failed) return notEntered(failed);
  }
  if (part === 'source') return undefined;
  const moved = await sandbox.exec(`${SANDBOX_GIT} reset -q ${previous.head}`, {
    timeoutMs: 120_000,
    signal: run.signal,
  });
  return moved.exitCode === 0 ? undefined : notEntered(tail(combined(moved).trim(), 300));
}

function notEntered(reason: string): Failure {
  return {
    outcome: 'sandbox_failed',
    error: `the previous revisions did not apply to the base revision after setup: ${reason}`,
  };
}
