// The App's metrics: one registry per App (tests start many Apps in one process), the Node
// process metrics once per process, both in one Prometheus text exposition.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Runs in the shared queue by state, as the queue reports them at scrape time. */
export interface QueueDepth {
  queued: number;
  running: number;
}

export interface MetricsOptions {
  /**
   * Read on every scrape. May be async: the queue's interface is becoming async (BullMQ);
   * a throw leaves the gauge out of that scrape rather than failing the whole page.
   */
  queueDepth?: () => QueueDepth | Promise<QueueDepth>;
  /** Read on every scrape: which model endpoints are marked down now (by any worker). */
  modelEndpoints?: () => Promise<ModelEndpointState[]>;
}

/** One model endpoint as the fleet's store sees it at scrape time. */
export interface ModelEndpointState {
  endpoint: string;
  down: boolean;
}

export interface Metrics {
  readonly registry: Registry;
  readonly queueRuns: Gauge<'state'>;
  readonly runsRunning: Gauge;
  readonly runsFinished: Counter<'state' | 'outcome'>;
  readonly runDuration: Histogram<'state'>;
  readonly phaseDuration: Histogram<'phase'>;
  readonly modelTokens: Counter<'kind'>;
  readonly modelRequests: Counter;
  readonly webhookDeliveries: Counter<'decision' | 'trigger'>;
  readonly sandboxStarts: Counter<'kind' | 'snapshot'>;
  readonly endpointLoops: Gauge<'endpoint'>;
  readonly endpointRequests: Counter<'endpoint'>;
  readonly endpointErrors: Counter<'endpoint' | 'kind'>;
  readonly endpointDownSeconds: Counter<'endpoint'>;
  readonly endpointDown: Gauge<'endpoint'>;
  readonly endpointLatency: Histogram<'endpoint'>;
  readonly endpointTokens: Counter<'endpoint' | 'kind'>;
  /** The whole page: this App's metrics, then the process's (`process_*`, `nodejs_*`). */
  scrape(): Promise<string>;
  readonly contentType: string;
}

// Runs last minutes to an hour or so; phases from well under a second (config) to the agent loop.
const RUN_BUCKETS = [5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200];
const PHASE_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
// One chat completion: a short tool call in well under a second, a long thought in minutes.
const REQUEST_BUCKETS = [0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600];

let processRegistry: Registry | undefined;

/**
 * Node's default metrics start observers (GC, event-loop delay) that cannot be stopped: made
 * once per process, whatever the number of Apps in it.
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  // The order they are made in is the order of the page: keep it.
  const scraped = scrapedGauges(options, registers);
  const endpoints = endpointInstruments(registers);
  const runs = runInstruments(registers);
  const events = eventInstruments(registers);
  const processRegistry = processMetrics();
  return {
    ...scraped,
    ...endpoints,
    ...runs,
    ...events,
    registry,
    contentType: registry.contentType,
    async scrape() {
      const [own, proc] = await Promise.all([registry.metrics(), processRegistry.metrics()]);
      return `${own}\n${proc}`;
    },
  };
}

/** Gauges read at scrape time from the shared queue and the fleet's store (when given). */
function scrapedGauges(options: MetricsOptions, registers: Registry[]) {
  const { queueDepth, modelEndpoints } = options;
  const queueRuns = new Gauge({
    name: 'frognano_queue_runs',
    help: 'Runs in the queue by state (queued, running), read from the queue at scrape time',
    labelNames: ['state'] as const,
    registers: queueDepth ? registers : [],
    async collect() {
      this.reset();
      let depth: QueueDepth;
      try {
        depth = await queueDepth!();
      } catch {
        return; // the queue is closed or unreachable: no figure rather than a wrong one
      }
      this.set({ state: 'queued' }, depth.queued);
      this.set({ state: 'running' }, depth.running);
    },
  });
  const endpointDown = new Gauge({
    name: 'frognano_model_endpoint_down',
    help: 'Model endpoints marked down now (1), by any worker sharing the store, read at scrape time',
    labelNames: ['endpoint'] as const,
    registers: modelEndpoints ? registers : [],
    async collect() {
      this.reset();
      let states: ModelEndpointState[];
      try {
        states = await modelEndpoints!();
      } catch {
        return; // the store is unreachable: no figure rather than a wrong one
      }
      for (const state of states) this.set({ endpoint: state.endpoint }, state.down ? 1 : 0);
    },
  });
  return { queueRuns, endpointDown };
}

