// The task text of a follow-up run: the same Leaf protocol (leaf-protocol.md), only the first
// user message says more. In this order: the original issue; that the repository is already at
// the previous attempt, with its diff against the base and its test evidence; then the
// feedback (the request, and each review thread with path:line, its diff hunk and comments).
// Every part arrives sanitized (the GitHub side does that); here it is only assembled and capped.

/** The previous attempt's diff is cut to this many characters (its head is kept). */
export const PREVIOUS_DIFF_CHARS = 20_000;
const HUNK_CHARS = 3_000;
const COMMENT_CHARS = 2_000;
const COMMENTS_PER_THREAD = 10;
export const MAX_THREADS = 20;

export interface FollowUpThread {
  path: string;
  /** The line the thread is attached to on the current head (undefined: a file comment). */
  line?: number;
  /** The diff hunk the first comment is attached to. */
  diffHunk: string;
  comments: { author: string; body: string }[];
}

export interface FollowUpEvidence {
  command: string;
  /** e.g. `failed (exit 1)`. */
  before: string;
  after: string;
}

export interface FollowUpInput {
  /** The original issue as the first run saw it: title, blank line, body. */
  issueText: string;
  /** The branch the repository is at (for the statement), e.g. `frognano/issue-7`. */
  branch?: string;
  previousDiff: string;
  evidence?: FollowUpEvidence;
  /** The text the maintainer wrote after `/frognano` (may be empty). */
  request: string;
  threads: FollowUpThread[];
}

export function followUpTask(input: FollowUpInput): string {
  const parts = [input.issueText.trim()];
  const at = input.branch ? ` (branch ${input.branch})` : '';
  parts.push(
    `The repository is already at a previous attempt at this issue${at}. A reviewer asked for changes to it. Build on that attempt: change what the feedback asks for and keep the rest.`,
  );
  const diff = input.previousDiff.trim();
  if (diff === '') {
    parts.push('The previous attempt changed no file.');
  } else {
    const shown =
      diff.length > PREVIOUS_DIFF_CHARS
        ? `${diff.slice(0, PREVIOUS_DIFF_CHARS)}\n[diff cut: ${diff.length - PREVIOUS_DIFF_CHARS} more characters]`
        : diff;
    parts.push(`The previous attempt's diff against the base:\n\n${codeBlock(shown, 'diff')}`);
  }
  if (input.evidence) {
    const e = input.evidence;
    parts.push(
      `The previous attempt's tests, \`${e.command}\`: before the change ${e.before} → after the change ${e.after}.`,
    );
  }
  const request = input.request.trim();
  parts.push(
    request === ''
      ? "The reviewer's feedback is in the review comments below."
      : `The reviewer's feedback:\n\n${request}`,
  );
  const threads = input.threads.slice(0, MAX_THREADS);
  if (threads.length > 0) {
    parts.push(threads.length === 1 ? 'The open review comment:' : 'The open review comments:');
    for (const thread of threads) parts.push(renderThread(thread));
  }
  if (input.threads.length > threads.length) {
    parts.push(`(${input.threads.length - threads.length} more review comments were left out.)`);
  }
  return parts.join('\n\n');
}

function renderThread(thread: FollowUpThread): string {
  const where = thread.line === undefined ? thread.path : `${thread.path}:${thread.line}`;
  const hunk = thread.diffHunk.trim();
  // The end of the hunk is where the comment points.
  const shownHunk = hunk.length > HUNK_CHARS ? `…${hunk.slice(hunk.length - HUNK_CHARS)}` : hunk;
  const comments = thread.comments.slice(-COMMENTS_PER_THREAD).map((c) => {
    const body = c.body.trim();
    const shown = body.length > COMMENT_CHARS ? `${body.slice(0, COMMENT_CHARS)}…` : body;
    return `${c.author}: ${shown}`;
  });
  return [where, codeBlock(shownHunk, 'diff'), ...comments].join('\n');
}

/** A fenced block that the content cannot close early. */
function codeBlock(text: string, info: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${info}\n${text}\n${fence}`;
}
