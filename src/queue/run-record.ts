// What both queue backends hand out: a run's record, what enqueueing and admitting made of a
// request, a delivery waiting for intake (types.ts is the door the rest of the code uses).
export type RunState = 'queued' | 'running' | 'done' | 'failed' | 'cancelled';

export interface RunRecord<J = unknown> {
  id: string;
  key: string;
  /** Its fair-share group: runs are taken round robin across groups (the key when not given). */
  group: string;
  deliveryId?: string;
  state: RunState;
  /** How many times a worker claimed it (a restart that interrupts it counts one). */
  attempts: number;
  job: J;
  cancelRequested: boolean;
  restCalls: number;
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  outcome?: string;
  summary?: string;
  /** Queued but not claimable yet: accepted at once, waiting for a check (the sender's permission). */
  held: boolean;
}

export type EnqueueResult<J> =
  | { status: 'queued'; run: RunRecord<J>; position: number }
  | { status: 'active'; run: RunRecord<J> }
  | { status: 'duplicate' }
  /** The group already has `maxQueuedInGroup` runs waiting (held ones included): none made. */
  | { status: 'full'; queued: number };

/** What to enqueue: a run for `key` in fair-share `group` (default: the key itself). */
export interface EnqueueInput<J> {
  key: string;
  job: J;
  deliveryId?: string;
  id?: string;
  /** Counts for positions and blocks its key, but is not claimed before `release`. */
  held?: boolean;
  group?: string;
  /** Refuse (`full`) when the group has this many queued runs already. */
  maxQueuedInGroup?: number;
}

export interface PendingDelivery {
  deliveryId: string;
  event: string;
  payload: unknown;
  receivedAt: number;
}

/** What `admit` made of a delivery. */
export type AdmitResult<J> =
  | { status: 'duplicate' }
  | { status: 'replay'; firstDeliveryId: string }
  | { status: 'recorded'; enqueued?: EnqueueResult<J> };
