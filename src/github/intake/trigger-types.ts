// The shapes a webhook becomes once filtered (triggers.ts, review-triggers.ts): one file, so the
// two readers of events share them without importing each other.
import type { RepoVisibility } from '../job.js';

/** Everything later stages need about the issue and the person who triggered us. */
export interface TriggerTarget {
  installationId: number;
  owner: string;
  repo: string;
  issueNumber: number;
  issueTitle: string;
  issueBody: string;
  defaultBranch?: string;
  /** The repository's visibility, as the payload says it (absent when it does not). */
  visibility?: RepoVisibility;
  sender: { login: string; id: number };
  /** The triggering comment (reactions go there); absent for labels (reactions go on the issue). */
  commentId?: number;
  /** `review_comment`: `commentId` is an inline review comment (its reactions live elsewhere). */
  commentKind?: 'issue' | 'review_comment';
  /** The target is the bot's pull request (a follow-up), `issueNumber` its number. */
  pullRequest?: boolean;
}

/** What a follow-up on the pull request was asked with (review-triggers.ts). */
export interface ReviewTrigger {
  trigger: 'comment' | 'review' | 'review_comment';
  /** The text after `/frognano`, unsanitized. */
  feedback: string;
  /** When the maintainer acted (ISO time). */
  at: string;
}

export type TriggerDecision =
  | { kind: 'ignore'; reason: string }
  | ({
      kind: 'run';
      source: 'label' | 'retry' | 'review';
      guidance?: string;
      review?: ReviewTrigger;
      attempts?: number;
    } & TriggerTarget)
  | ({ kind: 'cancel' } & TriggerTarget)
  /**
   * `/frognano use K` on a pull request (`issueNumber` is the pull request's); `attempt` is
   * undefined when K is not a whole number (refused with the valid range by use-attempt.ts).
   */
  | ({ kind: 'use'; attempt: number | undefined } & TriggerTarget)
  /** `/frognano ci` on a pull request: one empty commit without `[skip ci]` (ci-commit.ts). */
  | ({ kind: 'ci' } & TriggerTarget)
  | ({ kind: 'refuse'; reason: 'closed' | 'locked' } & TriggerTarget);

/** A trigger intake acts on: everything but what is ignored. */
export type AcceptedTrigger = Exclude<TriggerDecision, { kind: 'ignore' }>;
