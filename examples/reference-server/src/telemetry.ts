import type { Fleet } from '@mcp-fleet/core';
import type { Hono } from 'hono';
import { pino, type Logger } from 'pino';

/**
 * The server's one logger: JSON lines on stdout (pino), the fleet's request lines and warnings among them. `traceIds`
 * adds the current span's `trace_id` and `span_id` to each line once tracing is on (`startTracing`).
 */
export interface ServerLog {
  logger: Logger;
  /** What each line gains of the current trace context; none until tracing is on. */
  traceIds: () => Record<string, string>;
}

export function createLog(): ServerLog {
  const log: ServerLog = {
    traceIds: () => ({}),
    logger: pino({ name: 'mcp-fleet', mixin: () => log.traceIds() }),
  };
  return log;
}

/**
 * `MCP_FLEET_METRICS=1`: the fleet's metrics (@mcp-fleet/prometheus) and the process's own (prom-client's default
 * metrics: CPU, memory, event loop lag) at `GET /metrics`, outside the API like `/healthz`, without a key. Loaded only
 * then.
 */
export async function serveMetrics(app: Hono, fleet: Fleet): Promise<void> {
  const [{ metrics, metricsHandler }, { collectDefaultMetrics, Registry }] = await Promise.all([import('@mcp-fleet/prometheus'), import('prom-client')]);
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  metrics(fleet, { registry });
  const scrape = metricsHandler(registry);
  app.on(['GET', 'HEAD'], '/metrics', (c) => scrape(c.req.raw));
}
