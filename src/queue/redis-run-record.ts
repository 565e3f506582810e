import type { RunRecord, RunState } from './types.js';

/** A run as the Redis backend keeps it (a hash, the job JSON apart), as a record. */
export function toRecord<J>(id: string, h: Record<string, string>, job: string): RunRecord<J> {
  const num = (v: string | undefined) => (v === undefined || v === '' ? undefined : Number(v));
  const str = (v: string | undefined) => (v === undefined || v === '' ? undefined : v);
  return {
    id,
    key: h.key ?? '',
    group: h.group ?? h.key ?? '',
    deliveryId: str(h.deliveryId),
    state: h.state as RunState,
    attempts: Number(h.attempts ?? 0),
    job: JSON.parse(job) as J,
    cancelRequested: h.cancel === '1',
    restCalls: Number(h.rest ?? 0),
    createdAt: Number(h.createdAt),
    startedAt: num(h.startedAt),
    finishedAt: num(h.finishedAt),
    outcome: str(h.outcome),
    summary: str(h.summary),
    held: h.held === '1',
  };
}
