import { channel, tracingChannel } from 'node:diagnostics_channel';
import {
  type AuthMessage,
  type Fleet,
  type FleetStats,
  type HttpRequestMessage,
  type McpClientMessage,
  type McpServerMessage,
  type OperationMessage,
  type ProbeMessage,
  type RateLimitMessage,
  type Settled,
  TRACE_CHANNELS,
  type WebhookDeliveryMessage,
} from '@mcp-fleet/core';
import { Counter, Gauge, Histogram, register as defaultRegistry, type Registry } from 'prom-client';
import { type LabelLimits, MetricLabels, OTHER } from './labels.js';

export interface MetricsOptions {
  /** The prom-client registry the metrics are registered in, the host's (`@hono/prometheus` and express-prom-bundle take theirs the same way). @default prom-client's `register` */
  registry?: Registry;
  /** Put before every metric's name (`myapp_` gives `myapp_mcp_server_operation_duration_seconds`). @default '' */
  prefix?: string;
  /** Distinct values one label of one metric may take; a new value past them is counted as `_OTHER`. @default 100 */
  maxLabelValues?: number;
  /** Characters of a label value; a longer value (a tool's name) is cut to this length. @default 128 */
  maxLabelLength?: number;
}

export interface FleetMetrics {
  /** Stops counting and removes the metrics from the registry; `metrics()` may then be called again. */
  close(): void;
}

/**
 * Bucket boundaries in seconds of the OpenTelemetry semantic conventions: MCP's `mcp.*.operation.duration` (also used
 * for probes, operations and webhook deliveries, which call upstreams and receivers) and HTTP's
 * `http.server.request.duration`.
 */
export const MCP_DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];
export const HTTP_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

/** HTTP methods a label may name; any other is `_OTHER`, so that a client cannot make series by inventing methods. */
const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

interface Subscription {
  off(): void;
}

/**
 * Counts what every fleet of the process does, from its trace points on `node:diagnostics_channel`
 * (docs/observability.md), as Prometheus metrics in `registry`: the MCP semantic conventions' operation durations
 * (`mcp_server_operation_duration_seconds`, `mcp_client_operation_duration_seconds`) and the fleet's own
 * (`mcp_fleet_*`). Label values come from the registry and the route table, each clamped (`maxLabelValues`,
 * `maxLabelLength`); session, request and key ids are never labels. Throws if `registry` already holds these metrics
 * (call it once per registry, or `close()` the first).
 *
 * The trace points are the process's, not one fleet's: every fleet in the process is counted, whichever is passed;
 * `fleet` gives the `route` label its prefix (`/v1/servers/:id`), as `@mcp-fleet/otel`'s `instrument(fleet)` does,
 * and adds that fleet's gauges, read from `fleet.stats()` at each scrape: `mcp_fleet_sessions_live`,
 * `mcp_fleet_stdio_processes` and (with webhooks) `mcp_fleet_webhook_outbox_pending`. Without a fleet, no gauges.
 */
