// The original issue's text for a follow-up run in a workflow, where no record of what the first
// run saw is kept. The issue as it is now, but only if nobody without write access has changed
// it since the bot opened its pull request: its author (maybe anyone) can edit it at any time,
// and such an edit must not steer a follow-up a maintainer asked for. GitHub keeps who edited
// the body and who renamed the title, and when; one GraphQL query reads both.
import type { GitHubClient } from '../github/octokit.js';
import { hasWriteAccess } from '../github/intake/index.js';
import { readIssueTextsOffThread } from '../github/sanitize-off-thread.js';

const ISSUE_QUERY = `query($owner: String!, $repo: String!, $number: Int!) {
  repository(owner: $owner, name: $repo) {
    issue(number: $number) {
      title
      body
      userContentEdits(last: 100) { nodes { editedAt editor { login } } }
      timelineItems(itemTypes: [RENAMED_TITLE_EVENT], last: 100) {
        nodes { ... on RenamedTitleEvent { createdAt actor { login } } }
      }
    }
  }
}`;

interface IssueResponse {
  repository?: {
    issue?: {
      title: string;
      body: string;
      userContentEdits?: {
        nodes?: ({ editedAt: string; editor: { login: string } | null } | null)[];
      };
      timelineItems?: {
        nodes?: ({ createdAt?: string; actor?: { login: string } | null } | null)[];
      };
    } | null;
  } | null;
}

/** People whose write access is asked at most: an issue edited by more is not used. */
const MAX_EDITORS = 5;

export interface IssueTextNow {
  issueTitle: string;
  /** Sanitized: title, blank line, body (or a line saying why it is not shown). */
  issueText: string;
}

export async function issueTextNow(
  octokit: GitHubClient,
  p: { owner: string; repo: string; issueNumber: number; since: string; bot: string },
): Promise<IssueTextNow> {
  const withheld = (why: string): IssueTextNow => ({
    issueTitle: `issue #${p.issueNumber}`,
    issueText: `Issue #${p.issueNumber}: its text is not shown here, because ${why}. Work from the previous attempt and the feedback.`,
  });
  const data = await octokit.graphql<IssueResponse>(ISSUE_QUERY, {
    owner: p.owner,
    repo: p.repo,
    number: p.issueNumber,
  });
  const issue = data.repository?.issue;
  if (!issue) return withheld('it cannot be read any more');
  const changers = changedBy(issue, Date.parse(p.since));
  if (changers === undefined || changers.size > MAX_EDITORS) {
    return withheld('it was changed after the pull request was opened by too many people');
  }
  for (const login of changers) {
    if (login.toLowerCase() === p.bot.toLowerCase()) continue;
    const allowed = login !== '' && (await hasWriteAccess(octokit, { ...p, username: login }));
    if (!allowed) {
      return withheld(
        'it was changed after the pull request was opened by someone without write access',
      );
    }
  }
  const [read] = await readIssueTextsOffThread([`${issue.title}\n\n${issue.body}`]);
  if (!read?.ok) return withheld(read?.reason ?? 'it could not be read');
  return { issueTitle: issue.title, issueText: read.text };
}

/** Logins that edited the body or renamed the title after `since` ('' for a deleted user). */
function changedBy(
  issue: NonNullable<NonNullable<IssueResponse['repository']>['issue']>,
  since: number,
): Set<string> | undefined {
  const edits = issue.userContentEdits?.nodes ?? [];
  const renames = issue.timelineItems?.nodes ?? [];
  // A full page may hide older changes after `since`: not trusted.
  if (edits.length >= 100 || renames.length >= 100) return undefined;
  const who = new Set<string>();
  for (const e of edits) {
    if (e && Date.parse(e.editedAt) > since) who.add(e.editor?.login ?? '');
  }
  for (const r of renames) {
    if (r?.createdAt && Date.parse(r.createdAt) > since) who.add(r.actor?.login ?? '');
  }
  return who;
}
