// What a queued run carries: a snapshot of the trigger, taken when the maintainer acted, so
// an issue edited after labelling cannot change what the model is asked.
import { z } from 'zod';

export const IssueJob = z.object({
  installationId: z.number().int(),
  owner: z.string(),
  repo: z.string(),
  issueNumber: z.number().int().positive(),
  issueTitle: z.string(),
  /** Already sanitized (see sanitize-issue-text.ts). */
  issueText: z.string(),
  defaultBranch: z.string().optional(),
  sender: z.object({ login: z.string(), id: z.number().int() }),
  source: z.enum(['label', 'retry']),
  /** Already sanitized. */
  guidance: z.string().optional(),
  /** Parallel attempts asked for by `/frognano retry xN` (the repository config's otherwise). */
  attempts: z.number().int().min(1).max(8).optional(),
  deliveryId: z.string(),
});
export type IssueJob = z.infer<typeof IssueJob>;
