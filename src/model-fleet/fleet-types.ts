// The fleet as its loops see it: its endpoints and the part of the fleet a loop calls back
// (fleet-loop.ts), apart from fleet.ts so the two do not import each other.
import type { Logger } from 'pino';
import type { ModelConfig } from '../leaf/openai-model.js';
import type { EndpointFailureKind } from './endpoint-failure.js';
import type { EndpointSpec } from './endpoint-url.js';
import type { FleetStore } from './fleet-store.js';
import type { EndpointIdentity } from './server-identity.js';

/**
 * Loops talking to one endpoint at once, across all workers. 8: on the latency curve measured
 * for a 4B model on an H200 (1.0, 1.07, 1.36, 1.8 times one sequence at 1, 2, 4, 8 at once),
 * 8 sequences give 4.4 times the throughput of one for steps 1.8 times slower; and a loop
 * spends part of its time in tools, so 8 loops keep fewer than 8 sequences on the GPU.
 */
export const DEFAULT_MODEL_MAX_LOOPS = 8;

/** What the fleet tells the metrics (src/metrics/fleet-instruments.ts). */
export interface FleetObserver {
  loopStarted(endpoint: string): void;
  loopEnded(endpoint: string): void;
  answered(
    endpoint: string,
    latencyMs: number,
    usage: { promptTokens?: number; completionTokens?: number } | undefined,
  ): void;
  failed(endpoint: string, kind: EndpointFailureKind | 'other'): void;
  markedDown(endpoint: string, forMs: number): void;
}

export interface FleetEndpoint extends EndpointSpec {
  /** What it said of itself at the last check. */
  identity?: EndpointIdentity;
}

/** What a loop asks of its fleet (ModelFleet implements it). */
export interface FleetLoopHost {
  readonly endpoints: readonly FleetEndpoint[];
  readonly maxLoops: number;
  readonly store: FleetStore;
  readonly waitPollMs: number;
  readonly observer: FleetObserver | undefined;
  readonly log: Logger | undefined;
  configFor(endpoint: FleetEndpoint, headers?: Record<string, string>): ModelConfig;
  markDown(endpoint: string, reason: string): Promise<void>;
}
