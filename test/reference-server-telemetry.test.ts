/**
 * The reference server's telemetry as an operator sees it, a real process: `MCP_FLEET_METRICS=1` serves `/metrics`
 * (scraped and read as the Prometheus text format), and its logs are JSON lines.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
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
    expect(scraped.total(http, { method: 'GET', route: '/servers', status_class: '2xx' })).toBe(2);
    expect(scraped.total(http, { method: 'POST', route: '/servers', status_class: '2xx' })).toBe(1);
    expect(scraped.total(http, { method: 'POST', route: '/servers/:id/tools/call', status_class: '2xx' })).toBe(1);
    expect(scraped.total(http, { method: 'GET', status_class: '4xx' })).toBe(1);
    expect(scraped.total('mcp_fleet_operation_duration_seconds', { operation: 'servers.list', via: 'http', outcome: 'ok' })).toBe(2);
    expect(scraped.total('mcp_fleet_operation_duration_seconds', { operation: 'tools.call', via: 'mcp', outcome: 'ok' })).toBe(1);
    expect(scraped.total('mcp_server_operation_duration_seconds', { mcp_method_name: 'tools/call', gen_ai_tool_name: 'tools__echo' })).toBe(1);
    // The REST call and the MCP one, each one upstream tools/call.
    expect(scraped.total('mcp_client_operation_duration_seconds', { mcp_method_name: 'tools/call', gen_ai_tool_name: 'echo', network_transport: 'tcp' })).toBe(2);
    expect(scraped.total('mcp_fleet_probe_duration_seconds', { server_id: id, transport: 'http', outcome: 'ok' })).toBe(1);
    expect(scraped.total('mcp_fleet_auth_attempts_total', { method: 'api_key', outcome: 'refused' })).toBe(1);
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

  it('MCP_FLEET_METRICS other than 1 or 0 stops the start, naming the variable', async () => {
    const exit = await runToExit({ cwd: await tempDir(), env: { ...ENV, MCP_FLEET_METRICS: 'yes' } });
    expect(exit.code).toBe(2);
    expect(exit.stderr).toContain('MCP_FLEET_METRICS: expected 1 or 0');
  });
});
