// A worker thread behind issue-text-readers.ts: reads issue texts, one request at a time.
import { parentPort } from 'node:worker_threads';
import { readIssueText } from './sanitize-issue-text.js';

if (!parentPort) throw new Error('sanitize-issue-text-worker runs only as a worker thread');
const port = parentPort;
port.on('message', (texts: string[]) => {
  port.postMessage(texts.map((t) => readIssueText(t)));
});
