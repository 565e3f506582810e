// Revisions as the mirror knows them: the remote's HEAD, a commit, branch or tag (a commit no
// branch points at is fetched), and a follow-up's origin, the merge base with its base revision.
import type { SimpleGit } from 'simple-git';
import { CloneError } from './clone-error.js';
import type { Source } from './git-source.js';

export async function resolveRevision(
  git: SimpleGit,
  revision: string | undefined,
  source: Source,
  fail: (what: string, e: unknown) => never,
): Promise<string> {
  if (revision === undefined || revision === '') {
    // The remote's HEAD now (the mirror's own HEAD is only set at clone time).
    const out = await git
      .raw(['ls-remote', '--', 'origin', 'HEAD'])
      .catch((e: unknown) => fail(`cannot read HEAD of ${source.display}`, e));
    const sha = /^([0-9a-f]{40,64})\tHEAD$/m.exec(out)?.[1];
    if (!sha) throw new CloneError(`${source.display} has no HEAD (an empty repository?)`);
    if (await commitExists(git, sha)) return sha;
    await git
      .raw(['fetch', '--quiet', 'origin', sha])
      .catch((e: unknown) => fail(`cannot fetch HEAD of ${source.display}`, e));
    return sha;
  }
  if (revision.startsWith('-') || /[\s\0~^:?*[\\]/.test(revision.replace(/\^\{commit\}$/, ''))) {
    throw new CloneError(
      `revision ${JSON.stringify(revision)} is not a valid commit, branch or tag name`,
    );
  }
  const found = await revParse(git, revision);
  if (found) return found;
  if (/^[0-9a-f]{7,64}$/i.test(revision)) {
    // A commit no branch points at (e.g. a fork's pull request head) can still be fetched.
    await git.raw(['fetch', '--quiet', 'origin', revision]).catch(() => undefined);
    const fetched = await revParse(git, revision);
    if (fetched) return fetched;
  }
  throw new CloneError(`revision ${revision} not found in ${source.display}`);
}

/**
 * A follow-up's origin: where `baseRevision` and the run's commit part (the commit the previous
 * attempts started from, however far the base branch moved on since).
 */
export async function mergeBase(
  git: SimpleGit,
  baseRevision: string,
  baseCommit: string,
  source: Source,
  fail: (what: string, e: unknown) => never,
): Promise<string> {
  const base = await resolveRevision(git, baseRevision, source, fail).catch(() => {
    throw new CloneError(`the diff base ${baseRevision} is not in the repository`);
  });
  const sha = (await git.raw(['merge-base', base, baseCommit]).catch(() => '')).trim();
  if (!/^[0-9a-f]{40,64}$/.test(sha))
    throw new CloneError(`the diff base ${baseRevision} shares no history with ${baseCommit}`);
  return sha;
}

export async function revParse(git: SimpleGit, revision: string): Promise<string | undefined> {
  const out = await git
    .raw(['rev-parse', '--verify', '--quiet', '--end-of-options', `${revision}^{commit}`])
    .catch(() => '');
  const sha = out.trim();
  return /^[0-9a-f]{40,64}$/.test(sha) ? sha : undefined;
}

async function commitExists(git: SimpleGit, sha: string): Promise<boolean> {
  return (await revParse(git, sha)) === sha;
}
