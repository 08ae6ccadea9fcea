import type { FleetStats } from '@mcp-fleet/core';
import type { Attributes, BatchObservableCallback, Counter, Histogram, Meter } from '@opentelemetry/api';

/**
 * The explicit bucket boundaries (seconds) the MCP semantic conventions give `mcp.*.operation.duration`
 * (open-telemetry/semantic-conventions-genai docs/gen-ai/mcp.md); the fleet's own durations use them too.
 */
export const DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

/** How many distinct values one attribute of the metrics takes before further ones are recorded as `_OTHER`. */
export const MAX_ATTRIBUTE_VALUES = 1000;

/** The fleet's instruments, on the meter given. */
export interface FleetInstruments {
  serverDuration: Histogram;
  clientDuration: Histogram;
  httpDuration: Histogram;
  probeDuration: Histogram;
  deliveryDuration: Histogram;
  rateLimitDecisions: Counter;
  authOutcomes: Counter;
  /** Metric attributes whose values come from the registry (server ids, tool names): bounded, then `_OTHER`. */
  clamp(key: string, value: string): string;
}

export function fleetInstruments(meter: Meter): FleetInstruments {
  const seconds = (name: string, description: string) =>
    meter.createHistogram(name, { unit: 's', description, advice: { explicitBucketBoundaries: DURATION_BUCKETS } });
  const seen = new Map<string, Set<string>>();
  return {
    serverDuration: seconds('mcp.server.operation.duration', 'MCP request duration as observed on the receiver, from its arrival until the result is sent.'),
    clientDuration: seconds('mcp.client.operation.duration', 'MCP request duration as observed on the sender, from the time it was sent until the response is received.'),
    httpDuration: seconds('http.server.request.duration', 'Duration of the HTTP requests to the fleet.'),
    probeDuration: seconds('mcp_fleet.probe.duration', 'Duration of the probes of upstream MCP servers, by server and outcome.'),
    deliveryDuration: seconds('mcp_fleet.webhook.delivery.duration', 'Duration of the webhook delivery attempts, by event type and outcome.'),
    rateLimitDecisions: meter.createCounter('mcp_fleet.ratelimit.decisions', { unit: '{decision}', description: 'Rate-limit decisions, by binding limit and verdict.' }),
    authOutcomes: meter.createCounter('mcp_fleet.auth.outcomes', { unit: '{authentication}', description: 'Authentications of requests that carried a credential, by method and outcome.' }),
    clamp(key, value) {
      let values = seen.get(key);
      if (values === undefined) seen.set(key, (values = new Set()));
      if (values.has(value)) return value;
      if (values.size >= MAX_ATTRIBUTE_VALUES) return '_OTHER';
      values.add(value);
      return value;
    },
  };
}

/** The attributes of a metric point: those of a span minus what must never be a label. */
export function metricAttributes(attributes: Attributes, keep: readonly string[], clamp: FleetInstruments['clamp'], clamped: readonly string[]): Attributes {
  const out: Attributes = {};
  for (const key of keep) {
    const value = attributes[key];
    if (value === undefined) continue;
    out[key] = clamped.includes(key) && typeof value === 'string' ? clamp(key, value) : value;
  }
  return out;
}

/**
 * The gauges of one fleet, observed only when the meter is read (a scrape, an export): `fleet.stats()` once per
 * reading, nothing on the request path. A count `stats()` could not read (`undefined`: a store that failed, already
 * told to the fleet's `onError`) is left out of that reading. Answers the function that removes them.
 */
export function fleetGauges(meter: Meter, stats: () => Promise<FleetStats>): () => void {
  const sessions = meter.createObservableGauge('mcp_fleet.sessions.live', { unit: '{session}', description: '2025-era MCP sessions held live by this process.' });
  const processes = meter.createObservableGauge('mcp_fleet.stdio.processes', { unit: '{process}', description: 'stdio server processes this process runs.' });
  const pending = meter.createObservableGauge('mcp_fleet.webhook.outbox.pending', { unit: '{delivery}', description: 'Webhook deliveries neither delivered nor given up, over the shared store.' });
  const observe: BatchObservableCallback = async (observer) => {
    const now = await stats();
    observer.observe(sessions, now.sessions);
    observer.observe(processes, now.stdioProcesses);
    if (now.outboxPending !== undefined) observer.observe(pending, now.outboxPending);
  };
  const observed = [sessions, processes, pending];
  meter.addBatchObservableCallback(observe, observed);
  return () => meter.removeBatchObservableCallback(observe, observed);
}
