/**
 * @mcp-fleet/prometheus over real HTTP: a fleet served by each adapter, its `/metrics` served by the same framework
 * (Hono with `metricsHandler`, Express with `nodeMetricsHandler`), scraped and read by a strict reader of the text format (test/support/prometheus-text.ts).
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type FleetMetrics, metrics, metricsHandler, nodeMetricsHandler, OTHER } from '@mcp-fleet/prometheus';
import express from 'express';
import { Hono } from 'hono';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startV2ToolServer, type ToolServer } from '../packages/core/src/mcp/fixtures/tool-servers.js';
import { fixture, NODE } from '../packages/core/src/stdio/test-helpers.js';
import { refusedReceiverUrl, startReceiver } from '../packages/core/src/webhooks/fixtures/receiver.js';
import { createFleet, createMemoryStore, type FleetError } from '@mcp-fleet/core';
import { ADAPTERS, type Adapter } from './support/adapters.js';
import { openSession } from './support/mcp-session.js';
import { type ApiClient, createServer as createFleetServer, expectSuccess, freshClient, type Json, send, serveForSuite, uniqueName } from './support/http-client.js';
import { scrape } from './support/prometheus-text.js';

const ARGUMENT = 'argument-text-5d0a';

let upstream: ToolServer;
beforeAll(async () => {
  upstream = await startV2ToolServer();
});
afterAll(async () => {
  await upstream.close();
});

/** `/metrics` over `registry`, as a host app of the adapter's framework serves it. */
async function serveMetrics(adapter: Adapter['name'], registry: Registry): Promise<{ url: string; close(): Promise<void> }> {
  let server: Server;
  if (adapter === 'hono') {
    const app = new Hono();
    const handler = metricsHandler(registry);
    app.on(['GET', 'HEAD', 'POST'], '/metrics', (c) => handler(c.req.raw));
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', createServer }) as Server;
    await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())));
  } else {
    const app = express();
    app.all('/metrics', nodeMetricsHandler(registry));
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  }
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

