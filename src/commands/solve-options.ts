// `frognano solve` flags, validated at the boundary with one line per mistake.
import { z } from 'zod';
import { modelUrlListProblem } from '../model-fleet/endpoint-url.js';

const positiveInt = (flag: string) =>
  z
    .string()
    .regex(/^\d+$/, { message: `${flag} must be a positive whole number` })
    .transform(Number)
    .refine((n) => n > 0, { message: `${flag} must be a positive whole number` });

export const SolveOptions = z
  .object({
    repo: z.string({ message: '--repo is required: a local git repository or a clone URL' }).min(1),
    issueFile: z.string().min(1).optional(),
    issue: z.string().optional(),
    out: z.string().min(1).default('frognano-out'),
    sandbox: z
      .enum(['docker', 'local'], { message: '--sandbox must be docker or local' })
      .optional(),
    image: z.string().min(1).optional(),
    modelUrl: z
      .string()
      .superRefine((raw, ctx) => {
        const problem = modelUrlListProblem(raw);
        if (problem) ctx.addIssue({ code: 'custom', message: `--model-url ${problem}` });
      })
      .optional(),
    model: z.string().min(1).optional(),
    maxSteps: positiveInt('--max-steps').optional(),
    timeoutMinutes: positiveInt('--timeout-minutes').optional(),
    attempts: z
      .string()
      .regex(/^\d+$/, { message: '--attempts must be a whole number from 1 to 8' })
      .transform(Number)
      .refine((n) => n >= 1 && n <= 8, { message: '--attempts must be a whole number from 1 to 8' })
      .optional(),
    revision: z.string().min(1).optional(),
    feedbackFile: z.string().min(1).optional(),
    base: z.string().min(1).optional(),
  })
  .refine((o) => (o.issueFile === undefined) !== (o.issue === undefined), {
    message: 'give the task with exactly one of --issue-file <file> or --issue <text>',
  })
  .refine((o) => o.issue === undefined || o.issue.trim() !== '', {
    message: '--issue is empty: describe the problem to solve',
  })
  .refine((o) => o.feedbackFile === undefined || o.revision !== undefined, {
    message:
      '--feedback-file needs --revision <branch>: the previous attempt the feedback is about',
  })
  .refine((o) => o.base === undefined || o.feedbackFile !== undefined, {
    message: '--base only goes with --feedback-file (the previous attempt is diffed against it)',
  });
export type SolveOptions = z.infer<typeof SolveOptions>;

export function parseSolveOptions(raw: Record<string, unknown>): SolveOptions {
  const parsed = SolveOptions.safeParse(raw);
  if (parsed.success) return parsed.data;
  throw new UsageError(parsed.error.issues.map((issue) => issue.message).join('; '));
}

/** Bad input from the person at the terminal: printed as one line, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
