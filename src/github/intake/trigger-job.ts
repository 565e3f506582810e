import type { IssueJob } from '../job.js';
import type { AcceptedTrigger } from './trigger-types.js';

/**
 * The run's job: a snapshot of the trigger, taken when the maintainer acted, its text still raw
 * (held runs only carry it until `visibleJob` replaces it).
 */
export function jobFor(
  deliveryId: string,
  decision: Extract<AcceptedTrigger, { kind: 'run' }>,
): IssueJob {
  return {
    installationId: decision.installationId,
    owner: decision.owner,
    repo: decision.repo,
    issueNumber: decision.issueNumber,
    issueTitle: decision.issueTitle,
    // Raw here: read (sanitized) off the event loop after the permission check (visibleJob).
    // A follow-up's issue text is the original issue, recorded when that was published.
    issueText: decision.review ? '' : `${decision.issueTitle}\n\n${decision.issueBody}`,
    defaultBranch: decision.defaultBranch,
    ...(decision.visibility ? { visibility: decision.visibility } : {}),
    sender: decision.sender,
    source: decision.source,
    guidance: decision.guidance,
    ...(decision.attempts !== undefined ? { attempts: decision.attempts } : {}),
    deliveryId,
    ...(decision.review
      ? {
          review: {
            trigger: decision.review.trigger,
            feedback: decision.review.feedback,
            at: decision.review.at,
          },
        }
      : {}),
  };
}