export function metrics(fleet?: Fleet | MetricsOptions, options?: MetricsOptions): FleetMetrics {
  const given = isFleet(fleet) || fleet === undefined ? (options ?? {}) : fleet;
  // The whole route below the adapter's mount (`/v1/servers/:id`), as @mcp-fleet/otel's `http.route`.
  const routePrefix = isFleet(fleet) ? fleet.prefix : '';
  const registry = given.registry ?? defaultRegistry;
  const prefix = given.prefix ?? '';
  const limits: LabelLimits = { maxValues: positive('maxLabelValues', given.maxLabelValues ?? 100), maxLength: positive('maxLabelLength', given.maxLabelLength ?? 128) };
  if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$|^$/.test(prefix)) throw new TypeError(`metrics(): prefix must be a Prometheus name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*), got ${JSON.stringify(prefix)}`);

  const made: (Histogram | Counter | Gauge)[] = [];
  const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) => {
    const metric = new Histogram<L>({ name: prefix + name, help, labelNames, buckets, registers: [] });
    made.push(metric);
    return { metric, labels: new MetricLabels<L>(limits) };
  };
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) => {
    const metric = new Counter<L>({ name: prefix + name, help, labelNames, registers: [] });
    made.push(metric);
    return { metric, labels: new MetricLabels<L>(limits) };
  };

  const mcpServer = histogram(
    'mcp_server_operation_duration_seconds',
    'MCP request duration as observed on the receiver (the fleet at /mcp and /servers/{id}/mcp), from its arrival to its answer.',
    ['mcp_method_name', 'gen_ai_tool_name', 'error_type'],
    MCP_DURATION_BUCKETS,
  );
  const mcpClient = histogram(
    'mcp_client_operation_duration_seconds',
    'MCP request duration as observed on the sender (the fleet calling an upstream server), from its sending to its answer.',
    ['mcp_method_name', 'gen_ai_tool_name', 'error_type', 'network_transport'],
    MCP_DURATION_BUCKETS,
  );
  const http = histogram(
    'mcp_fleet_http_request_duration_seconds',
    "Duration of the fleet HTTP API's requests, from their arrival to their answer (a stream's body may go on).",
    ['method', 'route', 'status_class'],
    HTTP_DURATION_BUCKETS,
  );
  const operation = histogram(
    'mcp_fleet_operation_duration_seconds',
    'Duration of the fleet operations (servers.create, tools.call…), whichever door called them (http, mcp, api).',
    ['operation', 'via', 'outcome', 'error_code'],
    MCP_DURATION_BUCKETS,
  );
  const probe = histogram('mcp_fleet_probe_duration_seconds', 'Duration of the health probes of each server, by outcome.', ['server_id', 'transport', 'outcome', 'error_code'], MCP_DURATION_BUCKETS);
  const delivery = histogram(
    'mcp_fleet_webhook_delivery_duration_seconds',
    'Duration of the attempts to deliver a webhook event, by outcome and the receiver status class.',
    ['event_type', 'outcome', 'status_class', 'error_code'],
    MCP_DURATION_BUCKETS,
  );
  const rateLimit = counter('mcp_fleet_ratelimit_decisions_total', 'Rate-limit decisions, by the binding limit and whether the request was allowed.', ['scope', 'allowed']);
  const auth = counter('mcp_fleet_auth_outcomes_total', 'Authentications of requests that carried a credential, by method and outcome.', ['method', 'outcome']);

  // The passed fleet's gauges, read at scrape time: one `fleet.stats()` per scrape, shared by the three collects
  // (prom-client starts every metric's collect before awaiting any). A count it could not read is no sample.
  if (isFleet(fleet)) {
    let reading: Promise<FleetStats> | undefined;
    const read = () => (reading ??= fleet.stats().finally(() => (reading = undefined)));
    const gauge = (name: string, help: string, of: (stats: FleetStats) => number | undefined) => {
      made.push(
        new Gauge({
          name: prefix + name,
          help,
          registers: [],
          async collect() {
            const value = of(await read());
            if (value === undefined) this.remove();
            else this.set(value);
          },
        }),
      );
    };
    gauge('mcp_fleet_sessions_live', '2025-era MCP sessions held live by this process.', (stats) => stats.sessions);
    gauge('mcp_fleet_stdio_processes', 'stdio server processes this process runs.', (stats) => stats.stdioProcesses);
    if (fleet.webhooks !== undefined) gauge('mcp_fleet_webhook_outbox_pending', 'Webhook deliveries neither delivered nor given up, over the shared store.', (stats) => stats.outboxPending);
  }

  // Registered only once all are made, and all or none: a registry holding one of them already refuses the call whole.
  const taken = made.filter((metric) => registry.getSingleMetric(nameOf(metric)) !== undefined).map(nameOf);
  if (taken.length > 0) {
    throw new Error(`metrics(): the registry already holds ${taken.join(', ')}: call metrics() once per registry (it counts every fleet of the process), close() the first, or pass another prefix`);
  }
  for (const metric of made) registry.registerMetric(metric);

  const subscriptions: Subscription[] = [
    traced<McpServerMessage>(TRACE_CHANNELS.mcpServer, (message, seconds) => {
      const error = message.is_error === true ? 'tool_error' : message.outcome === 'error' ? String(message.jsonrpc_error_code ?? message.error_code ?? OTHER) : undefined;
      mcpServer.metric.observe(mcpServer.labels.of({ mcp_method_name: message.method, gen_ai_tool_name: message.tool_name, error_type: error }), seconds);
    }),
    traced<McpClientMessage>(TRACE_CHANNELS.mcpClient, (message, seconds) => {
      const error = message.is_error === true ? 'tool_error' : message.outcome === 'error' ? (message.error_code ?? OTHER) : undefined;
      mcpClient.metric.observe(
        mcpClient.labels.of({ mcp_method_name: message.method, gen_ai_tool_name: message.tool_name, error_type: error, network_transport: message.transport === 'stdio' ? 'pipe' : 'tcp' }),
        seconds,
      );
    }),
    traced<HttpRequestMessage>(TRACE_CHANNELS.httpRequest, (message, seconds) => {
      const method = HTTP_METHODS.has(message.method) ? message.method : OTHER;
      const { route, status } = message;
      const labels = http.labels.keyed([method, route, status], () => ({ method, route: route === null ? 'unmatched' : routePrefix + route, status_class: statusClass(status) }));
      http.metric.observe(labels, seconds);
    }),
    traced<OperationMessage>(TRACE_CHANNELS.operation, (message, seconds) => {
      const { operation: name, via, outcome, error_code } = message;
      const labels = operation.labels.keyed([name, via, outcome, error_code], () => ({ operation: name, via, outcome, error_code }));
      operation.metric.observe(labels, seconds);
    }),
    published<ProbeMessage>(TRACE_CHANNELS.probe, (message) => {
      probe.metric.observe(probe.labels.of({ server_id: message.server_id, transport: message.transport, outcome: message.outcome, error_code: message.error_code }), message.duration_ms / 1000);
    }),
    published<WebhookDeliveryMessage>(TRACE_CHANNELS.webhookDelivery, (message) => {
      delivery.metric.observe(
        delivery.labels.of({ event_type: message.event_type, outcome: message.outcome, status_class: statusClass(message.status_code), error_code: message.error_code }),
        message.duration_ms / 1000,
      );
    }),
    published<RateLimitMessage>(TRACE_CHANNELS.rateLimit, (message) => {
      const { scope, allowed } = message;
      rateLimit.metric.inc(rateLimit.labels.keyed([scope, allowed], () => ({ scope, allowed: String(allowed) })));
    }),
    published<AuthMessage>(TRACE_CHANNELS.auth, (message) => {
      const { method, outcome } = message;
      auth.metric.inc(auth.labels.keyed([method, outcome], () => ({ method, outcome })));
    }),
  ];

  let closed = false;
  return {
    close() {
      if (closed) return;
      closed = true;
      for (const subscription of subscriptions) subscription.off();
      // Only what is still ours: the host may have cleared the registry and registered others under these names.
      for (const metric of made) if (registry.getSingleMetric(nameOf(metric)) === metric) registry.removeSingleMetric(nameOf(metric));
    },
  };
}

