import type { Principal } from '@mcp-fleet/core';
import { createRedisStore, type RedisStore } from '@mcp-fleet/redis';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayUpstream, startGatewayUpstream } from '../../packages/core/src/mcp/fixtures/gateway-upstream.js';
import { ADAPTERS, type Served, serveFleet } from '../support/adapters.js';
import { api, createServer } from '../support/http-client.js';
import { deleteKeys, REDIS_URL, uniquePrefix, withoutRedis } from '../support/redis.js';

/** `Bearer {account}`: every scope, no allowlist. */
const authenticate = (request: Request): Principal | null => {
  const account = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
  return account === undefined ? null : { account, tier: 'pro', scopes: null };
};

/**
 * docs/mcp-endpoint.md "Sessions and several processes": a 2025 session opened on one fleet is served by another
 * sharing its storage (here two fleets on one Redis, each with its own connection and its own adapter, as two
 * processes would be), because the session's record lives in the storage and the second fleet rebuilds it.
 */
describe.skipIf(withoutRedis('MCP sessions across processes'))('MCP endpoint sessions across two fleets on one Redis', () => {
  const prefix = uniquePrefix('mcp-sessions');
  const stores: RedisStore[] = [];
  const served: Served[] = [];
  let upstream: GatewayUpstream;

  beforeAll(async () => {
    upstream = await startGatewayUpstream('alpha');
    for (const adapter of ADAPTERS) {
      const redis = await createRedisStore({ url: REDIS_URL as string, keyPrefix: prefix });
      stores.push(redis);
      served.push(await serveFleet(adapter, {
          store: redis,
          authenticate,
          allowPrivateNetworks: true,
          onError: () => {},
          // Read the session record on every request, so an end on one fleet shows on the other at once.
          mcp: { sessionCheckMs: 0 },
        }),);
    }
  });
  afterAll(async () => {
    for (const one of served) await one.close();
    for (const redis of stores) await redis.close();
    await upstream.close();
    await deleteKeys(prefix);
  });

  it('a session initialized on process A is served on process B (tools/list, tools/call), for its account only', async () => {
    const [a, b] = served as [Served, Served];
    const account = `acct-${Math.random().toString(36).slice(2, 8)}`;
    await createServer(api(a, account), { name: 'alpha', type: 'http', endpoint: upstream.url });

    const onA = new V1Client({ name: 'on-a', version: '1.0.0' });
    const transportA = new V1Transport(new URL(`${a.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${account}` } } });
    await onA.connect(transportA);
    const sessionId = transportA.sessionId as string;
    expect((await onA.listTools()).tools.map((t) => t.name)).toContain('alpha__lookup');

    // The SDK client resumes a known session without initialize when given its id.
    const onB = new V1Client({ name: 'on-b', version: '1.0.0' });
    const transportB = new V1Transport(new URL(`${b.url}/mcp`), { sessionId, requestInit: { headers: { authorization: `Bearer ${account}` } } });
    await onB.connect(transportB);
    expect(transportB.sessionId).toBe(sessionId);
    expect((await onB.listTools()).tools.map((t) => t.name)).toContain('alpha__lookup');
    const result = await onB.callTool({ name: 'alpha__lookup', arguments: { key: 'on-b' } });
    expect(result.structuredContent).toEqual({ value: 'alpha:on-b' });
    const calls = (await api(b, account).get('/tool-calls')).body.data;
    expect(calls.map((c: { via: string }) => c.via)).toEqual(['mcp']);

    // Another account presenting the id is told the session does not exist, on either process.
    for (const fleet of served) {
      const res = await fetch(`${fleet.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer intruder',
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': sessionId,
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(res.status).toBe(404);
      await res.text();
    }

    // Ending it on B deletes its record: both processes answer 404 from then on, A (which still held it) included.
    await transportB.terminateSession();
    for (const fleet of served) {
      const after = await fetch(`${fleet.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${account}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      });
      expect(after.status).toBe(404);
      await after.text();
    }
    await onA.close();
    await onB.close();
  });
});
