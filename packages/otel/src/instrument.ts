import { AsyncLocalStorage } from 'node:async_hooks';
import { type Channel, channel, type TracingChannel, tracingChannel } from 'node:diagnostics_channel';
import type {
  AuthMessage,
  FleetStats,
  McpContentMessage,
  HttpRequestMessage,
  McpClientMessage,
  McpServerMessage,
  OperationMessage,
  ProbeMessage,
  RateLimitMessage,
  Settled,
  StoreMessage,
  WebhookDeliveryMessage,
} from '@mcp-fleet/core';
import { TRACE_CHANNELS } from '@mcp-fleet/core';
import {
  type Attributes,
  type AttributeValue,
  type Context,
  context,
  type Link,
  type MeterProvider,
  metrics,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { type FleetInstruments, fleetGauges, fleetInstruments, metricAttributes } from './metrics.js';

/** The instrumentation scope the spans and metrics are recorded under. */
export const SCOPE_NAME = '@mcp-fleet/otel';
export const SCOPE_VERSION = '0.1.0';

export interface InstrumentOptions {
  /** Where spans go. @default the global tracer provider (`trace.getTracerProvider()`) */
  tracerProvider?: TracerProvider;
  /** Where metrics go. @default the global meter provider (`metrics.getMeterProvider()`) */
  meterProvider?: MeterProvider;
  /** A span per call of a storage port (`mcp-fleet:store`): several per request. @default false */
  storeSpans?: boolean;
  /**
   * Records a `tools/call`'s arguments and result on its SERVER span (`gen_ai.tool.call.arguments`,
   * `gen_ai.tool.call.result`: JSON text, cut to {@link CONTENT_MAX_LENGTH} characters). They are what the agent sent
   * and what it was answered: personal data and secrets of its own may be in them; the fleet's stored credentials
   * are not. Off, the fleet does not even publish them (`mcp-fleet:mcp.content` has no subscriber). @default false
   */
  captureContent?: boolean;
}

export interface Instrumentation {
  /**
   * Unsubscribes from every trace point (the fleet publishes nothing more for it) and turns off the context store
   * that parents its spans, so that nothing of it runs any more, not even Node's promise hooks. Calling it again
   * does nothing.
   */
  close(): void;
}

/**
 * What `instrument` reads of a fleet: its mount point, so that `http.route` is the whole route (`/v1/servers/:id`),
 * and its `stats()` for the gauges (a `Fleet` has both; without `stats`, no gauges).
 */
export interface InstrumentedFleet {
  readonly prefix: string;
  stats?(): Promise<FleetStats>;
}

/** The characters of `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`; longer JSON text is cut and ends with `…`. */
export const CONTENT_MAX_LENGTH = 8192;

/** The `error.type` of a failure without a better name (the conventions' fallback). */
const OTHER = '_OTHER';

/**
 * Subscribes to the fleet's trace points (`node:diagnostics_channel`, docs/observability.md) and records them as
 * OpenTelemetry spans and metrics, on the semantic conventions for MCP. The trace points are process-wide: one
 * `instrument` sees every fleet of the process; `fleet` only names the mount point its routes are below.
 */
export function instrument(fleet?: InstrumentedFleet, options: InstrumentOptions = {}): Instrumentation {
  const tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE_NAME, SCOPE_VERSION);
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE_NAME, SCOPE_VERSION);
  const meters = fleetInstruments(meter);
  const prefix = fleet?.prefix ?? '';
  // The fleet's own span for what runs within an action: an operation within its request, an upstream call within
  // the operation. Outside every action, the embedder's active context (an instrumented HTTP server) is the parent.
  const current = new AsyncLocalStorage<Context>();
  const parent = () => current.getStore() ?? context.active();
  const off: (() => void)[] = [];
  if (fleet?.stats !== undefined) {
    const { stats } = fleet;
    off.push(fleetGauges(meter, () => stats.call(fleet)));
  }

  /** Answers the open span of a message of the channel, until it ends. */
  const traced = <M extends Settled>(name: string, begin: (message: M, ambient: Context) => Span, finish: (span: Span, message: M, seconds: number) => void): ((message: M) => Span | undefined) => {
    const spans = new WeakMap<object, { span: Span; started: number }>();
    const channelOf = tracingChannel(name) as TracingChannel<unknown, M>;
    const done = (message: M) => {
      const open = spans.get(message);
      if (open === undefined) return;
      spans.delete(message);
      markOutcome(open.span, message);
      finish(open.span, message, (performance.now() - open.started) / 1000);
      open.span.end();
    };
    const onEnd = (message: unknown) => {
      // Answered at once: the outcome is on the message at `end`; else at `asyncEnd`.
      if ((message as M).outcome !== undefined) done(message as M);
    };
    const onAsyncEnd = (message: unknown) => done(message as M);
    channelOf.start.bindStore(current, (message) => {
      const ambient = parent();
      const span = begin(message as M, ambient);
      spans.set(message as object, { span, started: performance.now() });
      return trace.setSpan(ambient, span);
    });
    channelOf.end.subscribe(onEnd);
    channelOf.asyncEnd.subscribe(onAsyncEnd);
    off.push(() => {
      channelOf.start.unbindStore(current);
      channelOf.end.unsubscribe(onEnd);
      channelOf.asyncEnd.unsubscribe(onAsyncEnd);
    });
    return (message) => spans.get(message)?.span;
  };

  const subscribe = <M>(name: string, listener: (message: M) => void) => {
    const named = channel(name) as Channel<unknown, M>;
    const heard = (message: unknown) => listener(message as M);
    named.subscribe(heard);
    off.push(() => named.unsubscribe(heard));
  };

  // What the requests' answers make of their method, route and status (a few dozen sets, from the route table), and
  // the counters' attributes: made once each, not per request.
  const httpAnswers = new AttributeSets<HttpAnswer>();
  const decisions = new AttributeSets<Attributes>();
  const authentications = new AttributeSets<Attributes>();

  // HTTP requests to the fleet: a SERVER span, its route and status filled in once answered.
  traced<HttpRequestMessage>(
    TRACE_CHANNELS.httpRequest,
    (message, ambient) =>
      tracer.startSpan(message.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': message.method, 'mcp_fleet.request_id': message.request_id } }, ambient),
    (span, message, seconds) => {
      const answered = httpAnswers.of(message.method, message.route, message.status, () => httpAnswer(message, prefix, meters.clamp));
      span.setAttributes(answered.attributes);
      if (answered.name !== undefined) span.updateName(answered.name);
      if (message.account !== null) span.setAttribute('mcp_fleet.account', message.account);
      meters.httpDuration.record(seconds, answered.metric);
    },
  );

  traced<OperationMessage>(
    TRACE_CHANNELS.operation,
    (message, ambient) => tracer.startSpan(message.operation, { kind: SpanKind.INTERNAL, attributes: operationAttributes(message) }, ambient),
    () => {},
  );

  // JSON-RPC requests at /mcp: a SERVER span whose parent is the caller's context from `_meta` (else from the HTTP
  // request's `traceparent` when it is not already the fleet's trace), linked to the HTTP request's span.
  const serverSpan = traced<McpServerMessage>(
    TRACE_CHANNELS.mcpServer,
    (message, ambient) => {
      const attributes = serverAttributes(message);
      const { parentContext, links } = remoteParent(message, ambient);
      return tracer.startSpan(spanName(message.method, message.tool_name), { kind: SpanKind.SERVER, attributes, links }, parentContext);
    },
    (span, message, seconds) => {
      const settled = settledAttributes(message, message.is_error, message.jsonrpc_error_code);
      span.setAttributes(settled);
      const attributes = { ...serverAttributes(message), ...settled };
      meters.serverDuration.record(seconds, metricAttributes(attributes, SERVER_LABELS, meters.clamp, ['gen_ai.tool.name']));
    },
  );

  // Opt-in: a tools/call's content, published just before its SERVER span ends.
  if (options.captureContent === true) {
    subscribe<McpContentMessage>(TRACE_CHANNELS.mcpContent, (message) => {
      const span = serverSpan(message.request);
      if (span === undefined) return;
      if (message.arguments !== undefined) span.setAttribute('gen_ai.tool.call.arguments', contentText(message.arguments));
      if (message.result !== undefined) span.setAttribute('gen_ai.tool.call.result', contentText(message.result));
    });
  }

  // Requests to upstreams: a CLIENT span, its context injected into the request's `params._meta` at `start`.
  traced<McpClientMessage>(
    TRACE_CHANNELS.mcpClient,
    (message, ambient) => {
      const span = tracer.startSpan(spanName(message.method, message.tool_name), { kind: SpanKind.CLIENT, attributes: clientAttributes(message) }, ambient);
      propagation.inject(trace.setSpan(ambient, span), message.meta);
      return span;
    },
    (span, message, seconds) => {
      const code = jsonRpcCode(message.error);
      const settled = settledAttributes(message, message.is_error, code);
      span.setAttributes(settled);
      const attributes = { ...clientAttributes(message), ...settled };
      meters.clientDuration.record(seconds, metricAttributes(attributes, CLIENT_LABELS, meters.clamp, CLIENT_CLAMPED));
    },
  );

  if (options.storeSpans === true) {
    traced<StoreMessage>(
      TRACE_CHANNELS.store,
      (message, ambient) =>
        tracer.startSpan(`store ${message.port}.${message.method}`, { kind: SpanKind.CLIENT, attributes: { 'mcp_fleet.store.port': message.port, 'mcp_fleet.store.method': message.method } }, ambient),
      () => {},
    );
  }

  // Probes and deliveries are published once done: their spans start `duration_ms` before they end.
  const finished = (name: string, attributes: Attributes, message: { outcome: 'ok' | 'error'; error_code?: string; duration_ms: number }) => {
    const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes, startTime: Date.now() - message.duration_ms }, parent());
    markOutcome(span, message);
    span.end();
  };

  subscribe<ProbeMessage>(TRACE_CHANNELS.probe, (message) => {
    const attributes = known({
      'mcp_fleet.server.id': message.server_id,
      'mcp_fleet.account': message.account,
      'mcp_fleet.server.transport': message.transport,
      'mcp_fleet.outcome': message.outcome,
      'mcp.protocol.version': message.era === '2025' ? undefined : message.era,
      'error.type': message.error_code,
    });
    finished('mcp_fleet.probe', attributes, message);
    meters.probeDuration.record(message.duration_ms / 1000, metricAttributes(attributes, PROBE_LABELS, meters.clamp, ['mcp_fleet.server.id']));
  });

  subscribe<WebhookDeliveryMessage>(TRACE_CHANNELS.webhookDelivery, (message) => {
    const attributes = known({
      'mcp_fleet.account': message.account,
      'mcp_fleet.webhook.id': message.webhook_id,
      'mcp_fleet.delivery.id': message.delivery_id,
      'mcp_fleet.event.type': message.event_type,
      'mcp_fleet.delivery.attempt': message.attempt,
      'mcp_fleet.outcome': message.outcome,
      'http.request.method': 'POST',
      'http.response.status_code': message.status_code ?? undefined,
      'error.type': message.error_code,
    });
    finished('mcp_fleet.webhook.delivery', attributes, message);
    meters.deliveryDuration.record(message.duration_ms / 1000, metricAttributes(attributes, DELIVERY_LABELS, meters.clamp, []));
  });

  subscribe<RateLimitMessage>(TRACE_CHANNELS.rateLimit, (message) => {
    const { scope, allowed } = message;
    meters.rateLimitDecisions.add(1, decisions.of(scope, allowed, undefined, () => ({ 'mcp_fleet.ratelimit.scope': scope, 'mcp_fleet.ratelimit.allowed': allowed })));
  });

  subscribe<AuthMessage>(TRACE_CHANNELS.auth, (message) => {
    const { method, outcome } = message;
    meters.authOutcomes.add(1, authentications.of(method, outcome, undefined, () => ({ 'mcp_fleet.auth.method': method, 'mcp_fleet.outcome': outcome })));
  });

  let closed = false;
  return {
    close() {
      if (closed) return;
      closed = true;
      for (const unsubscribe of off) unsubscribe();
      // An enabled AsyncLocalStorage keeps Node's promise hooks on for every promise of the process: off is off.
      current.disable();
    },
  };
}

