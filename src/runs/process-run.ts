// One claimed run from start to end: open the host's side, publish a change left from before or
// run the pipeline and publish its result, settle how it ended, and tell the queue and the host.
import { mkdir } from 'node:fs/promises';
import type { Logger } from 'pino';
import { countRunResult, startPhaseClock, type RunClock } from '../metrics/index.js';
import type { RunRecord } from '../queue/types.js';
import type { RunProgress, RunResult } from '../runner/run-types.js';
import { runOutDir } from '../data-dir.js';
import { JobDeadline } from './job-deadline.js';
import type { WorkerPoolDeps } from './pool-deps.js';
import type { HostRequest, RunSession } from './run-host.js';
import { RunningStatus } from './running-status.js';
import { type Settled, settleRun } from './settle-run.js';
import { shareRunFiles } from './share-run-files.js';

/** What one run sees of its pool. */
export interface PoolView<J> {
  deps: WorkerPoolDeps<J>;
  /** Runs this process lost to another worker: they end here without a word. */
  lost: Set<string>;
  stopped(): boolean;
}

interface Ran {
  settled: Settled;
  result?: RunResult;
}

export async function processRun<J>(
  record: RunRecord<J>,
  controller: AbortController,
  clock: RunClock,
  pool: PoolView<J>,
): Promise<void> {
  const { deps } = pool;
  const log = deps.log.child({ runId: record.id, issue: deps.host.label(record.job) });
  const session = await deps.host.open(record, log);
  await mkdir(runOutDir(deps.dataDir, record.id), { recursive: true });
  const deadline = new JobDeadline(controller, log, {
    graceMs: deps.jobDeadlineGraceMs,
    abandonMs: deps.jobAbandonMs,
  });
  let ran: Ran;
  try {
    ran = await runToEnd(record, session, deadline, pool, log);
  } catch (error) {
    ran = { settled: crashed(error, deadline, log) };
  } finally {
    deadline.clear();
  }
  await closeRun(record, session, ran, { clock, pool, log, controller, deadline });
}

async function runToEnd<J>(
  record: RunRecord<J>,
  session: RunSession,
  deadline: JobDeadline,
  pool: PoolView<J>,
  log: Logger,
): Promise<Ran> {
  const resume = await session.resumablePublish();
  // The change exists (this run's before a restart, or the last run's before a plain retry):
  // only publishing is left, so the model is not asked again.
  if (resume) return { settled: settle({ kind: 'published', status: await resume() }) };
  // A run taken up again after its first attempt was lost says so while it runs.
  const retried = record.attempts > 1 ? true : undefined;
  session.update({ kind: 'running', phase: 'clone', retried });
  const request = await session.request();
  if ('refused' in request)
    return { settled: settle({ kind: 'refused', reason: request.refused }) };
  const result = await runUnderDeadline(record, request, session, deadline, pool, retried);
  await shareRunFiles(
    pool.deps.queue,
    {
      runId: record.id,
      outDir: runOutDir(pool.deps.dataDir, record.id),
      result,
      ttlSeconds: pool.deps.artifactTtlSeconds,
    },
    log,
  );
  const judged = settleRun({
    kind: 'ran',
    result,
    refusal: session.describe(result),
    aborted: deadline.signal.aborted,
    overdueMs: deadline.overdue?.limitMs,
  });
  if (judged !== 'publish') return { settled: judged, result };
  if (!(await pool.deps.queue.stillHeld(record.id))) {
    pool.lost.add(record.id);
    return { settled: settle({ kind: 'lost' }), result };
  }
  return { settled: settle({ kind: 'published', status: await session.publish(result) }), result };
}

/**
 * The host's pipeline (`deps.runPipeline`) under the job deadline: its progress moves the
 * deadline, the phase clock and the running status; an overdue run is abandoned.
 */
async function runUnderDeadline<J>(
  record: RunRecord<J>,
  request: HostRequest,
  session: RunSession,
  deadline: JobDeadline,
  pool: PoolView<J>,
  retried: true | undefined,
): Promise<RunResult> {
  const { deps } = pool;
  const outDir = runOutDir(deps.dataDir, record.id);
  const phases = startPhaseClock(deps.metrics);
  const running = new RunningStatus();
  const onProgress = (event: RunProgress) => {
    deadline.note(event);
    phases.progress(event);
    session.update(running.next(event, retried));
  };
  let result: RunResult;
  try {
    const pipeline = deps.runPipeline({
      ...request,
      runId: record.id,
      sandbox: deps.sandbox,
      outDir,
      signal: deadline.signal,
      onProgress,
    });
    pipeline.catch(() => undefined);
    result = await Promise.race([pipeline, deadline.abandoned]);
  } finally {
    // Returned, thrown or abandoned: the last phase ends here.
    phases.end();
  }
  countRunResult(deps.metrics, deps.sandbox, result);
  return result;
}

function settle(end: Parameters<typeof settleRun>[0]): Settled {
  const settled = settleRun(end);
  if (settled === 'publish') throw new Error(`a ${end.kind} run cannot be published again`);
  return settled;
}

function crashed(error: unknown, deadline: JobDeadline, log: Logger): Settled {
  const overdue = deadline.overdue;
  if (overdue && error === overdue) {
    log.error({ limitMs: overdue.limitMs }, 'overdue run did not stop');
  } else if (!overdue) {
    log.error({ err: error }, 'run failed unexpectedly');
  }
  return settle({
    kind: 'crashed',
    message: error instanceof Error ? error.message : String(error),
    overdueMs: overdue?.limitMs,
  });
}

interface Closing<J> {
  clock: RunClock;
  pool: PoolView<J>;
  log: Logger;
  controller: AbortController;
  deadline: JobDeadline;
}

/** Tells the host and the queue how the run ended, unless it ends here without a word. */
async function closeRun<J>(
  record: RunRecord<J>,
  session: RunSession,
  { settled, result }: Ran,
  { clock, pool, log, controller, deadline }: Closing<J>,
): Promise<void> {
  const { queue } = pool.deps;
  if (pool.lost.delete(record.id)) {
    log.warn(
      { restCalls: session.used },
      'run taken up by another worker; this attempt ends silently',
    );
    clock.finish('interrupted', 'interrupted');
    return;
  }
  if (
    pool.stopped() &&
    controller.signal.aborted &&
    settled.state !== 'done' &&
    !deadline.overdue
  ) {
    // Shutdown, not a cancel: the record stays `running`, so the next start requeues it once.
    await session.finish({ kind: 'interrupted' });
    log.info({ restCalls: session.used }, 'run interrupted by shutdown');
    clock.finish('interrupted', 'interrupted');
    await queue.addRestCalls(record.id, session.spent);
    return;
  }
  await session.finish(settled.status, result);
  const { state, outcome } = settled;
  log.info({ state, outcome, restCalls: session.used }, 'run finished');
  clock.finish(state, outcome);
  await queue.addRestCalls(record.id, session.spent);
  await queue.finish(record.id, state, { outcome, summary: settled.status.kind });
}
