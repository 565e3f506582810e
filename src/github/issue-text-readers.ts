// A small pool of worker threads reading issue text. One hostile body holds one worker, never
// the others: a request that overruns its deadline has only its own worker terminated, and the
// deadline counts from when a worker starts on it, so time spent queued behind someone else's
// body is not charged to it (a separate, longer bound limits that wait).
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { IssueTextRead } from './sanitize-issue-text.js';

export interface IssueTextReaderOptions {
  /** How long one request may run on a worker before that worker is terminated. */
  deadlineMs: number;
  /** How long a request may wait for a free worker before it is refused. */
  queueMs: number;
  /** At most this many worker threads at once. */
  workers: number;
  /** A worker beyond the first that has had nothing to do for this long is terminated. */
  idleMs: number;
}

interface Request {
  texts: string[];
  resolve: (reads: IssueTextRead[]) => void;
  /** Set while queued: refuses the request when no worker took it in time. */
  queueTimer?: NodeJS.Timeout;
}

interface Slot {
  worker: Worker;
  /** The request it is reading, with its deadline. */
  busy?: { request: Request; timer: NodeJS.Timeout };
  idleTimer?: NodeJS.Timeout;
}

/** `readIssueText` for each text, in a pool of worker threads. The reader never rejects. */
export function createIssueTextReader(
  options: IssueTextReaderOptions,
): (texts: string[]) => Promise<IssueTextRead[]> {
  const slots: Slot[] = [];
  const queue: Request[] = [];
  const tooLong = `reading the issue text took longer than ${options.deadlineMs / 1000} s`;
  const drop = (slot: Slot, reason: string) => {
    const at = slots.indexOf(slot);
    if (at < 0) return;
    slots.splice(at, 1);
    clearTimeout(slot.idleTimer);
    if (slot.busy) {
      clearTimeout(slot.busy.timer);
      refuse(slot.busy.request, reason);
      slot.busy = undefined;
    }
    void slot.worker.terminate();
    dispatch();
  };

  const idle = (slot: Slot) => {
    slot.worker.unref();
    // The first worker stays (unref'd, it keeps no process alive): the next read needs no start.
    if (slots.indexOf(slot) === 0) return;
    slot.idleTimer = setTimeout(() => drop(slot, tooLong), options.idleMs);
    slot.idleTimer.unref();
  };

  const spawn = (): Slot => {
    const slot: Slot = { worker: startWorker() };
    slot.worker.on('message', (reads: IssueTextRead[]) => {
      const busy = slot.busy;
      if (!busy) return;
      slot.busy = undefined;
      clearTimeout(busy.timer);
      busy.request.resolve(reads);
      dispatch();
      if (!slot.busy) idle(slot);
    });
    slot.worker.on('error', (error) =>
      drop(slot, `reading the issue text failed (${error.message})`),
    );
    slot.worker.on('exit', () => drop(slot, 'reading the issue text stopped unexpectedly'));
    slots.push(slot);
    return slot;
  };

  const start = (slot: Slot, request: Request) => {
    clearTimeout(slot.idleTimer);
    clearTimeout(request.queueTimer);
    const timer = setTimeout(() => drop(slot, tooLong), options.deadlineMs);
    timer.unref();
    slot.busy = { request, timer };
    slot.worker.ref();
    slot.worker.postMessage(request.texts);
  };

  function dispatch(): void {
    while (queue.length > 0) {
      const slot =
        slots.find((s) => !s.busy) ?? (slots.length < options.workers ? spawn() : undefined);
      if (!slot) return;
      start(slot, queue.shift()!);
    }
  }

  return (texts) =>
    new Promise((resolve) => {
      const request: Request = { texts, resolve };
      request.queueTimer = setTimeout(() => leaveQueue(queue, request, tooLong), options.queueMs);
      request.queueTimer.unref();
      queue.push(request);
      dispatch();
    });
}

function refuse(request: Request, reason: string): void {
  request.resolve(request.texts.map(() => ({ ok: false as const, reason })));
}

/** Refuses a request still waiting for a worker. */
function leaveQueue(queue: Request[], request: Request, reason: string): void {
  const at = queue.indexOf(request);
  if (at < 0) return;
  queue.splice(at, 1);
  refuse(request, reason);
}

function startWorker(): Worker {
  const here = import.meta.url;
  // tsx in dev and tests (the entry is TypeScript), compiled JavaScript in production.
  const entry = new URL(
    `./sanitize-issue-text-worker${here.endsWith('.ts') ? '.ts' : '.js'}`,
    here,
  );
  return here.endsWith('.ts')
    ? new Worker(
        `import(${JSON.stringify(tsxApi(here))})` +
          `.then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); });`,
        { eval: true, execArgv: [] },
      )
    : // The parent's flags (`--input-type`, a test runner's loaders) do not apply to this file.
      new Worker(entry, { execArgv: [] });
}

/** tsx's ESM API, next to its CommonJS build (the package exports it under `import` only). */
function tsxApi(from: string): string {
  return pathToFileURL(
    createRequire(from)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
}
