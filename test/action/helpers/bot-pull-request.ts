// The bot's draft pull request #7 for issue #1 as GitHub holds it after a first workflow run
// opened it: its author github-actions[bot], its head `frognano/issue-1`, the compare view
// GitHub derives from git, the issue (with the edits GitHub keeps of it), and what a follow-up
// run writes back (a new body, replies).
import { OWNER, REPO, REPO_PATH, type GitHubMock } from '../../github/helpers/app-harness.js';
import { ACTIONS_BOT } from './action-github.js';

export interface BotPullRequest {
  number: number;
  head: string;
  base: string;
  body: string;
  createdAt: string;
  author?: string;
}

export interface IssueEdit {
  editedAt: string;
  editor: string;
}

export interface FollowUpWrites {
  bodies: string[];
  replies: string[];
  /** The issue text GitHub gave the bot (what a reader's edit would change). */
  issueBody: string;
}

/** Everything GitHub answers a follow-up run on PR #7 about the pull request and issue #1. */
export function mockBotPullRequest(
  gh: GitHubMock,
  pr: BotPullRequest,
  issue: { title: string; body: string; edits?: IssueEdit[]; threads?: unknown[] },
): FollowUpWrites {
  const writes: FollowUpWrites = { bodies: [], replies: [], issueBody: issue.body };
  gh.intercept({
    method: 'GET',
    path: `${REPO_PATH}/pulls/${pr.number}`,
    status: 200,
    persist: true,
    auth: 'installation',
    reply: () => ({
      number: pr.number,
      title: 'frognano: add() subtracts instead of adding',
      state: 'open',
      draft: true,
      body: writes.bodies.at(-1) ?? pr.body,
      created_at: pr.createdAt,
      head: { ref: 'frognano/issue-1', sha: pr.head, repo: { full_name: `${OWNER}/${REPO}` } },
      base: { ref: 'master', sha: pr.base },
      user: { login: pr.author ?? ACTIONS_BOT, type: 'Bot' },
    }),
  });
  gh.intercept({
    method: 'GET',
    path: `${REPO_PATH}/compare/${pr.base}...${pr.head}`,
    status: 200,
    auth: 'installation',
    optional: true,
    reply: () => ({
      merge_base_commit: { sha: pr.base },
      commits: [{ sha: pr.head, author: { login: pr.author ?? ACTIONS_BOT } }],
    }),
  });
  gh.intercept({
    method: 'POST',
    path: '/graphql',
    body: (b) => String(b.query).includes('userContentEdits'),
    status: 200,
    auth: 'installation',
    optional: true,
    reply: () => ({
      data: {
        repository: {
          issue: {
            title: issue.title,
            body: issue.body,
            userContentEdits: {
              nodes: (issue.edits ?? []).map((e) => ({
                editedAt: e.editedAt,
                editor: { login: e.editor },
              })),
            },
            timelineItems: { nodes: [] },
          },
        },
      },
    }),
  });
  gh.intercept({
    method: 'POST',
    path: '/graphql',
    body: (b) => String(b.query).includes('reviewThreads'),
    status: 200,
    auth: 'installation',
    optional: true,
    reply: () => ({
      data: { repository: { pullRequest: { reviewThreads: { nodes: issue.threads ?? [] } } } },
    }),
  });
  gh.intercept({
    method: 'PATCH',
    path: `${REPO_PATH}/pulls/${pr.number}`,
    status: 200,
    auth: 'installation',
    optional: true,
    reply: (body) => {
      writes.bodies.push(String(body.body));
      return { number: pr.number };
    },
  });
  return writes;
}
