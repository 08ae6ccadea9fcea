import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, type Listening, readBody } from '../../packages/core/src/mcp/fixtures/listen.js';
import { startV2ToolServer, type ToolServer } from '../../packages/core/src/mcp/fixtures/tool-servers.js';
import { ADAPTERS } from '../support/adapters.js';
import { openSession } from '../support/mcp-session.js';
import { expectError, expectSuccess, freshClient, ISO_MS, serveForSuite, uniqueName } from '../support/http-client.js';

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A real MCP server (SDK v2) that answers every request `delayMs` late. */
async function startSlowServer(delayMs: number): Promise<Listening & { url: string }> {
  const handler = createMcpHandler(() => new McpServer({ name: 'fixture-slow', version: '1.0.0' }));
  const node = toNodeHandler(handler);
  const listening = await listen(async (req, res) => {
    const text = req.method === 'POST' ? await readBody(req) : '';
    await wait(delayMs);
    await node(req, res, text === '' ? undefined : JSON.parse(text));
  });
  return {
    ...listening,
    url: `${listening.origin}/mcp`,
    close: async () => {
      await handler.close();
      await listening.close();
    },
  };
}

const upstreams: { close(): Promise<void> }[] = [];
let slow: Listening & { url: string };
let tools: ToolServer;

beforeAll(async () => {
  slow = await startSlowServer(600);
  tools = await startV2ToolServer();
  upstreams.push(slow, tools);
});
afterAll(async () => {
  await Promise.all(upstreams.map((upstream) => upstream.close()));
});

describe.each(ADAPTERS)('health states through $name', (adapter) => {
  const slowSuite = serveForSuite(adapter, { allowPrivateNetworks: true, health: { announceAfter: 1, degradedLatencyMs: 300 } });
  const rateSuite = serveForSuite(adapter, { allowPrivateNetworks: true, health: { announceAfter: 1, degradedErrorRate: 0.15 } });

  it('is degraded, rule slow_probe, when a probe answers slower than health.degradedLatencyMs; listed under ?health=degraded', async () => {
    const client = await freshClient(slowSuite.served);
    const server = expectSuccess(await client.post('/servers', { name: uniqueName('slow'), type: 'http', endpoint: slow.url }), 201);
    const record = expectSuccess(await client.get(`/servers/${server.id}/health`), 200);
    expect(record).toMatchObject({ status: 'degraded', state_reason: 'slow_probe', error: null, pending: null });
    expect(record.response_time).toBeGreaterThan(300);
    expect(expectSuccess(await client.get(`/servers/${server.id}`), 200).health).toBe('degraded');
    expect((await client.get('/servers?health=degraded')).body.pagination.total).toBe(1);
    expect((await client.get('/servers?health=healthy')).body.pagination.total).toBe(0);
    // A fast server beside it stays healthy under the same thresholds.
    const fast = expectSuccess(await client.post('/servers', { name: uniqueName('fast'), type: 'http', endpoint: tools.url }), 201);
    expect(expectSuccess(await client.get(`/servers/${fast.id}/health`), 200)).toMatchObject({ status: 'healthy', state_reason: 'probe_ok' });
  });

  it('is degraded, rule error_rate, when one call in three fails (health.degradedErrorRate 0.15); the history has call latencies', async () => {
    const client = await freshClient(rateSuite.served);
    const server = expectSuccess(await client.post('/servers', { name: uniqueName('flaky'), type: 'http', endpoint: tools.url }), 201);
    expect(expectSuccess(await client.get(`/servers/${server.id}/health`), 200).status).toBe('healthy');
    for (const name of ['echo', 'echo', 'fail']) expectSuccess(await client.post(`/servers/${server.id}/tools/call`, { name, arguments: name === 'echo' ? { text: 'hi' } : {} }), 200);
    // Two probes and three calls, one failed: 20% of the window's requests, above 15%.
    const record = expectSuccess(await client.get(`/servers/${server.id}/health`), 200);
    expect(record).toMatchObject({ status: 'degraded', state_reason: 'error_rate', error_rate: '20%', error: null });
    expect((await client.get('/servers?health=degraded')).body.pagination.total).toBe(1);
    const history = expectSuccess(await client.get(`/servers/${server.id}/health/history`), 200);
    expect(history).toMatchObject({ status: 'degraded', state_reason: 'error_rate', breaker: { state: 'closed', consecutive_failures: 0 } });
    expect(history.latency.last_hour.call.count).toBe(3);
    expect(history.latency.last_day.probe.count).toBe(2);
    expect(history.latency.last_hour.call.p95).toBeGreaterThanOrEqual(history.latency.last_hour.call.p50);
    expect(history.buckets.at(-1).status).toBe('degraded');
  });

  it('accepts each state in the list filter, and refuses another', async () => {
    const client = await freshClient(rateSuite.served);
    for (const health of ['unknown', 'healthy', 'degraded', 'unhealthy', 'auth_failed']) expectSuccess(await client.get(`/servers?health=${health}`), 200);
    expectError(await client.get('/servers?health=offline'), 400, 'INVALID_REQUEST');
  });
});

