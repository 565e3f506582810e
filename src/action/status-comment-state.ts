// What the bot's status comment says about its run, read back by a later workflow run (each
// starts on a fresh runner with nothing of the one before): whether a run is still queued or
// running, and its id. The comment's text is renderStatus's (src/github/status-comment.ts);
// test/action/status-comment-state.test.ts reads every state it renders.
import { STATUS_MARKER } from '../github/status/index.js';

export interface StatusCommentState {
  /** A run is queued or running (a cancel has something to stop). */
  active: boolean;
  runId?: string;
}

const ACTIVE =
  /^🐸 \*\*frognano\*\*: (queued \(|running: |the previous attempt was interrupted by a restart; queued again)/;
const RUN_ID = /<sub>.*\brun `([0-9a-f-]{36})`.*<\/sub>\s*$/;

export function readStatusComment(body: string): StatusCommentState | undefined {
  if (!body.startsWith(STATUS_MARKER)) return undefined;
  const first = body.slice(STATUS_MARKER.length).trimStart().split('\n')[0] ?? '';
  const runId = RUN_ID.exec(body)?.[1];
  return { active: ACTIVE.test(first), ...(runId ? { runId } : {}) };
}
