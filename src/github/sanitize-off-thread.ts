// Reading issue text costs up to a few hundred milliseconds of parsing (more on hostile input),
// too long for the event loop that answers webhooks: it runs in one worker thread, one request at
// a time, with a deadline. A worker that overruns it is terminated and the text refused.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { IssueTextRead } from './sanitize-issue-text.js';

/**
 * How long one request may take before its worker is terminated: a loaded machine starting the
 * worker included (hostile shapes are refused before parsing; dense text parses in ~1 s).
 */
export const SANITIZE_DEADLINE_MS = 30_000;

interface Pending {
  resolve: (reads: IssueTextRead[]) => void;
  count: number;
  timer: NodeJS.Timeout;
}

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, Pending>();

function spawn(): Worker {
  const here = import.meta.url;
  // tsx in dev and tests (the entry is TypeScript), compiled JavaScript in production.
  const entry = new URL(
    `./sanitize-issue-text-worker${here.endsWith('.ts') ? '.ts' : '.js'}`,
    here,
  );
  const w = here.endsWith('.ts')
    ? new Worker(
        `import(${JSON.stringify(tsxApi(here))})` +
          `.then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); });`,
        { eval: true, execArgv: [] },
      )
    : // The parent's flags (`--input-type`, a test runner's loaders) do not apply to this file.
      new Worker(entry, { execArgv: [] });
  w.on('message', (m: { id: number; reads: IssueTextRead[] }) => {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    clearTimeout(p.timer);
    p.resolve(m.reads);
    if (pending.size === 0) w.unref();
  });
  const fail = (reason: string) => {
    if (worker === w) worker = undefined;
    for (const [id, p] of pending) {
      pending.delete(id);
      clearTimeout(p.timer);
      p.resolve(Array.from({ length: p.count }, () => ({ ok: false as const, reason })));
    }
  };
  w.on('error', (error) => fail(`reading the issue text failed (${error.message})`));
  w.on('exit', () => fail('reading the issue text stopped unexpectedly'));
  return w;
}

/** tsx's ESM API, next to its CommonJS build (the package exports it under `import` only). */
function tsxApi(from: string): string {
  return pathToFileURL(
    createRequire(from)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
}

/** `readIssueText` for each text, in a worker thread. Never rejects. */
export function readIssueTextsOffThread(texts: string[]): Promise<IssueTextRead[]> {
  return new Promise((resolve) => {
    worker ??= spawn();
    const w = worker;
    const id = (nextId += 1);
    const timer = setTimeout(() => {
      pending.delete(id);
      resolve(
        texts.map(() => ({
          ok: false as const,
          reason: `reading the issue text took longer than ${SANITIZE_DEADLINE_MS / 1000} s`,
        })),
      );
      // Whatever else it was doing is lost with it; those requests are refused the same way.
      if (worker === w) worker = undefined;
      void w.terminate();
    }, SANITIZE_DEADLINE_MS);
    timer.unref();
    pending.set(id, { resolve, count: texts.length, timer });
    w.ref();
    w.postMessage({ id, texts });
  });
}
