// One agent loop's Model on a fleet: it takes a slot on the least-loaded healthy endpoint at its
// first request (waiting when every endpoint is at its cap; the wait is not counted against the
// loop's time budget), keeps it for every later request, and moves on only when that endpoint
// fails after the client's retries: the same request, the whole history byte for byte, goes to
// the next endpoint. Only when no endpoint answers does the request fail.
import type { ChatMessage } from '../leaf/messages.js';
import type { Model, ModelResponse } from '../leaf/model.js';
import { createOpenAIModel, endpointCredentials } from '../leaf/openai-model.js';
import type { ToolSchema } from '../leaf/protocol.js';
import type { ModelEndpointRecord } from '../leaf/trajectory.js';
import { redactCredentials } from '../redact.js';
import { endpointFailureKind, errorChain } from './endpoint-failure.js';
import type { FleetEndpoint, FleetLoopHost } from './fleet-types.js';

export interface FleetLoopOptions {
  /** HTTP headers of this loop's requests (the attempt header); never in the body. */
  headers?: Record<string, string>;
  /** Told when the loop starts waiting for a slot (true) and when it has one (false). */
  onWait?: (waiting: boolean, waitedMs: number) => void;
}

interface Lease {
  endpoint: FleetEndpoint;
  record: ModelEndpointRecord;
  renewal: NodeJS.Timeout;
}

/** No endpoint is left to try for this request. */
export class NoModelEndpointLeft extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NoModelEndpointLeft';
  }
}

export class FleetLoop implements Model {
  readonly #fleet: FleetLoopHost;
  readonly #leaseId: string;
  readonly #options: FleetLoopOptions;
  readonly #models = new Map<string, Model>();
  readonly #records: ModelEndpointRecord[] = [];
  #lease: Lease | undefined;
  #answered = 0;
  #waited = 0;
  #waitingSince: number | undefined;
  #released = false;

  constructor(fleet: FleetLoopHost, leaseId: string, options: FleetLoopOptions) {
    this.#fleet = fleet;
    this.#leaseId = leaseId;
    this.#options = options;
  }

  /** The endpoint this loop holds a slot on, if any. */
  get endpoint(): string | undefined {
    return this.#lease?.endpoint.name;
  }

