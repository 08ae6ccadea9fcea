import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayUpstream, startGatewayUpstream } from '../packages/core/src/mcp/fixtures/gateway-upstream.js';
import { killLeftovers, removeTempDirs, startServer, tempDir } from './support/reference-server.js';
import { REDIS_URL, removeKeysAddedDuring, withDatabase, withoutRedis } from './support/redis.js';

/**
 * docs/mcp-endpoint.md "Sessions and several processes", with real processes: two reference servers on one Redis;
 * an MCP client's 2025 session opened on the first is served by the second, which never saw it.
 */
describe.skipIf(withoutRedis('MCP sessions across reference servers'))('MCP sessions across two reference servers on one Redis', () => {
  // Database 11: other process suites clean up databases 9 and 10 while they run.
  const store = REDIS_URL === undefined ? '' : withDatabase(REDIS_URL, 11);
  removeKeysAddedDuring(store);
  let upstream: GatewayUpstream;
  beforeAll(async () => {
    upstream = await startGatewayUpstream('alpha');
  });
  afterAll(async () => {
    await upstream.close();
  });
  afterEach(async () => {
    await killLeftovers();
    await removeTempDirs();
  });

  it('process B serves tools/list and tools/call of a session initialized on process A', async () => {
    const secret = `mcp-${randomBytes(12).toString('hex')}`;
    const account = `mcp${randomBytes(4).toString('hex')}`;
    const env = { MCP_FLEET_STORE: store, MCP_FLEET_API_KEYS: `${account}:pro:${secret}`, MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1' };
    const [a, b] = await Promise.all([startServer({ cwd: await tempDir(), env }), startServer({ cwd: await tempDir(), env })]);
    const headers = { authorization: `Bearer ${secret}` };
    const created = await fetch(`${a.url}/servers`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'alpha', type: 'http', endpoint: upstream.url }),
    });
    expect(created.status).toBe(201);

    const onA = new Client({ name: 'on-a', version: '1.0.0' });
    const transportA = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), { requestInit: { headers } });
    await onA.connect(transportA);
    expect((await onA.listTools()).tools.map((t) => t.name)).toContain('alpha__lookup');

    const onB = new Client({ name: 'on-b', version: '1.0.0' });
    const transportB = new StreamableHTTPClientTransport(new URL(`${b.url}/mcp`), { sessionId: transportA.sessionId, requestInit: { headers } });
    await onB.connect(transportB);
    expect((await onB.listTools()).tools.map((t) => t.name)).toContain('alpha__lookup');
    expect((await onB.callTool({ name: 'alpha__lookup', arguments: { key: 'b' } })).structuredContent).toEqual({ value: 'alpha:b' });
    const calls = (await (await fetch(`${a.url}/tool-calls`, { headers })).json()) as { data: { via: string }[] };
    expect(calls.data.map((c) => c.via)).toEqual(['mcp']);
    await onA.close();
    await onB.close();
  });
});
