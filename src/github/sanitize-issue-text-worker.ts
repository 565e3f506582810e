// The worker thread behind sanitize-off-thread.ts: reads issue texts, one message at a time.
import { parentPort } from 'node:worker_threads';
import { readIssueText } from './sanitize-issue-text.js';

if (!parentPort) throw new Error('sanitize-issue-text-worker runs only as a worker thread');
const port = parentPort;
port.on('message', (message: { id: number; texts: string[] }) => {
  port.postMessage({ id: message.id, reads: message.texts.map((t) => readIssueText(t)) });
});
