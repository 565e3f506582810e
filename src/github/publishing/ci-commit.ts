// `/frognano ci` on the bot's pull request: the bot's commits say `[skip ci]` so a repository's
// workflows never run the model's code unasked; once a maintainer has read the patch, this pushes
// ONE empty commit (the head's tree, the head as its parent) without `[skip ci]`, so the
// workflows run on the patch. Fast-forward only: a plain push of a child of the head we read,
// never forced (a push that raced us is not overwritten). Whose pull request it is and whether
// the sender may write were checked by intake before this runs.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  failureLine,
  inScratchClone,
  prCommand,
  type PrCommandDeps,
  type PrCommandTarget,
} from './pr-command.js';

/** The pull request and who asked (already permission-checked), and how to push. */
export type CiCommitParams = PrCommandTarget;

export type CiCommitOutcome =
  | { kind: 'pushed'; commit: string }
  /** One sentence for the person who asked: why nothing was pushed. */
  | { kind: 'refused'; reason: string };

export async function pushCiCommit(p: CiCommitParams): Promise<CiCommitOutcome> {
  const { data: pr } = await p.octokit.rest.pulls.get({
    owner: p.owner,
    repo: p.repo,
    pull_number: p.pullNumber,
  });
  if (pr.state !== 'open') return { kind: 'refused', reason: 'this pull request is closed.' };
  if (!/^frognano\/issue-\d+$/.test(pr.head.ref))
    return {
      kind: 'refused',
      reason: '`/frognano ci` works only on pull requests frognano opened.',
    };
  const commit = await commitEmpty(p, { branch: pr.head.ref, head: pr.head.sha });
  p.log.info({ pr: p.pullNumber, commit, by: p.by.login }, 'pushed the commit that runs CI');
  return { kind: 'pushed', commit };
}

/** The message names who asked; it must not say `[skip ci]` (that is the point). */
export function ciMessage(by: { login: string }): string {
  return [
    `frognano: run CI (requested by @${by.login})`,
    '',
    `An empty commit: @${by.login} asked with \`/frognano ci\` for the repository's workflows to run on this change.`,
    '',
  ].join('\n');
}

async function commitEmpty(
  p: CiCommitParams,
  c: { branch: string; head: string },
): Promise<string> {
  return inScratchClone(p, 'ci-', async (run, dir) => {
    await run(
      ['fetch', '-q', '--no-tags', '--depth=1', p.gitUrl, `refs/heads/${c.branch}`],
      'fetching the branch',
    );
    const fetched = (await run(['rev-parse', 'FETCH_HEAD'], 'reading the branch')).trim();
    if (fetched !== c.head)
      throw new Error(
        `the branch ${c.branch} moved while asking (now ${fetched.slice(0, 12)}); comment again`,
      );
    const messageFile = join(dir, 'message.txt');
    await writeFile(messageFile, ciMessage(p.by));
    const commit = (
      await run(['commit-tree', `${c.head}^{tree}`, '-p', c.head, '-F', messageFile], 'committing')
    ).trim();
    // No force: the push is a fast-forward or it fails.
    await run(['push', '-q', p.gitUrl, `${commit}:refs/heads/${c.branch}`], `pushing ${c.branch}`);
    return commit;
  });
}

/** The reply to the person who asked, after `@login, `. */
export function ciReply(outcome: CiCommitOutcome): string {
  return outcome.kind === 'pushed'
    ? `pushed commit ${outcome.commit.slice(0, 12)} (empty, without \`[skip ci]\`): the repository's workflows now run on this pull request.`
    : `nothing pushed: ${outcome.reason}`;
}

/** A failure, answered: a retried delivery must not push twice. */
export function ciFailedReply(error: unknown): string {
  return `pushing the CI commit failed: ${failureLine(error)}`;
}

/** Intake's `onCi`: pushes with an installation token, answers in one sentence. */
export function ciCommandHandler(deps: PrCommandDeps) {
  return prCommand(
    deps,
    '/frognano ci',
    async (target) => ciReply(await pushCiCommit(target)),
    ciFailedReply,
  );
}