function isFleet(value: Fleet | MetricsOptions | undefined): value is Fleet {
  return typeof (value as Fleet | undefined)?.handle === 'function';
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new TypeError(`metrics(): ${name} must be a positive integer, got ${String(value)}`);
  return value;
}

function nameOf(metric: Histogram | Counter | Gauge): string {
  return (metric as unknown as { name: string }).name;
}

/** `2xx`…`5xx`; `none` when no status came (a webhook receiver that never answered). */
function statusClass(status: number | null | undefined): string {
  if (status === null || status === undefined || status < 100 || status > 599) return 'none';
  return `${Math.floor(status / 100)}xx`;
}

/**
 * Times each action of a TracingChannel: from `start` to `end` when it was answered at once (its outcome is then set
 * at `end`), else to `asyncEnd`.
 */
function traced<M extends Settled>(name: string, done: (message: M, seconds: number) => void): Subscription {
  const traceChannel = tracingChannel<unknown, M>(name);
  const started = new WeakMap<object, number>();
  const finish = (message: M) => {
    const at = started.get(message);
    if (at === undefined) return;
    started.delete(message);
    done(message, (performance.now() - at) / 1000);
  };
  const handlers = {
    start: (message: M) => void started.set(message, performance.now()),
    end: (message: M) => {
      if (message.outcome !== undefined) finish(message);
    },
    asyncStart: () => {},
    asyncEnd: finish,
    error: () => {},
  };
  traceChannel.subscribe(handlers);
  return { off: () => traceChannel.unsubscribe(handlers) };
}

function published<M>(name: string, done: (message: M) => void): Subscription {
  const listener = (message: unknown) => done(message as M);
  channel(name).subscribe(listener);
  return { off: () => channel(name).unsubscribe(listener) };
}
