import type { GitHubClient } from '../octokit.js';
import type { TriggerTarget } from './trigger-types.js';

/** The quick sign of life: eyes on the comment that triggered us, or on the issue. */
export async function react(octokit: GitHubClient, t: TriggerTarget): Promise<void> {
  if (t.commentId !== undefined && t.commentKind === 'review_comment') {
    await octokit.rest.reactions.createForPullRequestReviewComment({
      owner: t.owner,
      repo: t.repo,
      comment_id: t.commentId,
      content: 'eyes',
    });
  } else if (t.commentId !== undefined) {
    await octokit.rest.reactions.createForIssueComment({
      owner: t.owner,
      repo: t.repo,
      comment_id: t.commentId,
      content: 'eyes',
    });
  } else {
    await octokit.rest.reactions.createForIssue({
      owner: t.owner,
      repo: t.repo,
      issue_number: t.issueNumber,
      content: 'eyes',
    });
  }
}
