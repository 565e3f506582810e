// The metrics of a process that runs the service: the queue's depth, and with workers the
// model endpoints' state (the fleet is made after the metrics, so it is asked for when scraped).
import type { ModelFleet } from '../model-fleet/fleet.js';
import type { Queue } from '../queue/types.js';
import { createMetrics, type Metrics } from './registry.js';

export function serviceMetrics(
  queue: Pick<Queue<unknown>, 'list'>,
  /** Absent: no workers here (`frognano serve`), so no endpoints to show. */
  fleet?: () => ModelFleet | undefined,
): Metrics {
  return createMetrics({
    queueDepth: async () => ({
      queued: (await queue.list('queued')).length,
      running: (await queue.list('running')).length,
    }),
    ...(fleet && {
      modelEndpoints: async () => {
        const current = fleet();
        if (!current) throw new Error('no fleet yet');
        return (await current.status()).map((s) => ({
          endpoint: s.endpoint.name,
          down: s.down !== undefined,
        }));
      },
    }),
  });
}
