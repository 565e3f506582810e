// The SQLite store's runs table: one row per run; a partial unique index allows one active
// (queued/running) run per key. Queued runs are handed out round robin across groups: each run
// gets a turn when it arrives, and the queue's order is by turn, then arrival (see `enqueue`).
// Synchronous: every method is one statement or one IMMEDIATE transaction on the shared file.
import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { EnqueueInput, EnqueueResult, RunRecord, RunState } from './run-record.js';

interface RunRow {
  seq: number;
  id: string;
  key: string;
  delivery_id: string | null;
  state: RunState;
  attempts: number;
  job: string;
  cancel_requested: number;
  rest_calls: number;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  outcome: string | null;
  summary: string | null;
  held: number;
  grp: string;
  turn: number;
}

export class SqliteRuns<J = unknown> {
  constructor(
    readonly db: Database.Database,
    /** Global limit of runs in state `running`. */
    readonly concurrency: number,
    /** Claims per run before an interrupted run is reported failed instead of requeued. */
    readonly maxAttempts: number,
  ) {}

  /**
   * Enqueues unless this key already has an active run, this delivery already made one, or the
   * group is full. A held run counts for positions and blocks its key, but no worker claims it
   * before `release`.
   *
   * Fair share (start-time fair queueing with one unit per run): a run's turn is the current
   * round (the highest turn claimed so far), or one past its group's last turn (its latest run
   * queued or claimed), whichever is later; runs are taken by turn, then arrival. So each group
   * with waiting runs gets one run per round, in the order their oldest runs arrived, a newcomer
   * joins the current round, and a group gains no credit while idle. Turns never change once
   * given, so a position is a plain count of the runs before it.
   */
  enqueue(input: EnqueueInput<J>): EnqueueResult<J> {
    const tx = this.db.transaction((): EnqueueResult<J> => {
      if (input.deliveryId) {
        const seen = this.db
          .prepare(`SELECT 1 FROM runs WHERE delivery_id = ?`)
          .get(input.deliveryId);
        if (seen) return { status: 'duplicate' };
      }
      const active = this.activeFor(input.key);
      if (active) return { status: 'active', run: active };
      const group = input.group ?? input.key;
      if (input.maxQueuedInGroup !== undefined) {
        const { n } = this.db
          .prepare(`SELECT COUNT(*) AS n FROM runs WHERE grp = ? AND state = 'queued'`)
          .get(group) as { n: number };
        if (n >= input.maxQueuedInGroup) return { status: 'full', queued: n };
      }
      const id = input.id ?? randomUUID();
      this.db
        .prepare(
          `INSERT INTO runs (id, key, delivery_id, state, job, created_at, held, grp, turn) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?)`,
        )
        .run(
          id,
          input.key,
          input.deliveryId ?? null,
          JSON.stringify(input.job),
          Date.now(),
          input.held ? 1 : 0,
          group,
          this.#nextTurn(group),
        );
      const run = this.get(id) as RunRecord<J>;
      return { status: 'queued', run, position: this.position(id) ?? 1 };
    });
    return tx.immediate();
  }

