/**
 * The reference server's telemetry as an operator sees it, a real process: `MCP_FLEET_METRICS=1` serves `/metrics`
 * (scraped and read as the Prometheus text format), `OTEL_EXPORTER_OTLP_ENDPOINT` sends OTLP/HTTP to a receiver on
 * loopback, and its logs are JSON lines (with the trace's id when tracing is on).
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startV2ToolServer, type ToolServer } from '../packages/core/src/mcp/fixtures/tool-servers.js';
import { scrape } from './support/prometheus-text.js';
import { api, killLeftovers, removeTempDirs, runToExit, startServer, tempDir } from './support/reference-server.js';

const KEY = 'metrics-secret-4c1d9a0b7e2f';
const ENV = { MCP_FLEET_STORE: 'memory://', MCP_FLEET_API_KEYS: `acme:pro:${KEY}`, MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1', MCP_FLEET_HEALTH_INTERVAL_MS: '0' };

let upstream: ToolServer;
beforeAll(async () => {
  upstream = await startV2ToolServer();
});
afterAll(async () => {
  await upstream.close();
});
afterEach(async () => {
  await killLeftovers();
  await removeTempDirs();
});

/** The JSON lines of the server's stdout (the banner is the one block that is not). */
function logLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('reference server: MCP_FLEET_METRICS=1', () => {
  it('serves /metrics beside /healthz, without a key: the fleet metrics after real requests, and the process metrics', async () => {
    const server = await startServer({ cwd: await tempDir(), env: { ...ENV, MCP_FLEET_METRICS: '1' } });
    expect(server.stdout()).toContain(`  Metrics    ${server.origin}/metrics`);
    const created = await api(server.url, KEY, 'POST', '/servers', { name: 'tools', type: 'http', endpoint: upstream.url });
    expect(created.status).toBe(201);
    const id = (created.body as { data: { id: string } }).data.id;
    expect((await api(server.url, KEY, 'GET', '/servers')).status).toBe(200);
    expect((await api(server.url, KEY, 'GET', '/servers')).status).toBe(200);
    expect((await api(server.url, KEY, 'POST', `/servers/${id}/tools/call`, { name: 'echo', arguments: { text: 'hi' } })).status).toBe(200);
    expect((await api(server.url, KEY, 'GET', `/servers/${id}/health`)).status).toBe(200);
    expect((await api(server.url, 'mcpf_wrong_wrong_wrong_wrong_wrong_wrong_wrong', 'GET', '/servers')).status).toBe(401);
    const mcp = new Client({ name: 'metrics-e2e', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }));
    expect(((await mcp.callTool({ name: 'tools__echo', arguments: { text: 'hi' } })) as { isError?: boolean }).isError).toBeFalsy();
    await mcp.close();

    const scraped = await scrape(`${server.origin}/metrics`);
    const http = 'mcp_fleet_http_request_duration_seconds';
    expect(scraped.family(http)?.type).toBe('histogram');
    expect(scraped.total(http, { method: 'GET', route: '/v1/servers', status_class: '2xx' })).toBe(2);
    expect(scraped.total(http, { method: 'POST', route: '/v1/servers', status_class: '2xx' })).toBe(1);
    expect(scraped.total(http, { method: 'POST', route: '/v1/servers/:id/tools/call', status_class: '2xx' })).toBe(1);
    expect(scraped.total(http, { method: 'GET', status_class: '4xx' })).toBe(1);
    expect(scraped.total('mcp_fleet_operation_duration_seconds', { operation: 'servers.list', via: 'http', outcome: 'ok' })).toBe(2);
    expect(scraped.total('mcp_fleet_operation_duration_seconds', { operation: 'tools.call', via: 'mcp', outcome: 'ok' })).toBe(1);
    expect(scraped.total('mcp_server_operation_duration_seconds', { mcp_method_name: 'tools/call', gen_ai_tool_name: 'tools__echo' })).toBe(1);
    // The REST call and the MCP one, each one upstream tools/call.
    expect(scraped.total('mcp_client_operation_duration_seconds', { mcp_method_name: 'tools/call', gen_ai_tool_name: 'echo', network_transport: 'tcp' })).toBe(2);
    expect(scraped.total('mcp_fleet_probe_duration_seconds', { server_id: id, transport: 'http', outcome: 'ok' })).toBe(1);
    expect(scraped.total('mcp_fleet_auth_outcomes_total', { method: 'api_key', outcome: 'refused' })).toBe(1);
    expect(scraped.total('mcp_fleet_ratelimit_decisions_total', { allowed: 'true' })).toBeGreaterThanOrEqual(6);
    expect(scraped.family('process_cpu_user_seconds_total')?.type).toBe('counter');
    // Never a key: neither the secret nor its id.
    const text = await (await fetch(`${server.origin}/metrics`)).text();
    expect(text).not.toContain(KEY);
    expect(text).not.toMatch(/key_[0-9A-Za-z]{6,}/);

    // The logs: one JSON line per request, with its route template and request id, never a key.
    const requests = logLines(server.stdout()).filter((line) => line.msg === 'request');
    expect(requests.length).toBeGreaterThanOrEqual(7);
    expect(requests).toContainEqual(
      expect.objectContaining({ level: 30, name: 'mcp-fleet', method: 'GET', route: '/servers', status: 200, account: 'acme', request_id: expect.stringMatching(/^req_/), duration_ms: expect.any(Number) }),
    );
    expect(server.stdout()).not.toContain(KEY);
    await server.stop('SIGTERM');
  });

  it('off by default: /metrics is not served', async () => {
    const server = await startServer({ cwd: await tempDir(), env: ENV });
    expect(server.stdout()).not.toContain('Metrics');
    expect((await fetch(`${server.origin}/metrics`)).status).toBe(404);
    await server.stop('SIGTERM');
  });

  it('MCP_FLEET_METRICS_TOKEN: /metrics answers only a scraper that sends it; off loopback, metrics without one do not start', async () => {
    const token = 'scrape-4f0c2a9e61b7d358';
    const server = await startServer({ cwd: await tempDir(), env: { ...ENV, MCP_FLEET_METRICS: '1', MCP_FLEET_METRICS_TOKEN: token } });
    expect(server.stdout()).toContain(`  Metrics    ${server.origin}/metrics   (bearer token: MCP_FLEET_METRICS_TOKEN)`);
    for (const authorization of [undefined, 'Bearer scrape-wrong-wrong-wrong', `Bearer ${token}x`, token]) {
      const refused = await fetch(`${server.origin}/metrics`, { headers: authorization === undefined ? {} : { authorization } });
      expect(refused.status).toBe(401);
      expect(await refused.text()).toContain('MCP_FLEET_METRICS_TOKEN');
    }
    const scraped = await fetch(`${server.origin}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain('process_cpu_user_seconds_total');
    expect(server.stdout()).not.toContain(token);
    await server.stop('SIGTERM');

    const open = await runToExit({ cwd: await tempDir(), env: { ...ENV, MCP_FLEET_METRICS: '1', HOST: '0.0.0.0' } });
    expect(open.code).toBe(2);
    expect(open.stderr).toContain('set MCP_FLEET_METRICS_TOKEN');
    const short = await runToExit({ cwd: await tempDir(), env: { ...ENV, MCP_FLEET_METRICS: '1', MCP_FLEET_METRICS_TOKEN: 'short' } });
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('MCP_FLEET_METRICS_TOKEN: expected at least 16 characters');
    expect(short.stderr).not.toContain('short\n');
  });

  it('MCP_FLEET_METRICS other than 1 or 0 stops the start, naming the variable', async () => {
    const exit = await runToExit({ cwd: await tempDir(), env: { ...ENV, MCP_FLEET_METRICS: 'yes' } });
    expect(exit.code).toBe(2);
    expect(exit.stderr).toContain('MCP_FLEET_METRICS: expected 1 or 0');
  });
});

/** What an OTLP/HTTP receiver on loopback was sent: each export request's path, content type and body. */
interface Export {
  path: string;
  type: string;
  body: Buffer;
}

async function startOtlpReceiver(): Promise<{ endpoint: string; exports: Export[]; close(): Promise<void> }> {
  const exports: Export[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const type = req.headers['content-type'] ?? '';
      exports.push({ path: req.url ?? '', type, body: Buffer.concat(chunks) });
      // An empty Export*ServiceResponse: accepted whole.
      if (type.startsWith('application/json')) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
}

/** The spans of every OTLP/JSON trace export, with their resource's service.name. */
function jsonSpans(exports: Export[]): (JsonSpan & { service: unknown })[] {
  return exports
    .filter((e) => e.path === '/v1/traces')
    .flatMap((e) => {
      const body = JSON.parse(e.body.toString('utf8')) as { resourceSpans: { resource: { attributes: JsonSpan['attributes'] }; scopeSpans: { spans: JsonSpan[] }[] }[] };
      return body.resourceSpans.flatMap((resource) => {
        const service = resource.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
        return resource.scopeSpans.flatMap((scope) => scope.spans.map((span) => ({ ...span, service })));
      });
    });
}

const OTLP_FAST = { OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_METRIC_EXPORT_INTERVAL: '500', OTEL_METRIC_EXPORT_TIMEOUT: '400', OTEL_LOGS_EXPORTER: 'none' };

describe('reference server: OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  beforeEach(async () => {
    receiver = await startOtlpReceiver();
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('http/json: the spans of a REST request and of an MCP tool call with its upstream call, the MCP metrics, and the trace id on each request line', async () => {
    const server = await startServer({
      cwd: await tempDir(),
      env: { ...ENV, ...OTLP_FAST, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
    });
    expect(server.stdout()).toContain('  OTLP       traces and metrics to OTEL_EXPORTER_OTLP_ENDPOINT');
    expect((await api(server.url, KEY, 'POST', '/servers', { name: 'tools', type: 'http', endpoint: upstream.url })).status).toBe(201);
    const listed = await api(server.url, KEY, 'GET', '/servers');
    expect(listed.status).toBe(200);
    const mcp = new Client({ name: 'otlp-e2e', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }));
    await mcp.callTool({ name: 'tools__echo', arguments: { text: 'hi' } });
    await mcp.close();

    await expect.poll(() => jsonSpans(receiver.exports).some((span) => span.name === 'tools/call echo'), { timeout: 10_000 }).toBe(true);
    const spans = jsonSpans(receiver.exports);
    expect(receiver.exports.find((e) => e.path === '/v1/traces')?.type).toMatch(/^application\/json/);
    expect(new Set(spans.map((span) => span.service))).toEqual(new Set(['mcp-fleet']));
    const list = spans.find((span) => span.name === 'GET /v1/servers');
    expect(list?.kind).toBe(2);
    const served = spans.find((span) => span.name === 'tools/call tools__echo');
    const called = spans.find((span) => span.name === 'tools/call echo');
    expect(served?.kind).toBe(2);
    expect(called?.kind).toBe(3);
    // The upstream call is within the tool call's trace.
    expect(called?.traceId).toBe(served?.traceId);
    expect(served?.attributes).toContainEqual({ key: 'mcp.method.name', value: { stringValue: 'tools/call' } });

    await expect.poll(() => receiver.exports.some((e) => e.path === '/v1/metrics' && e.body.includes('mcp.server.operation.duration')), { timeout: 10_000 }).toBe(true);

    // The request line of GET /servers carries the trace and span of that request's span.
    const requestId = listed.headers.get('x-request-id');
    const line = logLines(server.stdout()).find((entry) => entry.msg === 'request' && entry.request_id === requestId);
    expect(line).toMatchObject({ route: '/servers', trace_id: list?.traceId, span_id: list?.spanId });
    await server.stop('SIGTERM');
  });

  it('http/protobuf (the default protocol): the export arrives as protobuf, the spans flushed at SIGTERM', async () => {
    const server = await startServer({ cwd: await tempDir(), env: { ...ENV, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_LOGS_EXPORTER: 'none' } });
    expect((await api(server.url, KEY, 'GET', '/servers')).status).toBe(200);
    // The batch waits 5 s by default: the shutdown sends it.
    const exit = await server.stop('SIGTERM');
    expect(exit.code).toBe(0);
    const traces = receiver.exports.filter((e) => e.path === '/v1/traces');
    expect(traces.length).toBeGreaterThanOrEqual(1);
    expect(traces[0]?.type).toBe('application/x-protobuf');
    // Protobuf strings are their UTF-8 bytes: the span's name and the service's are in the message.
    const body = Buffer.concat(traces.map((e) => e.body));
    expect(body.includes('GET /v1/servers')).toBe(true);
    expect(body.includes('mcp-fleet')).toBe(true);
  });

  it('OTEL_SDK_DISABLED=true keeps it off, endpoint or not: nothing exported, no trace id on the lines', async () => {
    const server = await startServer({ cwd: await tempDir(), env: { ...ENV, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SDK_DISABLED: 'true' } });
    expect(server.stdout()).not.toContain('OTLP');
    expect((await api(server.url, KEY, 'GET', '/servers')).status).toBe(200);
    await server.stop('SIGTERM');
    expect(receiver.exports).toEqual([]);
    const line = logLines(server.stdout()).find((entry) => entry.msg === 'request');
    expect(line).toBeDefined();
    expect(line).not.toHaveProperty('trace_id');
  });
});
