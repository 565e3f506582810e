// The metrics room's one door: the registry factory, the instrument calls, the HTTP side.
export {
  createMetrics,
  type Metrics,
  type MetricsOptions,
  type ModelEndpointState,
  type QueueDepth,
} from './registry.js';
export { fleetObserver } from './fleet-instruments.js';
export { serviceMetrics } from './service-metrics.js';
export {
  countDelivery,
  countRunResult,
  startPhaseClock,
  startRunClock,
  type PhaseClock,
  type RunClock,
} from './instruments.js';
export { metricsHandler, startMetricsServer, type MetricsServer } from './http.js';