/** JSON text of a tool call's arguments or result, cut to CONTENT_MAX_LENGTH characters (never within a surrogate pair). */
function contentText(value: unknown): string {
  // Parsed from JSON-RPC, so JSON again.
  const text = JSON.stringify(value);
  if (text.length <= CONTENT_MAX_LENGTH) return text;
  let end = CONTENT_MAX_LENGTH - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

/** `{mcp.method.name} {target}`: the tool's name when there is one (a low-cardinality target), else the method. */
function spanName(method: string, tool: string | undefined): string {
  return tool === undefined ? method : `${method} ${tool}`;
}

/** A failed action's span: status `ERROR`, described by the fleet's error code. */
function markOutcome(span: Span, message: { outcome?: 'ok' | 'error'; error_code?: string }): void {
  if (message.outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR, ...(message.error_code === undefined ? {} : { message: message.error_code }) });
}

/** The JSON-RPC error code of an upstream's error answer (the SDK's `ProtocolError`). */
function jsonRpcCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'number' && Number.isInteger(code) ? code : undefined;
}

/** `error.type` and `rpc.response.status_code` of a settled MCP request (the conventions' note [1]). */
function settledAttributes(message: Settled, isError: boolean | undefined, code: number | undefined): Attributes {
  const out: Attributes = {};
  if (code !== undefined) out['rpc.response.status_code'] = String(code);
  if (message.outcome === 'error') out['error.type'] = code !== undefined ? String(code) : (message.error_code ?? OTHER);
  else if (isError === true) out['error.type'] = 'tool_error';
  return out;
}

