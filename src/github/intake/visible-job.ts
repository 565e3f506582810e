import type { IssueJob } from '../job.js';
import { readIssueTextsOffThread } from '../sanitize-off-thread.js';

/** The job with only the text a reader of the issue sees, or why its text cannot be used. */
export async function visibleJob(job: IssueJob): Promise<IssueJob | { unreadable: string }> {
  const [text, guidance, feedback] = await readIssueTextsOffThread([
    job.issueText,
    job.guidance ?? '',
    job.review?.feedback ?? '',
  ]);
  if (!text?.ok) return { unreadable: text?.reason ?? 'the issue text could not be read' };
  if (job.review && !feedback?.ok) {
    return { unreadable: feedback?.reason ?? 'the feedback could not be read' };
  }
  return {
    ...job,
    issueText: text.text,
    // Guidance that cannot be read is dropped, as empty guidance is: the issue stands alone.
    guidance: (guidance?.ok && guidance.text) || undefined,
    ...(job.review && feedback?.ok ? { review: { ...job.review, feedback: feedback.text } } : {}),
  };
}
