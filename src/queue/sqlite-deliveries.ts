// The SQLite store's deliveries table: every accepted webhook delivery id, so a redelivery never
// makes a second run, and the raw trigger waits here (state `pending`) until intake has handled
// it - a crash between acknowledging GitHub and enqueueing loses nothing.
import type Database from 'better-sqlite3';
import type { AdmitResult, EnqueueInput, PendingDelivery } from './run-record.js';
import type { SqliteRuns } from './sqlite-runs.js';

export class SqliteDeliveries<J = unknown> {
  constructor(
    readonly db: Database.Database,
    /** A delivery whose raw body was seen within this window is a replay. */
    readonly replayWindowMs: number,
    /** `admit` enqueues the delivery's run in the same transaction. */
    readonly runs: SqliteRuns<J>,
  ) {}

  /** Records a webhook delivery; false when this delivery id was seen before. */
  recordDelivery(
    deliveryId: string,
    event: string,
    payload: unknown,
    bodySha256?: string,
  ): boolean {
    const info = this.db
      .prepare(
        `INSERT OR IGNORE INTO deliveries (delivery_id, event, payload, received_at, body_sha256) VALUES (?, ?, ?, ?, ?)`,
      )
      .run(deliveryId, event, JSON.stringify(payload), Date.now(), bodySha256 ?? null);
    return info.changes === 1;
  }

  /**
   * Accepts a delivery in one transaction: refused when its id was seen, or when the same raw
   * body arrived within the replay window under another id (the signature does not cover the
   * delivery id); otherwise recorded as pending and, when `run` is given, its run enqueued
   * (held, when asked, until `release`).
   */
  admit(input: {
    deliveryId: string;
    event: string;
    payload: unknown;
    bodySha256?: string;
    run?: Omit<EnqueueInput<J>, 'deliveryId' | 'id'>;
  }): AdmitResult<J> {
    const tx = this.db.transaction((): AdmitResult<J> => {
      const now = Date.now();
      if (this.db.prepare(`SELECT 1 FROM deliveries WHERE delivery_id = ?`).get(input.deliveryId)) {
        return { status: 'duplicate' };
      }
      if (input.bodySha256) {
        const first = this.db
          .prepare(
            `SELECT delivery_id FROM deliveries WHERE body_sha256 = ? AND received_at >= ? ORDER BY received_at LIMIT 1`,
          )
          .get(input.bodySha256, now - this.replayWindowMs) as { delivery_id: string } | undefined;
        if (first) return { status: 'replay', firstDeliveryId: first.delivery_id };
      }
      this.recordDelivery(input.deliveryId, input.event, input.payload, input.bodySha256);
      if (!input.run) return { status: 'recorded' };
      const enqueued = this.runs.enqueue({ ...input.run, deliveryId: input.deliveryId });
      return { status: 'recorded', enqueued };
    });
    return tx.immediate();
  }

  pendingDeliveries(): PendingDelivery[] {
    const rows = this.db
      .prepare(
        `SELECT delivery_id, event, payload, received_at FROM deliveries WHERE state = 'pending' ORDER BY received_at, rowid`,
      )
      .all() as { delivery_id: string; event: string; payload: string; received_at: number }[];
    return rows.map((r) => ({
      deliveryId: r.delivery_id,
      event: r.event,
      payload: JSON.parse(r.payload) as unknown,
      receivedAt: r.received_at,
    }));
  }

  completeDelivery(deliveryId: string): void {
    // The payload is not needed any more; keep the id for deduplication.
    this.db
      .prepare(`UPDATE deliveries SET state = 'done', payload = 'null' WHERE delivery_id = ?`)
      .run(deliveryId);
  }

  /** Forgets handled deliveries received before `before` (their ids and body hashes). */
  pruneDeliveries(before: number): number {
    return this.db
      .prepare(`DELETE FROM deliveries WHERE state = 'done' AND received_at < ?`)
      .run(before).changes;
  }
}