async function mcpClient(url: string, key: string): Promise<Client> {
  const client = new Client({ name: 'metrics-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

describe.each(ADAPTERS)('@mcp-fleet/prometheus over HTTP ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { allowPrivateNetworks: true, onError: () => {}, rateLimit: {}, webhooks: { pollIntervalMs: 20 } });
  const registry = new Registry();
  let counting: FleetMetrics;
  let endpoint: { url: string; close(): Promise<void> };
  let client: ApiClient & { account: string };
  let serverId: string;
  let serverName: string;

  beforeAll(async () => {
    counting = metrics(suite.served.fleet, { registry });
    endpoint = await serveMetrics(adapter.name, registry);
    client = await freshClient(suite.served);
    serverName = uniqueName('metered');
    serverId = (await createFleetServer(client, { name: serverName, type: 'http', endpoint: upstream.url })).id;
  });
  afterAll(async () => {
    counting.close();
    await endpoint.close();
  });

  it('the HTTP API: requests by method, route template and status class; operations; authentications; rate-limit decisions', async () => {
    const before = await scrape(endpoint.url);
    expectSuccess(await client.get(`/servers/${serverId}`), 200);
    expectSuccess(await client.get(`/servers/${serverId}`), 200);
    expect((await client.get('/servers/srv_000000000000000000000000')).status).toBe(404);
    expect((await send(suite.served.url, 'GET', '/servers', {}, 'mcpf_not_a_key_00000000000000000000000000000')).status).toBe(401);
    const after = await scrape(endpoint.url);
    const grew = (name: string, labels: Record<string, string>) => after.total(name, labels) - before.total(name, labels);

    expect(after.family('mcp_fleet_http_request_duration_seconds')?.type).toBe('histogram');
    expect(grew('mcp_fleet_http_request_duration_seconds', { method: 'GET', route: '/v1/servers/:id', status_class: '2xx' })).toBe(2);
    expect(grew('mcp_fleet_http_request_duration_seconds', { method: 'GET', route: '/v1/servers/:id', status_class: '4xx' })).toBe(1);
    expect(grew('mcp_fleet_http_request_duration_seconds', { method: 'GET', status_class: '4xx' })).toBe(2);
    // The histogram's buckets are the HTTP semantic conventions'.
    const [series] = after.series('mcp_fleet_http_request_duration_seconds', { route: '/v1/servers/:id', status_class: '2xx' });
    expect((series?.buckets ?? []).map(([le]) => le)).toEqual(['0.005', '0.01', '0.025', '0.05', '0.075', '0.1', '0.25', '0.5', '0.75', '1', '2.5', '5', '7.5', '10', '+Inf']);

    expect(grew('mcp_fleet_operation_duration_seconds', { operation: 'servers.get', via: 'http', outcome: 'ok' })).toBe(2);
    expect(grew('mcp_fleet_operation_duration_seconds', { operation: 'servers.get', via: 'http', outcome: 'error', error_code: 'SERVER_NOT_FOUND' })).toBe(1);
    expect(after.family('mcp_fleet_auth_outcomes_total')?.type).toBe('counter');
    expect(grew('mcp_fleet_auth_outcomes_total', { method: 'api_key', outcome: 'ok' })).toBe(3);
    expect(grew('mcp_fleet_auth_outcomes_total', { method: 'api_key', outcome: 'refused' })).toBe(1);
    expect(grew('mcp_fleet_ratelimit_decisions_total', { allowed: 'true' })).toBeGreaterThanOrEqual(3);
    expect(after.family('mcp_fleet_ratelimit_decisions_total')?.series.every((s) => ['operation', 'tier', 'address'].includes(s.labels.scope ?? ''))).toBe(true);
  });

  it('an MCP tools/call at /v1/mcp: mcp_server_operation_duration_seconds and, for the upstream call, mcp_client_operation_duration_seconds', async () => {
    const before = await scrape(endpoint.url);
    const mcp = await mcpClient(suite.served.url, client.key as string);
    const result = (await mcp.callTool({ name: `${serverName}__echo`, arguments: { text: ARGUMENT } })) as Json;
    expect(result.content[0].text).toBe(ARGUMENT);
    expect(((await mcp.callTool({ name: `${serverName}__fail`, arguments: {} })) as Json).isError).toBe(true);
    const refused = await mcp.callTool({ name: 'nowhere__echo', arguments: {} }).then(
      () => undefined,
      (error: { code: number }) => error.code,
    );
    expect(refused).toBe(-32602);
    await mcp.close();
    const after = await scrape(endpoint.url);
    const grew = (name: string, labels: Record<string, string>) => after.total(name, labels) - before.total(name, labels);

    const server = 'mcp_server_operation_duration_seconds';
    expect(after.family(server)?.type).toBe('histogram');
    const [echoed] = after.series(server, { mcp_method_name: 'tools/call', gen_ai_tool_name: `${serverName}__echo` });
    // Success: no error_type at all.
    expect(echoed?.labels).toEqual({ mcp_method_name: 'tools/call', gen_ai_tool_name: `${serverName}__echo` });
    expect(grew(server, { mcp_method_name: 'tools/call', gen_ai_tool_name: `${serverName}__echo` })).toBe(1);
    expect(grew(server, { mcp_method_name: 'tools/call', gen_ai_tool_name: `${serverName}__fail`, error_type: 'tool_error' })).toBe(1);
    expect(grew(server, { mcp_method_name: 'tools/call', gen_ai_tool_name: 'nowhere__echo', error_type: '-32602' })).toBe(1);
    // The MCP conventions' buckets.
    expect((echoed?.buckets ?? []).map(([le]) => le)).toEqual(['0.01', '0.02', '0.05', '0.1', '0.2', '0.5', '1', '2', '5', '10', '30', '60', '120', '300', '+Inf']);

    const client_ = 'mcp_client_operation_duration_seconds';
    expect(grew(client_, { mcp_method_name: 'tools/call', gen_ai_tool_name: 'echo', network_transport: 'tcp' })).toBe(1);
    expect(grew(client_, { mcp_method_name: 'tools/call', gen_ai_tool_name: 'fail', error_type: 'tool_error' })).toBe(1);
    expect(grew('mcp_fleet_operation_duration_seconds', { operation: 'tools.call', via: 'mcp', outcome: 'ok' })).toBe(2);
    expect(grew('mcp_fleet_http_request_duration_seconds', { method: 'POST', route: '/v1/mcp', status_class: '2xx' })).toBeGreaterThanOrEqual(3);
  });

  it('a probe per server, and a webhook delivery by event type, outcome and status class', async () => {
    const receiver = await startReceiver();
    try {
      const hook = expectSuccess(await client.post('/webhooks', { url: receiver.url, events: ['server.created'] }), 201);
      expectSuccess(await client.get(`/servers/${serverId}/health`), 200);
      expectSuccess(await client.post(`/webhooks/${hook.id}/test`), 202);
      await receiver.waitFor(1);
      await expect
        .poll(async () => (await scrape(endpoint.url)).total('mcp_fleet_webhook_delivery_duration_seconds', { event_type: 'webhook.test', outcome: 'ok', status_class: '2xx' }))
        .toBe(1);
      const after = await scrape(endpoint.url);
      expect(after.total('mcp_fleet_probe_duration_seconds', { server_id: serverId, transport: 'http', outcome: 'ok' })).toBe(1);
    } finally {
      await receiver.close();
    }
  });

  it('never a session id, a request id, a key id, a secret or an argument in a label', async () => {
    const v1 = new V1Client({ name: 'metrics-test-v1', version: '1.0.0' });
    const transport = new V1Transport(new URL(`${suite.served.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${client.key}` } } });
    await v1.connect(transport);
    await v1.callTool({ name: `${serverName}__echo`, arguments: { text: ARGUMENT } });
    const sessionId = transport.sessionId as string;
    await transport.terminateSession();
    await v1.close();
    const answer = await client.get('/servers');
    const text = await (await fetch(endpoint.url)).text();
    expect(sessionId).toBeTruthy();
    for (const secret of [sessionId, answer.headers.get('x-request-id') as string, client.key as string, ARGUMENT, client.account]) expect(text).not.toContain(secret);
    expect(text).not.toMatch(/\b(key|req)_[0-9A-Za-z]{6,}/);
  });

  it('/metrics: GET and HEAD in the text format, never cached; other methods 405', async () => {
    const got = await fetch(endpoint.url);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe(registry.contentType);
    expect(got.headers.get('cache-control')).toBe('no-store');
    expect(await got.text()).toContain('# TYPE mcp_server_operation_duration_seconds histogram');
    const head = await fetch(endpoint.url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    const posted = await fetch(endpoint.url, { method: 'POST' });
    expect(posted.status).toBe(405);
    expect(posted.headers.get('allow')).toBe('GET, HEAD');
  });
});

describe.each(ADAPTERS)('@mcp-fleet/prometheus gauges of the fleet passed ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { allowPrivateNetworks: true, onError: () => {}, stdio: { commands: [NODE] }, webhooks: { pollIntervalMs: 20 } });

  it('live sessions, stdio processes and pending webhook deliveries, read at each scrape', async () => {
    const registry = new Registry();
    const counting = metrics(suite.served.fleet, { registry });
    const endpoint = await serveMetrics(adapter.name, registry);
    const gauge = async (name: string) => {
      const scraped = await scrape(endpoint.url);
      expect(scraped.family(name)?.type).toBe('gauge');
      return scraped.series(name)[0]?.value;
    };
    try {
      expect(await gauge('mcp_fleet_sessions_live')).toBe(0);
      expect(await gauge('mcp_fleet_stdio_processes')).toBe(0);
      expect(await gauge('mcp_fleet_webhook_outbox_pending')).toBe(0);

      const client = await freshClient(suite.served);
      const stdioName = uniqueName('pipe');
      await createFleetServer(client, { name: stdioName, type: 'stdio', command: NODE, args: [fixture('echo-server.mjs')], timeout: 15_000 });
      const session = await openSession(suite.served.url, client.key as string);
      expect(await gauge('mcp_fleet_sessions_live')).toBe(1);
      await session.client.callTool({ name: `${stdioName}__echo`, arguments: { text: 'x' } });
      expect(await gauge('mcp_fleet_stdio_processes')).toBe(1);
      // DELETE /mcp of the session.
      await session.end();
      expect(await gauge('mcp_fleet_sessions_live')).toBe(0);

      // A receiver that refuses: the delivery fails and waits for its retry, pending.
      const hook = expectSuccess(await client.post('/webhooks', { url: await refusedReceiverUrl(), events: ['server.created'] }), 201);
      expectSuccess(await client.post(`/webhooks/${hook.id}/test`), 202);
      await expect.poll(async () => (await scrape(endpoint.url)).total('mcp_fleet_webhook_delivery_duration_seconds', { event_type: 'webhook.test', outcome: 'error' })).toBe(1);
      expect(await gauge('mcp_fleet_webhook_outbox_pending')).toBe(1);
    } finally {
      counting.close();
      await endpoint.close();
    }
  });
});