describe.each(ADAPTERS)('the circuit breaker through $name', (adapter) => {
  const suite = serveForSuite(adapter, { allowPrivateNetworks: true, health: { announceAfter: 1, breaker: { failures: 3, backoffMs: 600, maxBackoffMs: 5000 } } });

  it('opens after 3 failed calls, fails fast with 503 and Retry-After without reaching the server, records it once, and one half-open probe closes it', async () => {
    const upstream = await startV2ToolServer({ failFirstCalls: 3 });
    upstreams.push(upstream);
    const client = await freshClient(suite.served);
    const server = expectSuccess(await client.post('/servers', { name: uniqueName('breaker'), type: 'http', endpoint: upstream.url }), 201);
    const call = () => client.post(`/servers/${server.id}/tools/call`, { name: 'echo', arguments: { text: 'hi' } });
    for (let i = 0; i < 3; i++) expect(expectSuccess(await call(), 200)).toMatchObject({ status: 'error', attempts: 1 });
    const seen = upstream.methods.length;

    const refused = await call();
    const error = { details: expectError(refused, 503, 'UPSTREAM_UNAVAILABLE') };
    expect(Object.keys(error.details).sort()).toEqual(['retry_at', 'server_id']);
    expect(error.details.server_id).toBe(server.id);
    expect(error.details.retry_at).toMatch(ISO_MS);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true);
    // Nothing reached the server: not a probe, not the call.
    expect(upstream.methods.length).toBe(seen);

    // Recorded as such, and not counted again in the server's health.
    const listed = expectSuccess(await client.get(`/tool-calls?server_id=${server.id}`), 200);
    expect(listed[0]).toMatchObject({ status: 'error', attempts: 0, error: { code: 'UPSTREAM_UNAVAILABLE' } });
    const history = expectSuccess(await client.get(`/servers/${server.id}/health/history`), 200);
    expect(history.breaker).toMatchObject({ state: 'open', consecutive_failures: 3, retry_at: error.details.retry_at });
    expect(history.buckets.reduce((sum: number, b: { requests: number }) => sum + b.requests, 0)).toBe(3);

    // After the backoff: half-open; the next call probes the server first, the probe succeeds, the call goes.
    await wait(Date.parse(error.details.retry_at) - Date.now() + 50);
    expect(expectSuccess(await client.get(`/servers/${server.id}/health/history`), 200).breaker.state).toBe('half_open');
    expect(expectSuccess(await call(), 200)).toMatchObject({ status: 'success' });
    const after = upstream.methods.slice(seen);
    expect(after.indexOf('tools/call')).toBeGreaterThan(0);
    expect(after.slice(0, after.indexOf('tools/call'))).toContain('server/discover');
    expect(expectSuccess(await client.get(`/servers/${server.id}/health/history`), 200).breaker).toEqual({ state: 'closed', consecutive_failures: 0, opened_at: null, retry_at: null });
  });

  it('a half-open probe that fails opens it again for twice as long, without calling the tool', async () => {
    const upstream = await startV2ToolServer({ failFirstCalls: 3 });
    upstreams.push(upstream);
    const client = await freshClient(suite.served);
    const server = expectSuccess(await client.post('/servers', { name: uniqueName('breaker'), type: 'http', endpoint: upstream.url }), 201);
    const call = () => client.post(`/servers/${server.id}/tools/call`, { name: 'echo', arguments: { text: 'hi' } });
    for (let i = 0; i < 3; i++) await call();
    const first = expectError(await call(), 503, 'UPSTREAM_UNAVAILABLE');
    await upstream.close();
    await wait(Date.parse(first.retry_at) - Date.now() + 50);
    const second = await call();
    expectError(second, 503, 'UPSTREAM_UNAVAILABLE');
    const breaker = expectSuccess(await client.get(`/servers/${server.id}/health/history`), 200).breaker;
    expect(breaker).toMatchObject({ state: 'open', consecutive_failures: 4 });
    expect(Date.parse(breaker.retry_at) - Date.parse(breaker.opened_at)).toBe(1200);
    expect(upstream.methods.filter((method) => method === 'tools/call')).toHaveLength(3);
  });

  it('on /mcp, a call to a server whose breaker is open is a tool result with isError naming UPSTREAM_UNAVAILABLE, and reaches nothing', async () => {
    const upstream = await startV2ToolServer({ failFirstCalls: 3 });
    upstreams.push(upstream);
    const client = await freshClient(suite.served);
    const name = uniqueName('brk');
    const server = expectSuccess(await client.post('/servers', { name, type: 'http', endpoint: upstream.url }), 201);
    for (let i = 0; i < 3; i++) await client.post(`/servers/${server.id}/tools/call`, { name: 'echo', arguments: { text: 'hi' } });
    const session = await openSession(suite.served.url, client.key as string);
    try {
      const calls = upstream.methods.filter((method) => method === 'tools/call').length;
      const result = await session.client.callTool({ name: `${name}__echo`, arguments: { text: 'hi' } });
      expect(result.isError).toBe(true);
      expect((result.content as { text: string }[])[0]?.text).toMatch(/^UPSTREAM_UNAVAILABLE: /);
      expect(upstream.methods.filter((method) => method === 'tools/call')).toHaveLength(calls);
    } finally {
      await session.end();
    }
  });
});
