import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import type { Principal } from '@mcp-fleet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayUpstream, startGatewayUpstream } from '../../packages/core/src/mcp/fixtures/gateway-upstream.js';
import { startV2ToolServer, type ToolServer } from '../../packages/core/src/mcp/fixtures/tool-servers.js';
import { ADAPTERS } from '../support/adapters.js';
import { api, createServer, expectSuccess, serveForSuite } from '../support/http-client.js';

// The lean road of /v1/mcp (issue 31, docs/performance.md "The MCP endpoint"): what it answers must stay what the
// protocol and the account say, however the answer is made.

/** `Bearer {account}`: every scope, every tool. */
function authenticate(request: Request): Principal | null {
  const account = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
  return account === undefined ? null : { account, tier: 'pro', scopes: null, tools: null };
}

let seq = 0;
const account = () => `answers-${++seq}-${Math.random().toString(36).slice(2, 7)}`;

let alpha: GatewayUpstream;
let beta: ToolServer;
beforeAll(async () => {
  alpha = await startGatewayUpstream('alpha');
  beta = await startV2ToolServer();
});
afterAll(async () => {
  await alpha.close();
  await beta.close();
});

/** The JSON-RPC messages of an SSE body, in order. */
const sseMessages = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => JSON.parse(line.slice(5)) as Record<string, unknown>);

describe.each(ADAPTERS)('what /v1/mcp answers on its lean road ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { authenticate, allowPrivateNetworks: true, onError: () => {} });
  const mcpUrl = () => `${suite.served.url}/mcp`;

  /** A 2025 session of `name`, initialized; answers a POST of one message on it. */
  async function session(name: string): Promise<(message: unknown) => Promise<Response>> {
    const headers = {
      authorization: `Bearer ${name}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    };
    const init = await fetch(mcpUrl(), {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'answers', version: '1.0.0' } } }),
    });
    expect(init.status).toBe(200);
    await init.text();
    const id = init.headers.get('mcp-session-id') as string;
    const post = (message: unknown) => fetch(mcpUrl(), { method: 'POST', headers: { ...headers, 'mcp-session-id': id }, body: JSON.stringify(message) });
    expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
    return post;
  }

  it('2025 session: a request without a progressToken is answered as JSON, one with it as SSE with its progress first', async () => {
    const name = account();
    await createServer(api(suite.served, name), { name: 'alpha', type: 'http', endpoint: alpha.url });
    const post = await session(name);

    const plain = await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'alpha__count', arguments: {} } });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-type')).toBe('application/json');
    expect(plain.headers.get('x-request-id')).toMatch(/^req_/);
    expect(plain.headers.get('mcp-session-id')).not.toBeNull();
    const answer = (await plain.json()) as { id: number; result: { content: unknown } };
    expect(answer.id).toBe(1);
    expect(answer.result.content).toEqual([{ type: 'text', text: 'counted' }]);

    const streamed = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'alpha__count', arguments: {}, _meta: { progressToken: 'p' } } });
    expect(streamed.headers.get('content-type')).toBe('text/event-stream');
    expect(streamed.headers.get('x-request-id')).toMatch(/^req_/);
    const messages = sseMessages(await streamed.text());
    expect(messages.map((m) => m['method'] ?? 'result')).toEqual(['notifications/progress', 'notifications/progress', 'notifications/progress', 'result']);
    expect(messages.at(-1)?.['id']).toBe(2);

    // A JSON-RPC error is answered as JSON too, with its id.
    const unknown = await post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'alpha__nope', arguments: {} } });
    expect(unknown.headers.get('content-type')).toBe('application/json');
    expect(((await unknown.json()) as { id: number; error: { code: number } }).error.code).toBe(-32602);
  });

  it('tools/list answers follow every change of the servers behind them: added, renamed, deleted', async () => {
    const name = account();
    const rest = api(suite.served, name);
    const client = new V2Client({ name: 'answers', version: '1.0.0' });
    await client.connect(new V2Transport(new URL(mcpUrl()), { requestInit: { headers: { authorization: `Bearer ${name}` } } }));
    const names = async () => (await client.listTools()).tools.map((tool) => tool.name).sort();

    const a = await createServer(rest, { name: 'alpha', type: 'http', endpoint: alpha.url });
    const alphaTools = await names();
    expect(alphaTools.length).toBeGreaterThan(0);
    expect(await names()).toEqual(alphaTools);

    const b = await createServer(rest, { name: 'beta', type: 'http', endpoint: beta.url });
    const both = await names();
    expect(both.some((tool) => tool.startsWith('beta__'))).toBe(true);
    expect(both.length).toBeGreaterThan(alphaTools.length);

    expectSuccess(await rest.put(`/servers/${b.id}`, { name: 'gamma' }), 200);
    const renamed = await names();
    expect(renamed.some((tool) => tool.startsWith('beta__'))).toBe(false);
    expect(renamed.filter((tool) => tool.startsWith('gamma__')).length).toBe(both.filter((tool) => tool.startsWith('beta__')).length);

    expectSuccess(await rest.delete(`/servers/${a.id}`), 200);
    expect((await names()).every((tool) => tool.startsWith('gamma__'))).toBe(true);
    await client.close();
  });
});
