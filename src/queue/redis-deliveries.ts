// The Redis backend's delivery log: dlv:<id> (a delivery: its raw trigger while pending, then
// only its id, expiring after the retention or replay window) and the pending set.
import { randomUUID } from 'node:crypto';
import type { RedisKeys } from './redis-keys.js';
import { capArg, type RedisRuns } from './redis-runs.js';
import { ADMIT, COMPLETE_DELIVERY, RECORD_DELIVERY } from './redis-scripts.js';
import type { AdmitResult, DeliveryLog, EnqueueInput, PendingDelivery } from './types.js';

export class RedisDeliveries<J = unknown> implements DeliveryLog<J> {
  constructor(
    readonly keys: RedisKeys,
    /** `admit` enqueues the delivery's run in the same script. */
    readonly runs: RedisRuns<J>,
    /** A delivery whose raw body was seen within this window is a replay. */
    readonly replayWindowMs: number,
    /** Handled delivery ids are remembered this long for deduplication. */
    readonly retentionMs: number,
  ) {}

  async recordDelivery(
    deliveryId: string,
    event: string,
    payload: unknown,
    bodySha256?: string,
  ): Promise<boolean> {
    const fresh = await this.keys.eval(RECORD_DELIVERY, [
      deliveryId,
      event,
      JSON.stringify(payload),
      String(Date.now()),
      bodySha256 ?? '',
      String(this.replayWindowMs),
    ]);
    return fresh === 1;
  }

  async admit(input: {
    deliveryId: string;
    event: string;
    payload: unknown;
    bodySha256?: string;
    run?: Omit<EnqueueInput<J>, 'deliveryId' | 'id'>;
  }): Promise<AdmitResult<J>> {
    const reply = (await this.keys.eval(ADMIT, [
      input.deliveryId,
      input.event,
      JSON.stringify(input.payload),
      String(Date.now()),
      input.bodySha256 ?? '',
      String(this.replayWindowMs),
      input.run?.key ?? '',
      randomUUID(),
      input.run?.held ? '1' : '0',
      JSON.stringify(input.run?.job ?? null),
      input.run?.group ?? '',
      capArg(input.run?.maxQueuedInGroup),
    ])) as string[];
    if (reply[0] === 'duplicate') return { status: 'duplicate' };
    if (reply[0] === 'replay') return { status: 'replay', firstDeliveryId: reply[1] as string };
    if (!input.run || reply.length < 2) return { status: 'recorded' };
    return {
      status: 'recorded',
      enqueued: await this.runs.enqueued(reply.slice(1), !!input.run.held),
    };
  }

  async pendingDeliveries(): Promise<PendingDelivery[]> {
    const { redis, p } = this.keys;
    const ids = await redis.zrange(`${p}pending`, '0', '-1');
    const out: PendingDelivery[] = [];
    for (const id of ids) {
      const h = await redis.hgetall(`${p}dlv:${id}`);
      if (h.state !== 'pending' || h.payload === undefined) continue;
      out.push({
        deliveryId: id,
        event: h.event ?? '',
        payload: JSON.parse(h.payload) as unknown,
        receivedAt: Number(h.receivedAt),
      });
    }
    return out;
  }

  async completeDelivery(deliveryId: string): Promise<void> {
    await this.keys.eval(COMPLETE_DELIVERY, [deliveryId, String(this.retentionMs)]);
  }

  async pruneDeliveries(): Promise<number> {
    // Handled deliveries carry their own expiry in Redis (retention or replay window).
    return 0;
  }
}
