// Several OpenAI-compatible endpoints (one vLLM or SGLang per GPU) as one fleet. Each agent loop
// is pinned to one endpoint for all its requests (only the server that answered its last step
// holds its prefix cache); a new loop goes to the healthy endpoint with the fewest loops in
// flight; at most `maxLoops` loops talk to one endpoint at once (a lease in the store, shared by
// every worker with Redis). An endpoint that fails after the client's retries is marked down for
// a while and its loops go on elsewhere with their whole history.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import {
  endpointCredentials,
  inspectModelEndpoint,
  type ModelConfig,
  type ModelConfigInput,
} from '../leaf/openai-model.js';
import { redactCredentials } from '../redact.js';
import { endpointModelConfig } from './endpoint-config.js';
import type { EndpointSpec } from './endpoint-url.js';
import { errorChain } from './endpoint-failure.js';
import { FleetLoop, type FleetLoopOptions } from './fleet-loop.js';
import type { DownMark, FleetStore } from './fleet-store.js';
import type { FleetEndpoint, FleetObserver } from './fleet-types.js';
import { MemoryFleetStore } from './memory-store.js';
import { fetchServerVersion, type EndpointIdentity } from './server-identity.js';

/** How long an endpoint that failed stays out of the choice for new requests. */
export const DEFAULT_DOWN_MS = 30_000;

export type { FleetEndpoint, FleetObserver } from './fleet-types.js';

export interface ModelFleetOptions {
  endpoints: readonly EndpointSpec[];
  /** The request settings of every endpoint (its `baseUrl` is each endpoint's own). */
  model: Omit<ModelConfigInput, 'baseUrl'>;
  /** Loops talking to one endpoint at once (FROGNANO_MODEL_MAX_LOOPS). */
  maxLoops: number;
  /** Default: in-process. */
  store?: FleetStore;
  downMs?: number;
  /** A waiting loop tries again at least this often (default 1 s). */
  waitPollMs?: number;
  observer?: FleetObserver;
  log?: Logger;
}

export type EndpointCheck =
  | { endpoint: FleetEndpoint; ok: true; identity: EndpointIdentity }
  | { endpoint: FleetEndpoint; ok: false; message: string };

export interface EndpointStatus {
  endpoint: FleetEndpoint;
  loops: number;
  down?: DownMark;
}

export class ModelFleet {
  readonly endpoints: readonly FleetEndpoint[];
  readonly maxLoops: number;
  readonly store: FleetStore;
  readonly downMs: number;
  readonly waitPollMs: number;
  readonly observer: FleetObserver | undefined;
  readonly log: Logger | undefined;
  readonly #model: Omit<ModelConfigInput, 'baseUrl'>;
  readonly #downUntil = new Map<string, number>();

  constructor(options: ModelFleetOptions) {
    if (options.endpoints.length === 0) throw new Error('a model fleet needs an endpoint');
    this.endpoints = options.endpoints.map((e) => ({ ...e }));
    this.maxLoops = options.maxLoops;
    this.store = options.store ?? new MemoryFleetStore();
    this.downMs = options.downMs ?? DEFAULT_DOWN_MS;
    this.waitPollMs = options.waitPollMs ?? 1000;
    this.observer = options.observer;
    this.log = options.log;
    this.#model = options.model;
  }

  /** The request settings for one endpoint, with `headers` (a loop's own) added. */
  configFor(endpoint: FleetEndpoint, headers: Record<string, string> = {}): ModelConfig {
    return endpointModelConfig(this.#model, endpoint, headers);
  }

  /** A Model for one agent loop: pinned to one endpoint, moved on only when it fails. */
  loop(options: FleetLoopOptions = {}): FleetLoop {
    return new FleetLoop(this, randomUUID(), options);
  }

  /**
   * `GET /models` (and the version) on every endpoint, at once: what each serves, or why it
   * cannot serve this model. One that cannot is marked down.
   */
  async check(options: { timeoutMs?: number } = {}): Promise<EndpointCheck[]> {
    return Promise.all(
      this.endpoints.map(async (endpoint): Promise<EndpointCheck> => {
        const config = this.configFor(endpoint);
        try {
          const served = await inspectModelEndpoint(config, options);
          const serverVersion = await fetchServerVersion(
            endpoint.baseUrl,
            config.headers ?? {},
            Math.min(options.timeoutMs ?? 3000, 3000),
          );
          endpoint.identity = { ...served, serverVersion };
          return { endpoint, ok: true, identity: endpoint.identity };
        } catch (error) {
          const message = redactCredentials(errorChain(error), endpointCredentials(config));
          // The caller reports the check's findings (solve's warning, the run's log line).
          await this.markDown(endpoint.name, message, { quiet: true }).catch(() => undefined);
          return { endpoint, ok: false, message };
        }
      }),
    );
  }

  /** Loops in flight (all workers sharing the store) and the marks in force, per endpoint. */
  async status(): Promise<EndpointStatus[]> {
    const names = this.endpoints.map((e) => e.name);
    const [loads, marks] = await Promise.all([
      this.store.loads(names),
      this.store.downMarks(names),
    ]);
    return this.endpoints.map((endpoint) => {
      const down = marks.get(endpoint.name);
      return { endpoint, loops: loads.get(endpoint.name) ?? 0, ...(down ? { down } : {}) };
    });
  }

  async markDown(
    endpoint: string,
    reason: string,
    options: { quiet?: boolean } = {},
  ): Promise<void> {
    const now = Date.now();
    const until = now + this.downMs;
    // Time marked down, counted once even when several loops mark it at once.
    const counted = Math.max(0, until - Math.max(now, this.#downUntil.get(endpoint) ?? 0));
    this.#downUntil.set(endpoint, until);
    if (!options.quiet) {
      this.log?.warn({ endpoint, reason, forMs: this.downMs }, 'model endpoint marked down');
    }
    if (counted > 0) this.observer?.markedDown(endpoint, counted);
    await this.store.markDown(endpoint, this.downMs, reason);
  }

  /** Marks lapse by themselves; this is for tests and the doctor's view of them. */
  async downMarks(): Promise<Map<string, DownMark>> {
    return this.store.downMarks(this.endpoints.map((e) => e.name));
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}
