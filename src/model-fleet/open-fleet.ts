// A fleet from configuration: the endpoints of a URL list, the request settings, the cap, and
// the store (Redis when FROGNANO_REDIS_URL is set, so every worker shares the cap; else this
// process alone).
import type { Logger } from 'pino';
import { ModelConfig, type ModelConfigInput } from '../leaf/openai-model.js';
import { parseEndpoints, splitModelUrls } from './endpoint-url.js';
import { ModelFleet, type FleetObserver } from './fleet.js';
import { DEFAULT_MODEL_MAX_LOOPS } from './fleet-types.js';
import type { FleetStore } from './fleet-store.js';
import { MemoryFleetStore } from './memory-store.js';
import { RedisFleetStore } from './redis-store.js';

export interface OpenFleetOptions {
  /** FROGNANO_MODEL_URL: one URL, or several separated by commas. */
  urls: string;
  /** The request settings; its `baseUrl` is ignored (each endpoint has its own). */
  model: Omit<ModelConfigInput, 'baseUrl'> & { baseUrl?: string };
  maxLoops?: number;
  /** Shares leases and marks across workers. */
  redis?: { url: string; prefix: string; leaseMs: number };
  downMs?: number;
  observer?: FleetObserver;
  log?: Logger;
}

export function openModelFleet(options: OpenFleetOptions): ModelFleet {
  const { baseUrl: _ignored, ...model } = options.model;
  const store: FleetStore = options.redis
    ? new RedisFleetStore({ ...options.redis, ...(options.log ? { log: options.log } : {}) })
    : new MemoryFleetStore();
  return new ModelFleet({
    endpoints: parseEndpoints(splitModelUrls(options.urls)),
    model,
    maxLoops: options.maxLoops ?? DEFAULT_MODEL_MAX_LOOPS,
    store,
    ...(options.downMs !== undefined ? { downMs: options.downMs } : {}),
    ...(options.observer ? { observer: options.observer } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
}

/** A fleet of one client configuration's endpoint, for one run (no process-wide fleet given). */
export function fleetOfModelConfig(input: ModelConfigInput, log?: Logger): ModelFleet {
  const config = ModelConfig.parse(input);
  return openModelFleet({ urls: config.baseUrl, model: config, ...(log ? { log } : {}) });
}