/** What this process asked of each model endpoint: loops, requests, errors, time, tokens. */
function endpointInstruments(registers: Registry[]) {
  return {
    endpointLoops: new Gauge({
      name: 'frognano_model_endpoint_loops',
      help: 'Agent loops of this process holding a slot on each model endpoint now',
      labelNames: ['endpoint'] as const,
      registers,
    }),
    endpointRequests: new Counter({
      name: 'frognano_model_endpoint_requests_total',
      help: 'Chat completions each model endpoint answered for this process',
      labelNames: ['endpoint'] as const,
      registers,
    }),
    endpointErrors: new Counter({
      name: 'frognano_model_endpoint_errors_total',
      help: 'Chat completions that failed after the client retries, by endpoint and kind (connection, timeout, server_error, too_large, other)',
      labelNames: ['endpoint', 'kind'] as const,
      registers,
    }),
    endpointDownSeconds: new Counter({
      name: 'frognano_model_endpoint_down_seconds_total',
      help: 'Seconds this process marked each model endpoint down for',
      labelNames: ['endpoint'] as const,
      registers,
    }),
    endpointLatency: new Histogram({
      name: 'frognano_model_endpoint_request_duration_seconds',
      help: 'Wall time of a chat completion a model endpoint answered, retries included',
      labelNames: ['endpoint'] as const,
      buckets: REQUEST_BUCKETS,
      registers,
    }),
    endpointTokens: new Counter({
      name: 'frognano_model_endpoint_tokens_total',
      help: 'Tokens each model endpoint reported, by kind (prompt, completion), as they are answered',
      labelNames: ['endpoint', 'kind'] as const,
      registers,
    }),
  };
}

/** The runs of this process: running now, finished, how long, and what the model did. */
function runInstruments(registers: Registry[]) {
  return {
    runsRunning: new Gauge({
      name: 'frognano_runs_running',
      help: 'Runs this process is running now',
      registers,
    }),
    runsFinished: new Counter({
      name: 'frognano_runs_finished_total',
      help: 'Runs this process finished, by final state and outcome',
      labelNames: ['state', 'outcome'] as const,
      registers,
    }),
    runDuration: new Histogram({
      name: 'frognano_run_duration_seconds',
      help: 'Wall time of a run in this process, from claim to its final status, by final state',
      labelNames: ['state'] as const,
      buckets: RUN_BUCKETS,
      registers,
    }),
    phaseDuration: new Histogram({
      name: 'frognano_run_phase_duration_seconds',
      help: 'Time from the start of a run phase to the start of the next (or the pipeline end)',
      labelNames: ['phase'] as const,
      buckets: PHASE_BUCKETS,
      registers,
    }),
    modelTokens: new Counter({
      name: 'frognano_model_tokens_total',
      help: 'Tokens the model server reported for finished runs, by kind (prompt, completion)',
      labelNames: ['kind'] as const,
      registers,
    }),
    modelRequests: new Counter({
      name: 'frognano_model_requests_total',
      help: 'Chat completion requests answered by the model for finished runs (agent steps)',
      registers,
    }),
  };
}

/** Events around runs: webhook deliveries and the sandboxes brought up. */
function eventInstruments(registers: Registry[]) {
  return {
    webhookDeliveries: new Counter({
      name: 'frognano_webhook_deliveries_total',
      help: 'Verified webhook deliveries by decision (ignored, accepted, duplicate) and trigger',
      labelNames: ['decision', 'trigger'] as const,
      registers,
    }),
    sandboxStarts: new Counter({
      name: 'frognano_sandbox_starts_total',
      help: 'Sandboxes brought up for runs, by kind (docker, local) and setup snapshot (hit, miss)',
      labelNames: ['kind', 'snapshot'] as const,
      registers,
    }),
  };
}