describe('metrics()', () => {
  const suite = serveForSuite(ADAPTERS[0] as Adapter, { allowPrivateNetworks: true });

  it('clamps label values: cut to maxLabelLength, and past maxLabelValues a new value is counted as `_OTHER`', async () => {
    const registry = new Registry();
    const counting = metrics(suite.served.fleet, { registry, maxLabelValues: 2, maxLabelLength: 12 });
    const endpoint = await serveMetrics('express', registry);
    try {
      const client = await freshClient(suite.served);
      const mcp = await mcpClient(suite.served.url, client.key as string);
      // Unknown tools, refused each: the name is what the client sent, anything at all.
      for (const name of ['first__tool_with_a_long_name', 'second__tool', 'third__tool', 'fourth__tool', 'second__tool']) {
        await mcp.callTool({ name, arguments: {} }).catch(() => {});
      }
      await mcp.close();
      const after = await scrape(endpoint.url);
      const tools = after.series('mcp_server_operation_duration_seconds', { mcp_method_name: 'tools/call' });
      expect(Object.fromEntries(tools.map((s) => [s.labels.gen_ai_tool_name, s.count]))).toEqual({ first__tool_: 1, second__tool: 2, [OTHER]: 2 });
    } finally {
      counting.close();
      await endpoint.close();
    }
  });

  it('a store that fails while counting the outbox: the scrape answers, without that gauge, and the fleet tells onError', async () => {
    const store = createMemoryStore();
    store.index.count = () => Promise.reject(new Error('store down'));
    const errors: FleetError[] = [];
    const fleet = createFleet({ store, onError: (error) => void errors.push(error) });
    const registry = new Registry();
    const counting = metrics(fleet, { registry });
    const endpoint = await serveMetrics('hono', registry);
    try {
      const scraped = await scrape(endpoint.url);
      expect(scraped.series('mcp_fleet_sessions_live')[0]?.value).toBe(0);
      expect(scraped.family('mcp_fleet_webhook_outbox_pending')?.series).toEqual([]);
      expect(errors.map((error) => error.message)).toEqual(['Counting the pending webhook deliveries failed.']);
    } finally {
      counting.close();
      await endpoint.close();
      await fleet.close();
      await store.close();
    }
  });

  it('no fleet, no gauges; a fleet without webhooks, no outbox gauge', async () => {
    const registry = new Registry();
    const bare = metrics({ registry });
    expect(registry.getSingleMetric('mcp_fleet_sessions_live')).toBeUndefined();
    bare.close();
    const fleet = createFleet({ webhooks: false });
    const counting = metrics(fleet, { registry });
    expect(registry.getSingleMetric('mcp_fleet_sessions_live')).toBeDefined();
    expect(registry.getSingleMetric('mcp_fleet_webhook_outbox_pending')).toBeUndefined();
    counting.close();
    await fleet.close();
  });

  it('refuses a registry that already holds its metrics; close() removes them, and it may be called again', () => {
    const registry = new Registry();
    const first = metrics({ registry, prefix: 'app_' });
    expect(registry.getSingleMetric('app_mcp_server_operation_duration_seconds')).toBeDefined();
    expect(() => metrics(suite.served.fleet, { registry, prefix: 'app_' })).toThrow(/already holds app_mcp_server_operation_duration_seconds.*close\(\) the first/);
    // Another prefix is another set of names.
    metrics({ registry, prefix: 'other_' }).close();
    first.close();
    expect(registry.getMetricsAsArray()).toEqual([]);
    metrics({ registry, prefix: 'app_' }).close();
    expect(() => metrics({ registry, prefix: 'not a prefix' })).toThrow(/prefix must be a Prometheus name prefix/);
    expect(() => metrics({ registry, maxLabelValues: 0 })).toThrow(/maxLabelValues must be a positive integer/);
  });
});

describe('examples/grafana/mcp-fleet.json', () => {
  it('is a dashboard whose every query reads metrics this package registers', async () => {
    const dashboard = JSON.parse(await readFile(new URL('../examples/grafana/mcp-fleet.json', import.meta.url), 'utf8')) as { panels: { type: string; targets?: { expr: string }[] }[] };
    const registry = new Registry();
    const counting = metrics({ registry });
    const names = new Set(registry.getMetricsAsArray().map((metric) => (metric as unknown as { name: string }).name));
    counting.close();
    const queries = dashboard.panels.flatMap((panel) => panel.targets ?? []).map((target) => target.expr);
    expect(queries.length).toBeGreaterThanOrEqual(10);
    const read = new Set(queries.flatMap((expr) => [...expr.matchAll(/\b(mcp_[a-z_]+?)(?:_bucket|_count|_sum)?\{/g)].map((match) => match[1] as string)));
    expect([...read].filter((name) => !names.has(name))).toEqual([]);
    // Every metric has a panel.
    expect([...names].filter((name) => !read.has(name))).toEqual([]);
  });
});
