// Reading issue text costs up to a few seconds of parsing at GitHub's size limit (shapes the
// parser would spend longer on are refused before parsing), too long for the event loop that
// answers webhooks: it runs in a small pool of worker threads, each request with a deadline, so
// one slow body holds one worker while other issues are read on the others.
import { createIssueTextReader } from './issue-text-readers.js';
import type { IssueTextRead } from './sanitize-issue-text.js';

/**
 * How long one request may run on a worker before that worker is terminated and the request
 * refused: a loaded machine starting the worker included (the slowest 64 KB body that is read at all
 * takes about 4 s of CPU here, see `npm run bench`). It counts from when a worker takes it.
 */
export const SANITIZE_DEADLINE_MS = 30_000;

/** How long a request may wait for a free worker (all of them reading slow bodies). */
const QUEUE_MS = 2 * SANITIZE_DEADLINE_MS;

const read = createIssueTextReader({
  deadlineMs: SANITIZE_DEADLINE_MS,
  queueMs: QUEUE_MS,
  // Two cores are common for the App's host: a third worker keeps reads moving while two are
  // held by hostile bodies, and more would only share the same cores.
  workers: 3,
  idleMs: 10_000,
});

/** `readIssueText` for each text, off the main thread. Never rejects. */
export function readIssueTextsOffThread(texts: string[]): Promise<IssueTextRead[]> {
  return read(texts);
}
