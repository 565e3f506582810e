// The queue's one door: everything outside src/queue/ talks to the queue's roles, never to a
// backend. Each consumer takes only the roles it uses (intake: the delivery log and the run
// store; workers: the claims; the run pages: the reader). `Queue` is all of them, as `openQueue`
// returns it. Two backends keep the same contract (test/queue/contract.test.ts): `sqlite`, the
// embedded default (one data directory), and `bullmq` (BullMQ on Redis: serve and workers on
// many hosts).
import type {
  AdmitResult,
  EnqueueInput,
  EnqueueResult,
  PendingDelivery,
  RunRecord,
  RunState,
} from './run-record.js';

export type { AdmitResult, EnqueueInput, EnqueueResult, PendingDelivery, RunRecord, RunState };

export type QueueKind = 'sqlite' | 'bullmq';

export type FinishState = Extract<RunState, 'done' | 'failed' | 'cancelled'>;

/** The run records as they stand (run pages, listings, the status comment). */
export interface RunReader<J = unknown> {
  get(id: string): Promise<RunRecord<J> | undefined>;
  activeFor(key: string): Promise<RunRecord<J> | undefined>;
  list(state?: RunState): Promise<RunRecord<J>[]>;
  /**
   * 1-based place among queued runs (across every process), in the order they are taken;
   * undefined when not queued.
   */
  position(id: string): Promise<number | undefined>;
  /** The run a delivery made, if any. */
  runForDelivery(deliveryId: string): Promise<RunRecord<J> | undefined>;
}

/** The run records and what asks for runs to start or stop (intake, `/frognano use K`). */
export interface RunStore<J = unknown> extends RunReader<J> {
  /**
   * Enqueues unless the key has an active run, this delivery already made one, or the group has
   * `maxQueuedInGroup` queued runs (`full`). Runs are taken round robin across groups: each group
   * with waiting runs gets one per round, in the order their oldest runs arrived.
   */
  enqueue(input: EnqueueInput<J>): Promise<EnqueueResult<J>>;
  /**
   * Makes a held run claimable; false when it is not a held queued run. `job`, when given,
   * replaces the run's job in the same step (what a worker may claim).
   */
  release(id: string, job?: J): Promise<boolean>;
  /** Removes a held run that must never run; false when not held. */
  discard(id: string): Promise<boolean>;
  /** A queued run is cancelled at once; a running one is flagged for its worker. */
  requestCancel(key: string): Promise<{ run: RunRecord<J>; wasRunning: boolean } | undefined>;
  /** Adds the GitHub REST calls spent on a run to its record (intake's, as the worker's). */
  addRestCalls(id: string, calls: number): Promise<void>;
  /** Deletes runs finished before `before`; their ids. */
  pruneFinished(before: number): Promise<string[]>;
}

/** A worker's side of the runs: claiming them, holding them, ending them. */
export interface RunClaims<J = unknown> {
  /** `bullmq` loses runs with their workers at any time: lost runs are looked for now and again. */
  readonly kind: QueueKind;
  /** Runs this process may hold at once (sqlite: all processes together). */
  readonly concurrency: number;
  /** Claims per run before a lost run is reported failed instead of requeued. */
  readonly maxAttempts: number;
  /** The next run (fair order) for this process, now `running`; undefined when none or at the limit. */
  claim(): Promise<RunRecord<J> | undefined>;
  /** Ends a run; false when it had ended already or another worker holds it now. */
  finish(
    id: string,
    state: FinishState,
    details?: { outcome?: string; summary?: string },
  ): Promise<boolean>;
  /**
   * False once this process no longer holds a run it claimed: another worker took it up after
   * this one was thought lost (stalled past its lock), or it ended. The run must then stop
   * without publishing or reporting.
   */
  stillHeld(id: string): Promise<boolean>;
  isCancelRequested(id: string): Promise<boolean>;
  /** Adds the GitHub REST calls spent on a run to its record (the worker's, as intake's). */
  addRestCalls(id: string, calls: number): Promise<void>;
  /**
   * Runs whose process was lost: each goes back to the queue once, or is failed after
   * `maxAttempts` claims. sqlite: every run left `running` (call at start, one worker process);
   * bullmq: runs BullMQ found stalled (call at start and then now and again).
   */
  recoverInterrupted(): Promise<{ requeued: RunRecord<J>[]; failed: RunRecord<J>[] }>;
}

/** Webhook deliveries: each seen once, its raw trigger kept until intake has handled it. */
export interface DeliveryLog<J = unknown> {
  /** Records a webhook delivery (the raw trigger, state pending); false when seen before. */
  recordDelivery(
    deliveryId: string,
    event: string,
    payload: unknown,
    bodySha256?: string,
  ): Promise<boolean>;
  /**
   * Accepts a delivery atomically: refused when its id was seen, or its raw body arrived within
   * the replay window under another id; else recorded pending and, with `run`, its run enqueued
   * (held, when asked, until `release`) as `enqueue` would (a full group: recorded, no run).
   */
  admit(input: {
    deliveryId: string;
    event: string;
    payload: unknown;
    bodySha256?: string;
    run?: Omit<EnqueueInput<J>, 'deliveryId' | 'id'>;
  }): Promise<AdmitResult<J>>;
  /** Deliveries recorded but not yet handled by intake, oldest first. */
  pendingDeliveries(): Promise<PendingDelivery[]>;
  completeDelivery(deliveryId: string): Promise<void>;
  /** Forgets handled deliveries received before `before`; how many. */
  pruneDeliveries(before: number): Promise<number>;
}

/** Small per-key facts that outlive runs (an issue's status comment id, a published attempt). */
export interface Notes {
  getNote(key: string, name: string): Promise<string | undefined>;
  setNote(key: string, name: string, value: string | undefined): Promise<void>;
}

/** A run's files where any process can read them. */
export interface RunArtifacts {
  /** `sqlite`: the data directory is shared, nothing to copy; `bullmq`: files go to Redis. */
  readonly kind: QueueKind;
  /**
   * Keeps a run file where any process can read it (bullmq: compressed in Redis for
   * `ttlSeconds`). sqlite: nothing to do, the data directory is shared.
   */
  putArtifact(runId: string, name: string, body: Buffer, ttlSeconds: number): Promise<void>;
  getArtifact(runId: string, name: string): Promise<Buffer | undefined>;
}

/** One holder at a time per key, across processes. */
export interface KeyLock {
  /**
   * Runs `fn` while no other process runs one for the same key (status comment writes of an
   * issue: intake on serve, the run on a worker). sqlite: one process per half, nothing to do.
   */
  exclusive<T>(key: string, fn: () => Promise<T>): Promise<T>;
}

export interface Queue<J = unknown>
  extends RunStore<J>, RunClaims<J>, DeliveryLog<J>, Notes, RunArtifacts, KeyLock {
  readonly kind: QueueKind;
  close(): Promise<void>;
}
