// What the App remembers about the draft pull request it published for an issue, in the
// queue's notes under the ISSUE's key: the issue text as the first run saw it (the PR body is
// editable by anyone with write access, so it is not trusted for this), the base the attempt
// started from, the commit it pushed and that attempt's test evidence. A follow-up reads it to
// brief the model and to know the pull request is ours; each published revision updates it.
import { z } from 'zod';
import type { Notes } from '../../queue/types.js';
import type { RunResult } from '../../runner/run-types.js';
import { exitWords } from '../status/index.js';

export const REVISION_NOTE = 'published-attempt';

export const PublishedAttempt = z.object({
  prNumber: z.number().int().positive(),
  branch: z.string(),
  /** The branch the pull request targets. */
  baseBranch: z.string(),
  /** The commit the first attempt started from: the previous diff is taken against it. */
  baseCommit: z.string(),
  /** The last commit this App pushed on the branch. */
  head: z.string(),
  issueTitle: z.string(),
  /** Sanitized, as the first run got it. */
  issueText: z.string(),
  /** 1 for the first attempt, then one more per published follow-up. */
  revision: z.number().int().positive(),
  evidence: z.object({ command: z.string(), before: z.string(), after: z.string() }).optional(),
});
export type PublishedAttempt = z.infer<typeof PublishedAttempt>;

export async function readPublishedAttempt(
  queue: Pick<Notes, 'getNote'>,
  issueKey: string,
): Promise<PublishedAttempt | undefined> {
  const raw = await queue.getNote(issueKey, REVISION_NOTE);
  if (!raw) return undefined;
  try {
    const parsed = PublishedAttempt.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export async function writePublishedAttempt(
  queue: Pick<Notes, 'setNote'>,
  issueKey: string,
  attempt: PublishedAttempt,
): Promise<void> {
  await queue.setNote(issueKey, REVISION_NOTE, JSON.stringify(attempt));
}

/** The test evidence of a run, in the words the status comment uses; none without a command. */
export function evidenceOf(result: RunResult): PublishedAttempt['evidence'] {
  if (!result.testCommand) return undefined;
  const words = (t: RunResult['verifyBefore']) =>
    t ? exitWords(t.exitCode, t.timedOut) : 'not run';
  return {
    command: result.testCommand.command,
    before: words(result.verifyBefore),
    after: words(result.verifyAfter),
  };
}

/** `frognano/issue-<N>` → N. */
export function issueNumberOfBranch(branch: string): number | undefined {
  const m = /^frognano\/issue-([1-9]\d{0,9})$/.exec(branch);
  return m ? Number(m[1]) : undefined;
}