/** The attributes whose value is known: an absent field of a message is no attribute. */
function known(attributes: Record<string, AttributeValue | undefined>): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}

/** What both MCP spans say of the server and the tool: `gen_ai.operation.name` is `execute_tool` for a tool call. */
const aboutTool = (message: { method: string; server_id?: string; tool_name?: string }) => ({
  'mcp_fleet.server.id': message.server_id,
  'gen_ai.tool.name': message.tool_name,
  'gen_ai.operation.name': message.tool_name !== undefined && message.method === 'tools/call' ? 'execute_tool' : undefined,
});

function serverAttributes(message: McpServerMessage): Attributes {
  return known({
    'mcp.method.name': message.method,
    'jsonrpc.request.id': String(message.jsonrpc_id),
    'network.transport': 'tcp',
    'network.protocol.name': 'http',
    'mcp_fleet.account': message.account,
    'mcp.protocol.version': message.protocol_version,
    'mcp.session.id': message.session_id,
    ...aboutTool(message),
  });
}

function clientAttributes(message: McpClientMessage): Attributes {
  const stdio = message.transport === 'stdio';
  return known({
    'mcp.method.name': message.method,
    'network.transport': stdio ? 'pipe' : 'tcp',
    'network.protocol.name': stdio ? undefined : message.transport === 'websocket' ? 'websocket' : 'http',
    'mcp_fleet.server.transport': message.transport,
    // `2025` names an era of several versions, not one.
    'mcp.protocol.version': message.era === '2025' ? undefined : message.era,
    'server.address': message.server_address,
    'server.port': message.server_port,
    ...aboutTool(message),
  });
}

