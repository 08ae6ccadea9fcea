/**
 * @mcp-fleet/otel over real HTTP through both adapters, with the OpenTelemetry SDK's in-memory exporters: the spans
 * and their attributes, their parents, the trace context an upstream receives, the metrics, and close().
 */
import { channel, tracingChannel } from 'node:diagnostics_channel';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CONTENT_MAX_LENGTH, instrument, type Instrumentation } from '@mcp-fleet/otel';
import { context, propagation, type SpanContext, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AggregationTemporality, type GaugeMetricData, type HistogramMetricData, InMemoryMetricExporter, MeterProvider, type MetricData, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startV2ToolServer, type ToolServer } from '../../packages/core/src/mcp/fixtures/tool-servers.js';
import { fixture, NODE } from '../../packages/core/src/stdio/test-helpers.js';
import { refusedReceiverUrl, startReceiver } from '../../packages/core/src/webhooks/fixtures/receiver.js';
import { ADAPTERS } from '../support/adapters.js';
import { openSession } from '../support/mcp-session.js';
import { type ApiClient, createServer, expectSuccess, freshClient, type Json, serveForSuite, uniqueName } from '../support/http-client.js';

const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
const meterProvider = new MeterProvider({ readers: [reader] });

const ECHO = fixture('echo-server.mjs');
const TRACEPARENT = /^00-([\da-f]{32})-([\da-f]{16})-01$/;
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

let upstream: ToolServer;
let telemetry: Instrumentation;
beforeAll(async () => {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  upstream = await startV2ToolServer();
  telemetry = instrument({ prefix: '/v1' }, { tracerProvider, meterProvider });
});
afterAll(async () => {
  telemetry.close();
  await upstream.close();
  await meterProvider.shutdown();
  propagation.disable();
  context.disable();
});

const finished = () => spans.getFinishedSpans();
const named = (name: string) => finished().filter((span) => span.name === name);
function one(name: string): ReadableSpan {
  const found = named(name);
  expect(found.map((span) => span.name), name).toEqual([name]);
  return found[0] as ReadableSpan;
}
const isChild = (child: ReadableSpan, parent: ReadableSpan) =>
  child.parentSpanContext?.spanId === parent.spanContext().spanId && child.spanContext().traceId === parent.spanContext().traceId;
/** The span of `traceparent`, as the upstream received it. */
const sentBy = (traceparent: unknown): { traceId: string; spanId: string } => {
  const match = TRACEPARENT.exec(String(traceparent));
  expect(match, String(traceparent)).not.toBeNull();
  return { traceId: match?.[1] as string, spanId: match?.[2] as string };
};
const idsOf = (span: ReadableSpan): Pick<SpanContext, 'traceId' | 'spanId'> => ({ traceId: span.spanContext().traceId, spanId: span.spanContext().spanId });

/** The metric's points as collected now. */
async function metric(name: string, from = { exporter: metricExporter, reader }): Promise<MetricData | undefined> {
  from.exporter.reset();
  await from.reader.forceFlush();
  const all = from.exporter.getMetrics().flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics));
  return all.find((found) => found.descriptor.name === name);
}

const histogram = async (name: string) => (await metric(name)) as HistogramMetricData | undefined;

