// The process's model fleet from its configuration: every endpoint of FROGNANO_MODEL_URL (or
// --model-url), the request settings, FROGNANO_MODEL_MAX_LOOPS, and Redis when
// FROGNANO_REDIS_URL is set (leases lapse after FROGNANO_LOST_WORKER_SECONDS, like a worker).
import type { Logger } from 'pino';
import { loadQueueConfig } from '../queue/open-queue.js';
import type { FleetObserver, ModelFleet } from './fleet.js';
import { modelConfigFrom, type ModelSettings } from './model-config-from.js';
import { openModelFleet } from './open-fleet.js';

export function modelFleetFrom(
  config: ModelSettings & { FROGNANO_MODEL_MAX_LOOPS: number },
  env: NodeJS.ProcessEnv,
  options: {
    overrides?: { baseUrl?: string; model?: string };
    observer?: FleetObserver;
    log?: Logger;
  } = {},
): ModelFleet {
  const queue = loadQueueConfig(env);
  return openModelFleet({
    urls: options.overrides?.baseUrl ?? config.FROGNANO_MODEL_URL,
    model: modelConfigFrom(config, options.overrides),
    maxLoops: config.FROGNANO_MODEL_MAX_LOOPS,
    ...(queue.FROGNANO_REDIS_URL
      ? {
          redis: {
            url: queue.FROGNANO_REDIS_URL,
            prefix: queue.FROGNANO_REDIS_PREFIX,
            leaseMs: queue.FROGNANO_LOST_WORKER_SECONDS * 1000,
          },
        }
      : {}),
    ...(options.observer ? { observer: options.observer } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
}