  async complete(
    messages: readonly ChatMessage[],
    tools: readonly ToolSchema[],
    signal?: AbortSignal,
  ): Promise<ModelResponse> {
    if (this.#released) throw new Error('this loop has ended: its model slot was released');
    const failures = new Map<string, unknown>();
    for (;;) {
      if (this.#lease) await this.#leaveIfMarkedDown(this.#lease);
      const lease = this.#lease ?? (await this.#take(failures, signal));
      const name = lease.endpoint.name;
      try {
        const response = await this.#modelFor(lease.endpoint).complete(messages, tools, signal);
        this.#fleet.observer?.answered(name, response.latencyMs, response.usage);
        lease.record.first_step ??= this.#answered;
        lease.record.last_step = this.#answered;
        lease.record.requests++;
        this.#answered++;
        return response;
      } catch (error) {
        const kind = endpointFailureKind(error);
        if (!signal?.aborted) this.#fleet.observer?.failed(name, kind ?? 'other');
        if (signal?.aborted || !kind) throw error;
        failures.set(name, error);
        // The client redacted the body already; the rest of the chain is redacted here too.
        lease.record.error = redactCredentials(
          errorChain(error),
          endpointCredentials(this.#fleet.configFor(lease.endpoint)),
        );
        await this.#fleet.markDown(name, lease.record.error).catch(() => undefined);
        await this.#drop();
        this.#fleet.log?.warn(
          {
            endpoint: name,
            err: lease.record.error,
            left: this.#fleet.endpoints.length - failures.size,
          },
          'model endpoint failed; the loop moves to another one',
        );
      }
    }
  }

  waitedMs(): number {
    return (
      this.#waited + (this.#waitingSince === undefined ? 0 : performance.now() - this.#waitingSince)
    );
  }

  servedBy(): ModelEndpointRecord[] {
    return this.#records.map((r) => ({ ...r }));
  }

  /** The loop has ended: its slot goes to the next loop. Safe to call more than once. */
  async release(): Promise<void> {
    this.#released = true;
    await this.#drop();
  }

  /**
   * Another loop found this endpoint failing: rather than wait out the retries itself, the loop
   * moves now to a healthy endpoint with a free slot (if none has one, it stays and sees).
   */
  async #leaveIfMarkedDown(lease: Lease): Promise<void> {
    const fleet = this.#fleet;
    const names = fleet.endpoints.map((e) => e.name);
    const marks = await fleet.store.downMarks(names);
    const mark = marks.get(lease.endpoint.name);
    if (!mark) return;
    const healthy = names.filter((n) => !marks.has(n));
    if (healthy.length === 0) return;
    const got = await fleet.store.tryAcquire(healthy, fleet.maxLoops, this.#leaseId);
    if (got === undefined) return;
    lease.record.error = `marked down: ${mark.reason}`;
    await this.#drop();
    this.#hold(fleet.endpoints.find((e) => e.name === got)!);
    fleet.log?.info(
      { from: lease.endpoint.name, to: got },
      'model endpoint marked down; the loop moves to another one',
    );
  }

  /** A slot on the best endpoint not failed yet for this request; waits while all are full. */
  async #take(failures: Map<string, unknown>, signal: AbortSignal | undefined): Promise<Lease> {
    const fleet = this.#fleet;
    try {
      for (;;) {
        const names = fleet.endpoints.map((e) => e.name).filter((n) => !failures.has(n));
        if (names.length === 0) throw noneLeft(failures);
        const marks = await fleet.store.downMarks(names);
        const healthy = names.filter((n) => !marks.has(n));
        // Endpoints marked down only as a last resort, the one back soonest first.
        const candidates =
          healthy.length > 0
            ? healthy
            : [...names].sort((a, b) => (marks.get(a)?.until ?? 0) - (marks.get(b)?.until ?? 0));
        const got = await fleet.store.tryAcquire(candidates, fleet.maxLoops, this.#leaseId);
        if (got !== undefined) return this.#hold(fleet.endpoints.find((e) => e.name === got)!);
        if (this.#waitingSince === undefined) {
          this.#waitingSince = performance.now();
          fleet.log?.info(
            { endpoints: candidates, cap: fleet.maxLoops },
            'waiting for a model slot',
          );
          this.#notifyWait(true, this.#waited);
        }
        await fleet.store.waitForRelease(fleet.waitPollMs, signal);
      }
    } finally {
      if (this.#waitingSince !== undefined) {
        this.#waited += performance.now() - this.#waitingSince;
        this.#waitingSince = undefined;
        this.#notifyWait(false, this.#waited);
      }
    }
  }

  #hold(endpoint: FleetEndpoint): Lease {
    const fleet = this.#fleet;
    const identity = endpoint.identity;
    const record: ModelEndpointRecord = {
      endpoint: endpoint.name,
      first_step: null,
      last_step: null,
      requests: 0,
      error: null,
      model_id: identity?.id ?? null,
      root: identity?.root ?? null,
      max_model_len: identity?.maxModelLen ?? null,
      owned_by: identity?.ownedBy ?? null,
      server_version: identity?.serverVersion ?? null,
    };
    this.#records.push(record);
    const renewal = setInterval(() => {
      fleet.store
        .renew(endpoint.name, this.#leaseId)
        .catch((error: unknown) =>
          fleet.log?.warn(
            { endpoint: endpoint.name, err: errorChain(error) },
            'model slot renewal failed',
          ),
        );
    }, fleet.store.renewEveryMs);
    renewal.unref();
    this.#lease = { endpoint, record, renewal };
    fleet.observer?.loopStarted(endpoint.name);
    return this.#lease;
  }

  async #drop(): Promise<void> {
    const lease = this.#lease;
    if (!lease) return;
    this.#lease = undefined;
    clearInterval(lease.renewal);
    this.#fleet.observer?.loopEnded(lease.endpoint.name);
    await this.#fleet.store
      .release(lease.endpoint.name, this.#leaseId)
      .catch((error: unknown) =>
        this.#fleet.log?.warn(
          { endpoint: lease.endpoint.name, err: errorChain(error) },
          'model slot release failed; it lapses by itself',
        ),
      );
  }

  #modelFor(endpoint: FleetEndpoint): Model {
    let model = this.#models.get(endpoint.name);
    if (!model) {
      model = createOpenAIModel(this.#fleet.configFor(endpoint, this.#options.headers));
      this.#models.set(endpoint.name, model);
    }
    return model;
  }

  #notifyWait(waiting: boolean, waitedMs: number): void {
    try {
      this.#options.onWait?.(waiting, waitedMs);
    } catch (error) {
      this.#fleet.log?.warn({ err: errorChain(error) }, 'onWait callback failed');
    }
  }
}

/** One endpoint: its own error, unchanged. Several: each one's, in one line. */
function noneLeft(failures: Map<string, unknown>): unknown {
  if (failures.size === 1) return [...failures.values()][0];
  const each = [...failures].map(([name, error]) => `${name}: ${errorChain(error)}`);
  return new NoModelEndpointLeft(`every model endpoint failed (${each.join('; ')})`);
}