function operationAttributes(message: OperationMessage): Attributes {
  const out: Attributes = { 'mcp_fleet.operation': message.operation, 'mcp_fleet.via': message.via, 'mcp_fleet.account': message.account };
  if (message.server_id !== undefined) out['mcp_fleet.server.id'] = message.server_id;
  if (message.tool_name !== undefined) out['gen_ai.tool.name'] = message.tool_name;
  return out;
}

/** What an answered request puts on its span and its duration's point: the same for every answer of a route, method and status. */
interface HttpAnswer {
  /** `GET /v1/servers/:id`; `undefined` when no route matched (the span keeps the method as its name). */
  name: string | undefined;
  attributes: Attributes;
  metric: Attributes;
}

function httpAnswer(message: HttpRequestMessage, prefix: string, clamp: FleetInstruments['clamp']): HttpAnswer {
  const attributes: Attributes = { 'http.request.method': message.method };
  if (message.route !== null) attributes['http.route'] = `${prefix}${message.route}`;
  if (message.status !== undefined) {
    attributes['http.response.status_code'] = message.status;
    if (message.status >= 500) attributes['error.type'] = String(message.status);
  }
  return { name: message.route === null ? undefined : `${message.method} ${prefix}${message.route}`, attributes, metric: metricAttributes(attributes, HTTP_LABELS, clamp, []) };
}

