// The model fleet's events as metrics, per endpoint (the fleet knows nothing of prom-client).
import type { FleetObserver } from '../model-fleet/fleet.js';
import type { Metrics } from './registry.js';

export function fleetObserver(metrics: Metrics | undefined): FleetObserver | undefined {
  if (!metrics) return undefined;
  return {
    loopStarted: (endpoint) => metrics.endpointLoops.inc({ endpoint }),
    loopEnded: (endpoint) => metrics.endpointLoops.dec({ endpoint }),
    answered(endpoint, latencyMs, usage) {
      metrics.endpointRequests.inc({ endpoint });
      metrics.endpointLatency.observe({ endpoint }, latencyMs / 1000);
      metrics.endpointTokens.inc({ endpoint, kind: 'prompt' }, usage?.promptTokens ?? 0);
      metrics.endpointTokens.inc({ endpoint, kind: 'completion' }, usage?.completionTokens ?? 0);
    },
    failed: (endpoint, kind) => metrics.endpointErrors.inc({ endpoint, kind }),
    markedDown: (endpoint, forMs) => metrics.endpointDownSeconds.inc({ endpoint }, forMs / 1000),
  };
}
