import { createHash, timingSafeEqual } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Fleet } from '@mcp-fleet/core';
import type { Span, Tracer, TracerProvider } from '@opentelemetry/api';
import type { Hono } from 'hono';
import { pino, type Logger } from 'pino';

/**
 * The server's one logger: JSON lines on stdout (pino), the fleet's request lines and warnings among them. `traceIds`
 * adds `trace_id` and `span_id` to a line once tracing is on (`startOpenTelemetry`).
 */
export interface ServerLog {
  logger: Logger;
  /** What a line with these fields gains of its trace; nothing until tracing is on. */
  traceIds: (fields: object) => Record<string, string>;
}

export function createLog(): ServerLog {
  const log: ServerLog = {
    traceIds: () => ({}),
    logger: pino({ name: 'mcp-fleet', mixin: (fields) => log.traceIds(fields) }),
  };
  return log;
}

/**
 * `MCP_FLEET_METRICS=1`: the fleet's metrics (@mcp-fleet/prometheus) and the process's own (prom-client's default
 * metrics: CPU, memory, event loop lag) at `GET /metrics`, outside the API like `/healthz`, without an API key: with
 * `MCP_FLEET_METRICS_TOKEN`, only to a scraper that sends it as a bearer token. Loaded only then.
 */
/** Compared as digests: equal lengths, and the time taken says nothing of the token. */
const digest = (value: string) => createHash('sha256').update(value).digest();

export async function serveMetrics(app: Hono, fleet: Fleet, token: string | undefined): Promise<void> {
  const [{ metrics, metricsHandler }, { collectDefaultMetrics, Registry }] = await Promise.all([import('@mcp-fleet/prometheus'), import('prom-client')]);
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  metrics(fleet, { registry });
  const scrape = metricsHandler(registry);
  const expected = token === undefined ? undefined : digest(`Bearer ${token}`);
  app.on(['GET', 'HEAD'], '/metrics', (c) => {
    if (expected !== undefined && !timingSafeEqual(digest(c.req.header('authorization') ?? ''), expected)) {
      return c.text('/metrics needs the bearer token of MCP_FLEET_METRICS_TOKEN (Prometheus: authorization.credentials in the scrape config)\n', 401, {
        'www-authenticate': 'Bearer realm="metrics"',
      });
    }
    return scrape(c.req.raw);
  });
}

/** Whether the OpenTelemetry variables ask for an OTLP export: an endpoint set, and the SDK not disabled. */
export function otlpWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  return [env.OTEL_EXPORTER_OTLP_ENDPOINT, env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT].some((value) => (value?.trim() ?? '') !== '');
}

/** How long the stop waits for the last export. */
const SHUTDOWN_MS = 3000;

/** Requests whose span is still waiting for its log line, at most: past it the oldest is forgotten. */
const AWAITED_REQUESTS = 10_000;

/**
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (and the other `OTEL_*` variables, read by the OpenTelemetry Node SDK itself: protocol
 * `http/protobuf` or `http/json`, headers, service name, sampler, export intervals): traces and metrics over OTLP,
 * recorded by @mcp-fleet/otel. The SDK is loaded only then. Each request's log line gains the `trace_id` and
 * `span_id` of the fleet's span of that request. Answers what flushes and stops it all, for the shutdown.
 */
export async function startOpenTelemetry(fleet: Fleet, log: ServerLog, env: NodeJS.ProcessEnv): Promise<() => Promise<void>> {
  const [{ NodeSDK }, { instrument }, { trace }] = await Promise.all([import('@opentelemetry/sdk-node'), import('@mcp-fleet/otel'), import('@opentelemetry/api')]);
  const named = (env.OTEL_SERVICE_NAME?.trim() ?? '') !== '' || /(^|,)\s*service\.name=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  const sdk = new NodeSDK(named ? {} : { serviceName: 'mcp-fleet' });
  sdk.start();

  // The fleet's HTTP request spans by request id, from their start to the request's log line (written once answered,
  // outside the span's context): what the line reads its trace from.
  const awaited = new Map<string, { trace_id: string; span_id: string }>();
  const telemetry = instrument(fleet, { tracerProvider: rememberingRequests(trace.getTracerProvider(), (id, span) => {
    if (awaited.size >= AWAITED_REQUESTS) awaited.delete(awaited.keys().next().value as string);
    const { traceId, spanId } = span.spanContext();
    awaited.set(id, { trace_id: traceId, span_id: spanId });
  }) });
  log.traceIds = (fields) => {
    const { request_id: id, duration_ms: answered } = fields as { request_id?: unknown; duration_ms?: unknown };
    if (typeof id === 'string') {
      const ids = awaited.get(id);
      // The request line is the request's last: its entry goes with it.
      if (answered !== undefined) awaited.delete(id);
      if (ids !== undefined) return ids;
    }
    const active = trace.getActiveSpan()?.spanContext();
    return active === undefined ? {} : { trace_id: active.traceId, span_id: active.spanId };
  };
  return async () => {
    telemetry.close();
    // A collector that does not answer must not hold the exit past the stop's own 10 s.
    await Promise.race([sdk.shutdown(), delay(SHUTDOWN_MS, undefined, { ref: false })]);
  };
}

/** `provider`, telling `started` of each span of the fleet's HTTP requests (those with `mcp_fleet.request_id`). */
function rememberingRequests(provider: TracerProvider, started: (requestId: string, span: Span) => void): TracerProvider {
  return {
    getTracer(name, version, options) {
      const tracer = provider.getTracer(name, version, options);
      const remembering: Tracer = {
        startSpan(spanName, spanOptions, context) {
          const span = tracer.startSpan(spanName, spanOptions, context);
          const id = spanOptions?.attributes?.['mcp_fleet.request_id'];
          if (typeof id === 'string') started(id, span);
          return span;
        },
        startActiveSpan: tracer.startActiveSpan.bind(tracer) as Tracer['startActiveSpan'],
      };
      return remembering;
    },
  };
}
