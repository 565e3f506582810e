// Where `_extends` may lead: the App reads every file it names with the installation token, and
// what that file says (instructions, setup, image) can end up in the pull request, which is as
// public as the running repository. So `_extends` is followed only to the owner's `.github`
// repository (the owner's own place for settings every repository gets) or to a repository no
// more private than the running one. Both visibilities come from GitHub: the running one from
// the webhook (asked of the API when the run does not carry it), the target's from the API.
import { RepoConfigError } from '../runner/repo-config.js';
import { repoVisibility, type RepoVisibility } from './job.js';
import type { GitHubClient, RepoRef } from './octokit.js';

const RANK: Record<RepoVisibility, number> = { public: 0, internal: 1, private: 2 };

/**
 * Checks one `_extends` target named by the file `namedBy`; throws RepoConfigError (one line)
 * when the running repository may not extend it. Visibilities are asked once per repository.
 */
export type ExtendsGuard = (target: RepoRef, namedBy: string) => Promise<void>;

export function extendsGuard(
  octokit: GitHubClient,
  running: RepoRef,
  known: RepoVisibility | undefined,
): ExtendsGuard {
  const asked = new Map<string, Promise<RepoVisibility | undefined>>();
  const visibility = (repo: RepoRef) => {
    const key = `${repo.owner}/${repo.repo}`.toLowerCase();
    let answer = asked.get(key);
    if (!answer) asked.set(key, (answer = askVisibility(octokit, repo)));
    return answer;
  };
  return async (target, namedBy) => {
    if (isOwnersDotGithub(target, running)) return;
    // Unknown (not even the API says): as strict as public.
    const mine = known ?? (await visibility(running)) ?? 'public';
    if (mine === 'private') return;
    const theirs = await visibility(target);
    if (theirs !== undefined && RANK[theirs] <= RANK[mine]) return;
    throw new RepoConfigError(refusal(target, namedBy, running, mine, theirs));
  };
}

function isOwnersDotGithub(target: RepoRef, running: RepoRef): boolean {
  return (
    target.owner.toLowerCase() === running.owner.toLowerCase() &&
    target.repo.toLowerCase() === '.github'
  );
}

/** What GitHub says of the repository's visibility; undefined when the App cannot see it. */
async function askVisibility(
  octokit: GitHubClient,
  repo: RepoRef,
): Promise<RepoVisibility | undefined> {
  try {
    const { data } = await octokit.request('GET /repos/{owner}/{repo}', {
      owner: repo.owner,
      repo: repo.repo,
    });
    return repoVisibility(data as { private?: boolean; visibility?: string });
  } catch (error) {
    const status = (error as { status?: number }).status;
    if (status === 404 || status === 403) return undefined;
    const words = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
    throw new RepoConfigError(
      `the configuration cannot be read: asking GitHub whether ${repo.owner}/${repo.repo} is public failed (${status === undefined ? words : `HTTP ${status}: ${words}`})`,
    );
  }
}

function refusal(
  target: RepoRef,
  namedBy: string,
  running: RepoRef,
  mine: Exclude<RepoVisibility, 'private'>,
  theirs: RepoVisibility | undefined,
): string {
  // Not found reads as not public: the words must not tell a private repository exists.
  const what =
    mine === 'public' ? 'not public' : theirs === 'private' ? 'private' : 'not public or internal';
  const may = mine === 'public' ? 'public repositories' : 'public or internal repositories';
  // Every file before this one was checked no more private than the running repository, but the
  // owner's .github repository may be private: the name its file gives is a value from it.
  const fromDotGithub = namedBy.toLowerCase().startsWith(`${running.owner.toLowerCase()}/.github:`);
  const named = fromDotGithub ? 'a repository' : `${target.owner}/${target.repo},`;
  return `${namedBy}: _extends names ${named} which is ${what}: ${running.owner}/${running.repo} is ${mine}, so it may extend only ${may} and the owner's .github repository`;
}