/**
 * Attribute sets made once per combination of two or three values from bounded sets (routes, methods, statuses,
 * limit scopes) and kept, in nested maps: no key text is built per request. Past {@link AttributeSets.MAX} sets (a
 * method no route has, sent by every client differently) a set is made for the call and not kept.
 */
class AttributeSets<V> {
  static readonly MAX = 1000;
  readonly #sets = new Map<unknown, Map<unknown, Map<unknown, V>>>();
  #size = 0;

  of(a: unknown, b: unknown, c: unknown, make: () => V): V {
    const kept = this.#sets.get(a)?.get(b)?.get(c);
    if (kept !== undefined) return kept;
    const set = make();
    if (this.#size < AttributeSets.MAX) {
      let byA = this.#sets.get(a);
      if (byA === undefined) this.#sets.set(a, (byA = new Map()));
      let byB = byA.get(b);
      if (byB === undefined) byA.set(b, (byB = new Map()));
      byB.set(c, set);
      this.#size++;
    }
    return set;
  }
}

/**
 * The parent of a JSON-RPC request's span: the trace context of its `_meta`, else the HTTP request's `traceparent`
 * header when the fleet's request span is not already in that trace (an embedder whose server is not instrumented);
 * the fleet's HTTP request span is then a link. Else the ambient context (the request's span).
 */
function remoteParent(message: McpServerMessage, ambient: Context): { parentContext: Context; links: Link[] } {
  const carrier = message.traceparent !== undefined ? { traceparent: message.traceparent, ...(message.tracestate === undefined ? {} : { tracestate: message.tracestate }) } : undefined;
  const ambientSpan = trace.getSpanContext(ambient);
  let remote: Context | undefined;
  if (carrier !== undefined) remote = propagation.extract(ROOT_CONTEXT, carrier);
  else if (message.http_traceparent !== undefined) {
    const fromHeader = propagation.extract(ROOT_CONTEXT, { traceparent: message.http_traceparent });
    if (trace.getSpanContext(fromHeader)?.traceId !== ambientSpan?.traceId) remote = fromHeader;
  }
  const remoteSpan = remote === undefined ? undefined : trace.getSpanContext(remote);
  if (remote === undefined || remoteSpan === undefined || !trace.isSpanContextValid(remoteSpan)) return { parentContext: ambient, links: [] };
  return { parentContext: remote, links: ambientSpan !== undefined && trace.isSpanContextValid(ambientSpan) ? [{ context: ambientSpan }] : [] };
}

// The attributes each metric keeps: never a session id, a request id, a key id or an account.
const HTTP_LABELS = ['http.request.method', 'http.route', 'http.response.status_code', 'error.type'];
const SERVER_LABELS = ['mcp.method.name', 'mcp.protocol.version', 'gen_ai.tool.name', 'gen_ai.operation.name', 'error.type', 'rpc.response.status_code', 'network.transport'];
const CLIENT_LABELS = [...SERVER_LABELS, 'network.protocol.name', 'server.address', 'server.port', 'mcp_fleet.server.id'];
const CLIENT_CLAMPED = ['gen_ai.tool.name', 'server.address', 'mcp_fleet.server.id'];
const PROBE_LABELS = ['mcp_fleet.server.id', 'mcp_fleet.server.transport', 'mcp_fleet.outcome', 'error.type'];
const DELIVERY_LABELS = ['mcp_fleet.event.type', 'mcp_fleet.outcome', 'http.response.status_code', 'error.type'];

