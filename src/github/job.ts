// What a queued run carries: a snapshot of the trigger, taken when the maintainer acted, so
// an issue edited after labelling cannot change what the model is asked.
import { z } from 'zod';

/** Who may read a repository, as GitHub says: `visibility`, or `private` where it is absent. */
export const RepoVisibility = z.enum(['public', 'internal', 'private']);
export type RepoVisibility = z.infer<typeof RepoVisibility>;

/** The visibility of a repository as a webhook payload or the REST API describes it. */
export function repoVisibility(repository: {
  private?: boolean | undefined;
  visibility?: string | undefined;
}): RepoVisibility | undefined {
  const named = RepoVisibility.safeParse(repository.visibility);
  if (named.success) return named.data;
  if (repository.private === undefined) return undefined;
  return repository.private ? 'private' : 'public';
}

/** `{ visibility }` when the repository tells it, for spreading into a trigger. */
export function visibilityOf(repository: {
  private?: boolean | undefined;
  visibility?: string | undefined;
}): { visibility?: RepoVisibility } {
  const visibility = repoVisibility(repository);
  return visibility ? { visibility } : {};
}

export const IssueJob = z.object({
  installationId: z.number().int(),
  owner: z.string(),
  repo: z.string(),
  issueNumber: z.number().int().positive(),
  issueTitle: z.string(),
  /** Already sanitized (see sanitize-issue-text.ts). */
  issueText: z.string(),
  defaultBranch: z.string().optional(),
  /** The repository's, from the webhook (what `_extends` may reach depends on it). */
  visibility: RepoVisibility.optional(),
  sender: z.object({ login: z.string(), id: z.number().int() }),
  source: z.enum(['label', 'retry', 'review']),
  /** Already sanitized. */
  guidance: z.string().optional(),
  /** Parallel attempts asked for by `/frognano retry xN` (the repository config's otherwise). */
  attempts: z.number().int().min(1).max(8).optional(),
  deliveryId: z.string(),
  /** A follow-up on the bot's pull request (`issueNumber` is then the PR's number). */
  review: z
    .object({
      trigger: z.enum(['comment', 'review', 'review_comment']),
      /** The feedback after `/frognano`, already sanitized (may be empty for a review). */
      feedback: z.string(),
      /** When the maintainer acted: only review comments made until then are feedback. */
      at: z.string(),
    })
    .optional(),
});
export type IssueJob = z.infer<typeof IssueJob>;

export function issueKey(t: { owner: string; repo: string; issueNumber: number }): string {
  return `${t.owner}/${t.repo}#${t.issueNumber}`.toLowerCase();
}
