// Prometheus metrics of mcp-fleet, from its trace points, in the host's prom-client registry (docs/observability.md).
export { HTTP_DURATION_BUCKETS, MCP_DURATION_BUCKETS, metrics, type FleetMetrics, type MetricsOptions } from './metrics.js';
export { metricsHandler, nodeMetricsHandler, type MetricsHandler, type NodeMetricsHandler } from './handler.js';
export { OTHER } from './labels.js';
