// What the App keeps in its data directory about a pull request it opened (the published-attempt
// record, src/github/revision-record.ts), recovered from GitHub for a workflow run that starts
// with an empty RUNNER_TEMP. Only from what nobody but the bot could have written: the pull
// request's author (GitHub sets it to whoever opened it) and its head branch `frognano/issue-N`
// in the repository itself (fixed when the pull request is opened), never its title or body,
// which people with write access edit. From there: the base the attempt started from is where
// the branch leaves the base branch (a commit of the base branch, so a test harness the model
// wrote never judges a revision), the revisions are the bot's commits on it, and the issue text
// is issue N's, when nobody without write access changed it since (issue-text-now.ts).
import type { GitHubClient } from '../github/octokit.js';
import { issueNumberOfBranch, type PublishedAttempt } from '../github/publishing/index.js';
import { issueTextNow } from './issue-text-now.js';

export async function recoverPublishedAttempt(
  octokit: GitHubClient,
  p: { owner: string; repo: string; prNumber: number; bot: string },
): Promise<PublishedAttempt | undefined> {
  const { data: pr } = await octokit.rest.pulls.get({
    owner: p.owner,
    repo: p.repo,
    pull_number: p.prNumber,
  });
  const issueNumber = issueNumberOfBranch(pr.head.ref);
  const sameRepo = pr.head.repo?.full_name?.toLowerCase() === `${p.owner}/${p.repo}`.toLowerCase();
  const byBot = pr.user?.login.toLowerCase() === p.bot.toLowerCase();
  if (issueNumber === undefined || !sameRepo || !byBot) return undefined;
  const { data: compare } = await octokit.rest.repos.compareCommitsWithBasehead({
    owner: p.owner,
    repo: p.repo,
    basehead: `${pr.base.sha}...${pr.head.sha}`,
    per_page: 100,
  });
  const botCommits = compare.commits.filter(
    (c) => c.author?.login.toLowerCase() === p.bot.toLowerCase(),
  ).length;
  const issue = await issueTextNow(octokit, {
    owner: p.owner,
    repo: p.repo,
    issueNumber,
    since: pr.created_at,
    bot: p.bot,
  });
  return {
    prNumber: pr.number,
    branch: pr.head.ref,
    baseBranch: pr.base.ref,
    baseCommit: compare.merge_base_commit.sha,
    head: pr.head.sha,
    issueTitle: issue.issueTitle,
    issueText: issue.issueText,
    revision: Math.max(1, botCommits),
  };
}