  /** The turn a new run of `group` gets (see `enqueue`). */
  #nextTurn(group: string): number {
    const { round, last } = this.db
      .prepare(
        `SELECT (SELECT COALESCE(MAX(claimed_turn), 0) FROM fair_groups) AS round,
                MAX(COALESCE((SELECT MAX(turn) FROM runs WHERE grp = @group AND state = 'queued'), -1),
                    COALESCE((SELECT claimed_turn FROM fair_groups WHERE grp = @group), -1)) AS last`,
      )
      .get({ group }) as { round: number; last: number };
    return Math.max(round, last + 1);
  }

  /**
   * Makes a held run claimable, with `job` replacing its job in the same write when given (a job
   * finished only after the permission check); false when it is not a held queued run.
   */
  release(id: string, job?: J): boolean {
    const info =
      job === undefined
        ? this.db
            .prepare(`UPDATE runs SET held = 0 WHERE id = ? AND state = 'queued' AND held = 1`)
            .run(id)
        : this.db
            .prepare(
              `UPDATE runs SET held = 0, job = ? WHERE id = ? AND state = 'queued' AND held = 1`,
            )
            .run(JSON.stringify(job), id);
    return info.changes === 1;
  }

  /** Removes a held run that must never run (its trigger was refused); false when not held. */
  discard(id: string): boolean {
    const info = this.db
      .prepare(`DELETE FROM runs WHERE id = ? AND state = 'queued' AND held = 1`)
      .run(id);
    return info.changes === 1;
  }

  /** The run a delivery made, if any. */
  runForDelivery(deliveryId: string): RunRecord<J> | undefined {
    const row = this.db.prepare(`SELECT * FROM runs WHERE delivery_id = ?`).get(deliveryId) as
      RunRow | undefined;
    return row ? toRecord<J>(row) : undefined;
  }

  /** Moves the next queued run (fair order) to `running` when the global limit allows. */
  claim(): RunRecord<J> | undefined {
    const tx = this.db.transaction((): RunRecord<J> | undefined => {
      const running = this.db
        .prepare(`SELECT COUNT(*) AS n FROM runs WHERE state = 'running'`)
        .get() as { n: number };
      if (running.n >= this.concurrency) return undefined;
      const next = this.db
        .prepare(
          `SELECT id, grp, turn FROM runs WHERE state = 'queued' AND held = 0 ORDER BY turn, seq LIMIT 1`,
        )
        .get() as { id: string; grp: string; turn: number } | undefined;
      if (!next) return undefined;
      this.db
        .prepare(
          `UPDATE runs SET state = 'running', attempts = attempts + 1, started_at = ? WHERE id = ?`,
        )
        .run(Date.now(), next.id);
      this.db
        .prepare(
          `INSERT INTO fair_groups (grp, claimed_turn) VALUES (?, ?) ON CONFLICT (grp) DO UPDATE SET claimed_turn = MAX(claimed_turn, excluded.claimed_turn)`,
        )
        .run(next.grp, next.turn);
      return this.get(next.id);
    });
    return tx.immediate();
  }

  finish(
    id: string,
    state: Extract<RunState, 'done' | 'failed' | 'cancelled'>,
    details: { outcome?: string; summary?: string } = {},
  ): void {
    this.db
      .prepare(
        `UPDATE runs SET state = ?, finished_at = ?, outcome = ?, summary = ? WHERE id = ? AND state IN ('queued', 'running')`,
      )
      .run(state, Date.now(), details.outcome ?? null, details.summary ?? null, id);
  }

  /**
   * Cancels the active run of a key: a queued run is cancelled at once; a running run is flagged
   * so its worker aborts it. Undefined when nothing is active.
   */
  requestCancel(key: string): { run: RunRecord<J>; wasRunning: boolean } | undefined {
    const tx = this.db.transaction(() => {
      const active = this.activeFor(key);
      if (!active) return undefined;
      if (active.state === 'queued') {
        this.finish(active.id, 'cancelled', { outcome: 'cancelled' });
        return { run: this.get(active.id) as RunRecord<J>, wasRunning: false };
      }
      this.db.prepare(`UPDATE runs SET cancel_requested = 1 WHERE id = ?`).run(active.id);
      return { run: this.get(active.id) as RunRecord<J>, wasRunning: true };
    });
    return tx.immediate();
  }

  isCancelRequested(id: string): boolean {
    const row = this.db.prepare(`SELECT cancel_requested FROM runs WHERE id = ?`).get(id) as
      { cancel_requested: number } | undefined;
    return row?.cancel_requested === 1;
  }

  /**
   * 1-based place among queued runs (held ones included) in the order they are taken (turn,
   * then arrival); undefined when the run is not queued.
   */
  position(id: string): number | undefined {
    const row = this.db
      .prepare(
        `SELECT (SELECT COUNT(*) FROM runs q WHERE q.state = 'queued' AND (q.turn < r.turn OR (q.turn = r.turn AND q.seq <= r.seq))) AS pos FROM runs r WHERE r.id = ? AND r.state = 'queued'`,
      )
      .get(id) as { pos: number } | undefined;
    return row?.pos;
  }

  get(id: string): RunRecord<J> | undefined {
    const row = this.db.prepare(`SELECT * FROM runs WHERE id = ?`).get(id) as RunRow | undefined;
    return row ? toRecord<J>(row) : undefined;
  }

  activeFor(key: string): RunRecord<J> | undefined {
    const row = this.db
      .prepare(`SELECT * FROM runs WHERE key = ? AND state IN ('queued', 'running')`)
      .get(key) as RunRow | undefined;
    return row ? toRecord<J>(row) : undefined;
  }

  list(state?: RunState): RunRecord<J>[] {
    const rows = (
      state
        ? this.db.prepare(`SELECT * FROM runs WHERE state = ? ORDER BY seq`).all(state)
        : this.db.prepare(`SELECT * FROM runs ORDER BY seq`).all()
    ) as RunRow[];
    return rows.map((row) => toRecord<J>(row));
  }

  addRestCalls(id: string, calls: number): void {
    this.db.prepare(`UPDATE runs SET rest_calls = rest_calls + ? WHERE id = ?`).run(calls, id);
  }

  /**
   * After a crash or restart: runs left `running` belong to no process any more. Each goes back
   * to the queue if it has attempts left, else it is failed. Returns both lists so the caller
   * can reap containers and tell the issue truthfully.
   */
  recoverInterrupted(): { requeued: RunRecord<J>[]; failed: RunRecord<J>[] } {
    const tx = this.db.transaction(() => {
      const requeued: RunRecord<J>[] = [];
      const failed: RunRecord<J>[] = [];
      for (const run of this.list('running')) {
        if (run.cancelRequested) {
          this.finish(run.id, 'cancelled', { outcome: 'cancelled', summary: 'interrupted' });
          failed.push(this.get(run.id) as RunRecord<J>);
        } else if (run.attempts < this.maxAttempts) {
          this.db
            .prepare(`UPDATE runs SET state = 'queued', started_at = NULL WHERE id = ?`)
            .run(run.id);
          requeued.push(this.get(run.id) as RunRecord<J>);
        } else {
          this.finish(run.id, 'failed', {
            outcome: 'interrupted',
            summary: `interrupted ${run.attempts} times by a restart`,
          });
          failed.push(this.get(run.id) as RunRecord<J>);
        }
      }
      return { requeued, failed };
    });
    return tx.immediate();
  }

  /** Deletes finished runs (done, failed, cancelled) that finished before `before`; their ids. */
  pruneFinished(before: number): string[] {
    const tx = this.db.transaction(() => {
      const rows = this.db
        .prepare(
          `SELECT id FROM runs WHERE state IN ('done', 'failed', 'cancelled') AND finished_at < ?`,
        )
        .all(before) as { id: string }[];
      this.db
        .prepare(
          `DELETE FROM runs WHERE state IN ('done', 'failed', 'cancelled') AND finished_at < ?`,
        )
        .run(before);
      return rows.map((r) => r.id);
    });
    return tx.immediate();
  }
}

function toRecord<J>(row: RunRow): RunRecord<J> {
  return {
    id: row.id,
    key: row.key,
    group: row.grp,
    deliveryId: row.delivery_id ?? undefined,
    state: row.state,
    attempts: row.attempts,
    job: JSON.parse(row.job) as J,
    cancelRequested: row.cancel_requested === 1,
    restCalls: row.rest_calls,
    createdAt: row.created_at,
    startedAt: row.started_at ?? undefined,
    finishedAt: row.finished_at ?? undefined,
    outcome: row.outcome ?? undefined,
    summary: row.summary ?? undefined,
    held: row.held === 1,
  };
}