describe.each(ADAPTERS)('OpenTelemetry over HTTP ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { allowPrivateNetworks: true, onError: () => {}, stdio: { commands: [NODE] }, rateLimit: {}, webhooks: { pollIntervalMs: 20 } });
  let client: ApiClient & { account: string };
  let httpName: string;
  let httpId: string;
  let stdioName: string;

  beforeAll(async () => {
    client = await freshClient(suite.served);
    httpName = uniqueName('web');
    httpId = (await createServer(client, { name: httpName, type: 'http', endpoint: upstream.url })).id;
    stdioName = uniqueName('pipe');
    await createServer(client, { name: stdioName, type: 'stdio', command: NODE, args: [ECHO], timeout: 15_000 });
  });
  beforeEach(() => spans.reset());

  const modern = async () => {
    const mcp = new Client({ name: 'otel-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${suite.served.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${client.key}` } } }));
    return mcp;
  };

  it('a 2026-07-28 tools/call to an HTTP upstream: SERVER span, operation, CLIENT span, traceparent in the upstream _meta', async () => {
    const mcp = await modern();
    spans.reset();
    const result = (await mcp.callTool({ name: `${httpName}__echo`, arguments: { text: 'hello' } })) as Json;
    expect(result.content[0].text).toBe('hello');
    await mcp.close();

    const server = one(`tools/call ${httpName}__echo`);
    expect(server.kind).toBe(SpanKind.SERVER);
    expect(server.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'mcp.protocol.version': '2026-07-28',
      'gen_ai.tool.name': `${httpName}__echo`,
      'gen_ai.operation.name': 'execute_tool',
      'jsonrpc.request.id': expect.any(String),
      'network.transport': 'tcp',
    });
    expect(server.attributes).not.toHaveProperty('mcp.session.id');
    expect(server.attributes).not.toHaveProperty('error.type');
    const request = finished().find((span) => span.name === 'POST /v1/mcp' && isChild(server, span)) as ReadableSpan;
    expect(request.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/v1/mcp', 'http.response.status_code': 200 });
    const operation = one('tools.call');
    expect(operation.attributes).toMatchObject({ 'mcp_fleet.operation': 'tools.call', 'mcp_fleet.via': 'mcp', 'mcp_fleet.server.id': httpId, 'gen_ai.tool.name': 'echo' });
    expect(isChild(operation, server)).toBe(true);
    const call = one('tools/call echo');
    expect(call.kind).toBe(SpanKind.CLIENT);
    expect(call.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'mcp.protocol.version': '2026-07-28',
      'gen_ai.tool.name': 'echo',
      'server.address': '127.0.0.1',
      'server.port': Number(new URL(upstream.url).port),
      'network.transport': 'tcp',
      'network.protocol.name': 'http',
      'mcp_fleet.server.id': httpId,
    });
    expect(isChild(call, operation)).toBe(true);
    expect(sentBy((upstream.callMetas.at(-1) as Json).traceparent)).toEqual(idsOf(call));
  });

  it('a 2025 session to a stdio upstream: the session id, the protocol version, the caller _meta as parent, traceparent over the pipe', async () => {
    const v1 = new V1Client({ name: 'otel-test-v1', version: '1.0.0' });
    const transport = new V1Transport(new URL(`${suite.served.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${client.key}` } } });
    await v1.connect(transport);
    spans.reset();
    const result = (await v1.callTool({ name: `${stdioName}__echo`, arguments: { meta: true }, _meta: { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` } })) as Json;
    const session = transport.sessionId;
    await transport.terminateSession();
    await v1.close();

    const server = one(`tools/call ${stdioName}__echo`);
    expect(server.attributes).toMatchObject({ 'mcp.session.id': session, 'mcp.protocol.version': transport.protocolVersion });
    expect(server.attributes['mcp.protocol.version']).toMatch(/^2025-\d\d-\d\d$/);
    // The caller's context from `_meta` is the parent; the fleet's HTTP request span, a link.
    expect(server.spanContext().traceId).toBe(CALLER_TRACE);
    expect(server.parentSpanContext?.spanId).toBe(CALLER_SPAN);
    const request = finished().find((span) => span.name === 'POST /v1/mcp' && span.spanContext().spanId === server.links[0]?.context.spanId);
    expect(request).toBeDefined();
    const call = one('tools/call echo');
    expect(call.attributes).toMatchObject({ 'network.transport': 'pipe', 'mcp_fleet.server.transport': 'stdio' });
    expect(call.attributes).not.toHaveProperty('server.address');
    expect(call.spanContext().traceId).toBe(CALLER_TRACE);
    expect(sentBy(JSON.parse(result.content[0].text).traceparent)).toEqual(idsOf(call));
  });

  it("a /v1/mcp request's traceparent header is the parent when its _meta carries none", async () => {
    const headerTrace = 'a'.repeat(32);
    const mcp = new Client({ name: 'otel-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const headers = { authorization: `Bearer ${client.key}`, traceparent: `00-${headerTrace}-${'b'.repeat(16)}-01` };
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${suite.served.url}/mcp`), { requestInit: { headers } }));
    spans.reset();
    await mcp.callTool({ name: `${httpName}__echo`, arguments: { text: 'x' } });
    await mcp.close();
    const server = one(`tools/call ${httpName}__echo`);
    expect(server.spanContext().traceId).toBe(headerTrace);
    expect(server.parentSpanContext?.spanId).toBe('b'.repeat(16));
  });

  it('failed calls: a JSON-RPC error (error.type and rpc.response.status_code) and a tool error (tool_error)', async () => {
    const mcp = await modern();
    spans.reset();
    const code = await mcp.callTool({ name: 'nowhere__echo', arguments: {} }).then(
      () => undefined,
      (error: { code: number }) => error.code,
    );
    expect(code).toBe(-32602);
    const refused = one('tools/call nowhere__echo');
    expect(refused.attributes).toMatchObject({ 'error.type': '-32602', 'rpc.response.status_code': '-32602' });
    expect(refused.status.code).toBe(SpanStatusCode.ERROR);

    const failed = (await mcp.callTool({ name: `${httpName}__fail`, arguments: {} })) as Json;
    expect(failed.isError).toBe(true);
    await mcp.close();
    expect(one(`tools/call ${httpName}__fail`).attributes['error.type']).toBe('tool_error');
    expect(one('tools/call fail').attributes['error.type']).toBe('tool_error');

    const duration = await histogram('mcp.server.operation.duration');
    expect(duration?.descriptor.unit).toBe('s');
    const points = duration?.dataPoints ?? [];
    expect(points.map((point) => point.attributes['error.type'])).toEqual(expect.arrayContaining(['-32602', 'tool_error']));
    expect(points[0]?.value.buckets.boundaries).toEqual([0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]);
    for (const point of points) {
      expect(Object.keys(point.attributes)).not.toContain('mcp.session.id');
      expect(Object.keys(point.attributes)).not.toContain('jsonrpc.request.id');
      expect(Object.keys(point.attributes)).not.toContain('mcp_fleet.account');
    }
    expect((await histogram('mcp.client.operation.duration'))?.dataPoints.some((point) => point.attributes['mcp_fleet.server.id'] === httpId)).toBe(true);
  });

  it('an HTTP API request: its route, status and operation', async () => {
    expectSuccess(await client.get(`/servers/${httpId}`), 200);
    const request = one('GET /v1/servers/:id');
    expect(request.kind).toBe(SpanKind.SERVER);
    expect(request.attributes).toMatchObject({ 'http.request.method': 'GET', 'http.route': '/v1/servers/:id', 'http.response.status_code': 200, 'mcp_fleet.account': client.account });
    expect(request.attributes['mcp_fleet.request_id']).toMatch(/^req_/);
    expect(isChild(one('servers.get'), request)).toBe(true);
    const duration = await histogram('http.server.request.duration');
    expect(duration?.dataPoints.some((point) => point.attributes['http.route'] === '/v1/servers/:id')).toBe(true);
  });

  it('a probe and a webhook delivery: spans that start their duration before they were published', async () => {
    expectSuccess(await client.get(`/servers/${httpId}/health`), 200);
    const probe = one('mcp_fleet.probe');
    expect(probe.attributes).toMatchObject({ 'mcp_fleet.server.id': httpId, 'mcp_fleet.outcome': 'ok', 'mcp.protocol.version': '2026-07-28' });
    const operation = one('servers.health');
    expect(isChild(probe, operation)).toBe(true);
    expect(isChild(operation, one('GET /v1/servers/:id/health'))).toBe(true);
    expect((await histogram('mcp_fleet.probe.duration'))?.dataPoints.some((point) => point.attributes['mcp_fleet.server.id'] === httpId)).toBe(true);

    const receiver = await startReceiver();
    try {
      const hook = expectSuccess(await client.post('/webhooks', { url: receiver.url, events: ['server.created'] }), 201);
      expectSuccess(await client.post(`/webhooks/${hook.id}/test`), 202);
      await receiver.waitFor(1);
      await expect.poll(() => named('mcp_fleet.webhook.delivery').length).toBe(1);
      const delivery = one('mcp_fleet.webhook.delivery');
      expect(delivery.attributes).toMatchObject({ 'mcp_fleet.webhook.id': hook.id, 'mcp_fleet.event.type': 'webhook.test', 'http.response.status_code': 200, 'mcp_fleet.outcome': 'ok' });
      expect(delivery.status.code).not.toBe(SpanStatusCode.ERROR);
      expect(delivery.duration[0] * 1e3 + delivery.duration[1] / 1e6).toBeGreaterThan(0);
    } finally {
      await receiver.close();
    }
    const decisions = (await metric('mcp_fleet.ratelimit.decisions'))?.dataPoints ?? [];
    expect(decisions.find((point) => point.attributes['mcp_fleet.ratelimit.allowed'] === true)?.value).toBeGreaterThan(0);
    const auth = (await metric('mcp_fleet.auth.outcomes'))?.dataPoints ?? [];
    expect(auth.find((point) => point.attributes['mcp_fleet.auth.method'] === 'api_key' && point.attributes['mcp_fleet.outcome'] === 'ok')?.value).toBeGreaterThan(0);
  });

  it('storeSpans: a span per storage port call, within the request', async () => {
    const withStore = instrument({ prefix: '/v1' }, { tracerProvider, meterProvider, storeSpans: true });
    try {
      expectSuccess(await client.get(`/servers/${httpId}`), 200);
    } finally {
      withStore.close();
    }
    // The webhook worker's polls are store calls too, each a trace of its own: the request's counter is in its trace.
    const requests = named('GET /v1/servers/:id');
    const consumed = named('store ratelimit.consume').filter((call) => requests.some((request) => call.spanContext().traceId === request.spanContext().traceId));
    expect(consumed.length).toBeGreaterThanOrEqual(1);
  });

  it('gauges of the fleet passed, observed when the meter reads: live sessions, stdio processes, pending deliveries', async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const ownReader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
    const ownMeters = new MeterProvider({ readers: [ownReader] });
    const gauges = instrument(suite.served.fleet, { tracerProvider: new BasicTracerProvider(), meterProvider: ownMeters });
    const gauge = async (name: string) => {
      const read = (await metric(name, { exporter, reader: ownReader })) as GaugeMetricData | undefined;
      return read?.dataPoints[0]?.value;
    };
    try {
      const session = await openSession(suite.served.url, client.key as string);
      expect(await gauge('mcp_fleet.sessions.live')).toBe(1);
      await session.client.callTool({ name: `${stdioName}__echo`, arguments: { text: 'x' } });
      expect(await gauge('mcp_fleet.stdio.processes')).toBe(1);
      await session.end();
      expect(await gauge('mcp_fleet.sessions.live')).toBe(0);

      const before = (await gauge('mcp_fleet.webhook.outbox.pending')) as number;
      const hook = expectSuccess(await client.post('/webhooks', { url: await refusedReceiverUrl(), events: ['server.created'] }), 201);
      expectSuccess(await client.post(`/webhooks/${hook.id}/test`), 202);
      await expect.poll(() => named('mcp_fleet.webhook.delivery').some((span) => span.attributes['mcp_fleet.webhook.id'] === hook.id)).toBe(true);
      expect(await gauge('mcp_fleet.webhook.outbox.pending')).toBe(before + 1);
      expect(((await metric('mcp_fleet.webhook.outbox.pending', { exporter, reader: ownReader })) as GaugeMetricData).descriptor.unit).toBe('{delivery}');
      // The suite's own instrumentation had no fleet: no gauges.
      expect(await metric('mcp_fleet.sessions.live')).toBeUndefined();
    } finally {
      gauges.close();
      await ownMeters.shutdown();
    }
  });

  it('captureContent: the arguments and result of a tools/call on its SERVER span, JSON cut to CONTENT_MAX_LENGTH; off, neither', async () => {
    const contentSpans = new InMemorySpanExporter();
    const capturing = instrument(undefined, {
      tracerProvider: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(contentSpans)] }),
      meterProvider: new MeterProvider(),
      captureContent: true,
    });
    expect(channel('mcp-fleet:mcp.content').hasSubscribers).toBe(true);
    const long = 'y'.repeat(10_000);
    try {
      const mcp = await modern();
      await mcp.callTool({ name: `${httpName}__echo`, arguments: { text: 'hello' } });
      await mcp.callTool({ name: `${httpName}__echo`, arguments: { text: long } });
      await mcp.callTool({ name: 'nowhere__echo', arguments: { text: 'refused' } }).catch(() => {});
      await mcp.close();
    } finally {
      capturing.close();
    }
    expect(channel('mcp-fleet:mcp.content').hasSubscribers).toBe(false);
    const captured = contentSpans.getFinishedSpans().filter((span) => span.name === `tools/call ${httpName}__echo`);
    expect(captured).toHaveLength(2);
    const [short, cut] = captured as [ReadableSpan, ReadableSpan];
    expect(short.attributes['gen_ai.tool.call.arguments']).toBe('{"text":"hello"}');
    expect(JSON.parse(short.attributes['gen_ai.tool.call.result'] as string)).toMatchObject({ content: [{ type: 'text', text: 'hello' }] });
    for (const key of ['gen_ai.tool.call.arguments', 'gen_ai.tool.call.result']) {
      const text = cut.attributes[key] as string;
      expect(text).toHaveLength(CONTENT_MAX_LENGTH);
      expect(text.endsWith('…')).toBe(true);
    }
    // A JSON-RPC error: its arguments, no result.
    const refused = contentSpans.getFinishedSpans().find((span) => span.name === 'tools/call nowhere__echo') as ReadableSpan;
    expect(refused.attributes['gen_ai.tool.call.arguments']).toBe('{"text":"refused"}');
    expect(refused.attributes).not.toHaveProperty('gen_ai.tool.call.result');
    // The suite's instrumentation, without captureContent, recorded the same calls without either.
    const plain = named(`tools/call ${httpName}__echo`);
    expect(plain).toHaveLength(2);
    for (const span of plain) {
      expect(span.attributes).not.toHaveProperty('gen_ai.tool.call.arguments');
      expect(span.attributes).not.toHaveProperty('gen_ai.tool.call.result');
    }
  });

  it("an embedder's active OpenTelemetry context: the fleet's request span is its child", async () => {
    const outer = tracerProvider.getTracer('embedder').startSpan('embedder request');
    const answer = await context.with(trace.setSpan(context.active(), outer), () =>
      suite.served.fleet.handle(new Request(`http://fleet.test/v1/servers/${httpId}`, { headers: { authorization: `Bearer ${client.key}` } })),
    );
    expect(answer.status).toBe(200);
    await answer.text();
    outer.end();
    expect(isChild(one('GET /v1/servers/:id'), one('embedder request'))).toBe(true);
  });
});

describe('close()', () => {
  it('unsubscribes from every trace point, once and for all', () => {
    const second = instrument(undefined, { tracerProvider, meterProvider, storeSpans: true });
    expect(tracingChannel('mcp-fleet:store').hasSubscribers).toBe(true);
    second.close();
    second.close();
    expect(tracingChannel('mcp-fleet:store').hasSubscribers).toBe(false);
    telemetry.close();
    for (const name of ['http.request', 'operation', 'mcp.server', 'mcp.client']) expect(tracingChannel(`mcp-fleet:${name}`).hasSubscribers, name).toBe(false);
  });
});
