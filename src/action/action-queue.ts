// The queue a workflow run's Intake and WorkerPool share: the App's SQLite queue in the (empty)
// data directory, with the two things that outlive one workflow run answered from GitHub
// instead. The published-attempt record of the bot's pull request (which intake asks to know
// the pull request is ours and the worker to brief a follow-up) is recovered from what only the
// bot wrote (recover-attempt.ts); a cancel reaches the run another workflow run is running
// through the bot's status comment (remote-cancel.ts).
import type { Queue, RunRecord } from '../queue/types.js';
import type { IssueJob } from '../github/job.js';
import { REVISION_NOTE, type PublishedAttempt } from '../github/publishing/index.js';

export interface ActionQueueDeps {
  /** The record of the event's pull request, recovered from GitHub (asked at most once). */
  recover: () => Promise<{ key: string; attempt: PublishedAttempt } | undefined>;
  /** Asks the run shown on the issue to stop; its id, or undefined when none runs. */
  cancelRemote: (key: string) => Promise<string | undefined>;
  /** The event's trigger as a job (what a cancelled run's record carries here). */
  job: IssueJob;
}

export function actionQueue(queue: Queue<IssueJob>, deps: ActionQueueDeps): Queue<IssueJob> {
  const written = new Map<string, string>();
  let recovered: ReturnType<ActionQueueDeps['recover']> | undefined;
  const getNote = async (key: string, name: string): Promise<string | undefined> => {
    if (name !== REVISION_NOTE) return queue.getNote(key, name);
    const mine = written.get(key);
    if (mine !== undefined) return mine;
    recovered ??= deps.recover();
    const found = await recovered;
    return found?.key === key ? JSON.stringify(found.attempt) : undefined;
  };
  const setNote = async (key: string, name: string, value: string | undefined) => {
    if (name === REVISION_NOTE && value !== undefined) written.set(key, value);
    await queue.setNote(key, name, value);
  };
  const requestCancel = async (key: string) => {
    const local = await queue.requestCancel(key);
    if (local) return local;
    const runId = await deps.cancelRemote(key);
    return runId ? { run: remoteRun(runId, key, deps.job), wasRunning: true } : undefined;
  };
  const own: Partial<Queue<IssueJob>> = { getNote, setNote, requestCancel };
  return new Proxy(queue, {
    get(target, prop) {
      if (Object.hasOwn(own, prop)) return own[prop as keyof typeof own];
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}

/** The run another workflow run is running, as far as this one knows it. */
function remoteRun(id: string, key: string, job: IssueJob): RunRecord<IssueJob> {
  return {
    id,
    key,
    group: key,
    state: 'running',
    attempts: 1,
    job,
    cancelRequested: true,
    restCalls: 0,
    createdAt: Date.now(),
    held: false,
  };
}
