// BullMQ jobs as claim tickets (see redis-queue.ts): one is added whenever a run becomes
// claimable; the run record, not BullMQ, is the history.
import { Queue as BullQueue, type Job as BullJob } from 'bullmq';

export const BULL_QUEUE = 'runs';

export class ClaimTickets {
  readonly bull: BullQueue;

  constructor(connection: { url: string; maxRetriesPerRequest: null }, prefix: string) {
    this.bull = new BullQueue(BULL_QUEUE, { connection, prefix });
    // BullMQ reports connection trouble as events; without a listener Node would crash on them.
    this.bull.on('error', () => undefined);
  }

  /** A claim ticket (its id: the run that made it claimable, or a fresh one). */
  async add(id: string): Promise<void> {
    await this.bull.add(
      'claim',
      { madeFor: id },
      {
        jobId: id,
        // The run record is the history; BullMQ's copy can go soon after.
        removeOnComplete: { age: 3600 },
        removeOnFail: { age: 7 * 24 * 3600 },
      },
    );
  }

  /** Takes back the ticket a run made (it ended before a worker took it); gone already is fine. */
  async remove(id: string): Promise<void> {
    await this.bull.remove(id).catch(() => undefined);
  }

  state(id: string): ReturnType<BullQueue['getJobState']> {
    return this.bull.getJobState(id);
  }

  async get(id: string): Promise<BullJob | undefined> {
    return this.bull.getJob(id);
  }

  waitingCount(): Promise<number> {
    return this.bull.getWaitingCount();
  }

  async ready(): Promise<void> {
    await this.bull.waitUntilReady();
  }

  async close(): Promise<void> {
    await this.bull.close();
  }
}
