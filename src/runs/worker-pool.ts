// Workers: take queued runs as the concurrency allows, watch them (cancel flags, runs lost to
// another worker), recover what a dead process left, and stop cleanly.
import { startRunClock } from '../metrics/index.js';
import type { RunRecord } from '../queue/types.js';
import type { WorkerPoolDeps } from './pool-deps.js';
import { processRun } from './process-run.js';
import type { RunStatus } from './run-status.js';

export class WorkerPool<J> {
  readonly #running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  #timer: NodeJS.Timeout | undefined;
  #stopped = true;
  #idleWaiters: (() => void)[] = [];
  #kicking: Promise<void> | undefined;
  #kickAgain = false;
  #polling: Promise<void> | undefined;
  #sweeping: Promise<void> | undefined;
  /** Runs this process lost to another worker: they end here without a word. */
  readonly #lost = new Set<string>();
  #reapOrphans: ((liveRunIds: string[]) => Promise<void>) | undefined;

  constructor(private readonly deps: WorkerPoolDeps<J>) {}

  start(): void {
    this.#stopped = false;
    let sweeps = 0;
    const poll = async () => {
      for (const [runId, { controller }] of this.#running) {
        if (controller.signal.aborted) continue;
        if (!(await this.deps.queue.stillHeld(runId))) {
          // Thought lost (this process stalled past its lock): another worker runs it now.
          this.#lost.add(runId);
          controller.abort();
        } else if (await this.deps.queue.isCancelRequested(runId)) {
          controller.abort();
        }
      }
      // A shared queue loses runs with their workers at any time, not only before a start:
      // every few polls, runs BullMQ found stalled are requeued or failed and their issues
      // told (on its own chain: telling an issue must not hold up claiming).
      if (this.deps.queue.kind === 'bullmq' && ++sweeps % 3 === 0 && this.#reapOrphans) {
        const reapOrphans = this.#reapOrphans;
        this.#sweeping ??= this.recover(reapOrphans, { reap: false })
          .then(() => undefined)
          .catch((error: unknown) => this.deps.log.warn({ err: error }, 'lost-run sweep failed'))
          .finally(() => (this.#sweeping = undefined));
      }
    };
    this.#timer = setInterval(() => {
      this.kick();
      if (this.#polling) return;
      this.#polling = poll()
        .catch((error: unknown) => this.deps.log.warn({ err: error }, 'worker poll failed'))
        .finally(() => (this.#polling = undefined));
    }, this.deps.pollMs ?? 2000);
    this.#timer.unref?.();
    this.kick();
  }

  /** Claims as many queued runs as the concurrency allows (calls coalesce). */
  kick(): void {
    if (this.#stopped) return;
    if (this.#kicking) {
      this.#kickAgain = true;
      return;
    }
    this.#kicking = this.#claimAll()
      .catch((error: unknown) => this.deps.log.error({ err: error }, 'claiming runs failed'))
      .finally(() => {
        this.#kicking = undefined;
        if (this.#kickAgain) {
          this.#kickAgain = false;
          this.kick();
        } else {
          this.#notifyIdle();
        }
      });
  }

  async #claimAll(): Promise<void> {
    do {
      this.#kickAgain = false;
      for (let run = await this.#claim(); run; run = await this.#claim()) {
        const claimed = run;
        const controller = new AbortController();
        const clock = startRunClock(this.deps.metrics);
        const done = processRun(claimed, controller, clock, {
          deps: this.deps,
          lost: this.#lost,
          stopped: () => this.#stopped,
        })
          .catch(async (error: unknown) => {
            this.deps.log.error({ err: error, runId: claimed.id }, 'run crashed');
            clock.finish('failed', 'internal_error');
            await this.deps.queue.finish(claimed.id, 'failed', {
              outcome: 'internal_error',
              summary: String(error),
            });
          })
          .catch((error: unknown) => this.deps.log.error({ err: error }, 'finishing failed'))
          .finally(() => {
            this.#running.delete(claimed.id);
            this.#lost.delete(claimed.id);
            this.kick();
            this.#notifyIdle();
          });
        this.#running.set(claimed.id, { controller, done });
      }
    } while (this.#kickAgain && !this.#stopped);
  }

  #claim(): Promise<RunRecord<J> | undefined> {
    if (this.#stopped || this.#running.size >= this.deps.queue.concurrency) {
      return Promise.resolve(undefined);
    }
    return this.deps.queue.claim();
  }

  /** Aborts a run of this process; false when it does not run here. */
  abort(runId: string): boolean {
    const entry = this.#running.get(runId);
    if (!entry) return false;
    entry.controller.abort();
    return true;
  }

  get runningIds(): string[] {
    return [...this.#running.keys()];
  }

  /** Resolves when this process runs nothing and nothing it could take is queued. */
  async idle(): Promise<void> {
    while (!(await this.#isIdle())) {
      await new Promise<void>((resolve) => {
        this.#idleWaiters.push(resolve);
        setTimeout(resolve, 50).unref?.();
      });
    }
  }

  /** Stops taking runs and aborts those in flight (their records end cancelled or failed). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#kicking;
    await this.#polling;
    await this.#sweeping;
    for (const { controller } of this.#running.values()) controller.abort();
    await Promise.all([...this.#running.values()].map((r) => r.done));
  }

  /**
   * At start, before taking runs: runs left `running` by a dead process are requeued once or
   * failed, whatever they left behind is reaped, and their issues are told what happened.
   * With a shared queue it runs again now and then (runs of workers on other hosts).
   */
  async recover(
    reapOrphans: (liveRunIds: string[]) => Promise<void>,
    options: { reap?: boolean } = {},
  ): Promise<{ requeued: number; failed: number }> {
    const { deps } = this;
    this.#reapOrphans = reapOrphans;
    const { requeued, failed } = await deps.queue.recoverInterrupted();
    if (options.reap !== false) await reapOrphans(this.runningIds);
    const lostWhat =
      deps.queue.kind === 'bullmq'
        ? 'its worker was lost (a crash, a kill or a host going away)'
        : 'by a restart of the app (a crash or a deployment)';
    for (const run of [...requeued, ...failed]) await this.#tellRecovered(run, lostWhat);
    if (requeued.length + failed.length > 0) {
      deps.log.warn(
        { requeued: requeued.length, failed: failed.length },
        'recovered interrupted runs',
      );
      this.kick();
    }
    return { requeued: requeued.length, failed: failed.length };
  }

  async #isIdle(): Promise<boolean> {
    if (this.#running.size > 0 || this.#kicking) return false;
    return this.#stopped || (await this.deps.queue.list('queued')).length === 0;
  }

  #notifyIdle(): void {
    const waiters = this.#idleWaiters.splice(0);
    for (const w of waiters) w();
  }

  /** Tells a recovered run's issue what became of it: queued again, cancelled or given up. */
  async #tellRecovered(run: RunRecord<J>, lostWhat: string): Promise<void> {
    const { deps } = this;
    const status: RunStatus =
      run.state === 'queued'
        ? { kind: 'queued', position: (await deps.queue.position(run.id)) ?? 1, requeued: true }
        : run.state === 'cancelled'
          ? { kind: 'cancelled' }
          : {
              kind: 'failed',
              reason: `the run was interrupted ${run.attempts} times: ${lostWhat}, so it was given up. Nothing was published.`,
            };
    const session = await deps.host.open(run, deps.log, { quiet: true });
    try {
      await session.finish(status);
    } finally {
      await deps.queue.addRestCalls(run.id, session.spent);
    }
  }
}
