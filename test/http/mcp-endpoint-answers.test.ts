import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { createFleet, createMemoryStore, type Fleet, type Principal, type Prober } from '@mcp-fleet/core';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, Server, type Tool } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayUpstream, startGatewayUpstream } from '../../packages/core/src/mcp/fixtures/gateway-upstream.js';
import { PIECES_FROM } from '../../packages/core/src/mcp-endpoint/lean-road.js';
import { listen, readBody } from '../../packages/core/src/mcp/fixtures/listen.js';
import { startV2ToolServer, type ToolServer } from '../../packages/core/src/mcp/fixtures/tool-servers.js';
import { ADAPTERS } from '../support/adapters.js';
import { CountingIndexStore } from '../support/counting-index.js';
import { api, createServer, expectSuccess, serveForSuite } from '../support/http-client.js';

// The lean road of /v1/mcp (issue 31, docs/performance.md "The MCP endpoint"): what it answers must stay what the
// protocol and the account say, however the answer is made.

/** `Bearer {account}`: every scope, every tool; `Bearer {account}|{tool patterns}|{scopes}` (`*`: all) narrows them. */
function authenticate(request: Request): Principal | null {
  const token = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
  if (token === undefined) return null;
  const [account = '', tools = '*', scopes = '*'] = token.split('|');
  return {
    account,
    tier: 'pro',
    scopes: scopes === '*' ? null : (scopes.split(',') as Principal['scopes'] & string[]),
    tools: tools === '*' ? null : tools.split(','),
  };
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

/** A bare SDK upstream listing `tools` (at `{origin}/mcp`); `close` ends its handler and its server. */
async function listingUpstream(name: string, tools: Tool[]): Promise<{ origin: string; close: () => Promise<void> }> {
  const handler = createMcpHandler(() => {
    const server = new Server({ name, version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler('tools/list', () => ({ tools }));
    return server;
  });
  const node = toNodeHandler(handler);
  const served = await listen(async (req, res) => node(req, res, req.method === 'POST' ? JSON.parse(await readBody(req)) : undefined));
  return {
    origin: served.origin,
    close: async () => {
      await handler.close();
      await served.close();
    },
  };
}

/** The headers of an answer that say what it is (not which request or session it answers). */
const answerHeaders = (res: Response) => ({ status: res.status, type: res.headers.get('content-type'), session: res.headers.get('mcp-session-id') !== null });

describe.each(ADAPTERS)('the lean road answers as the SDK road does ($name)', (adapter) => {
  const lean = serveForSuite(adapter, { authenticate, allowPrivateNetworks: true, onError: () => {} });
  const sdk = serveForSuite(adapter, { authenticate, allowPrivateNetworks: true, onError: () => {}, mcp: { leanRoad: false } });

  /** An initialized 2025 session on `fleet` as `token`; answers a POST of one message on it. */
  type Post = (message: unknown, more?: { headers?: Record<string, string>; signal?: AbortSignal }) => Promise<Response>;
  async function session(url: string, token: string): Promise<Post> {
    const headers = {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    };
    const init = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'roads', version: '1.0.0' } } }),
    });
    await init.text();
    const id = init.headers.get('mcp-session-id') as string;
    const post: Post = (message, more = {}) =>
      fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': id, ...more.headers }, body: JSON.stringify(message), ...(more.signal === undefined ? {} : { signal: more.signal }) });
    expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
    return post;
  }

  /** The same account on both fleets, with alpha and beta registered; a session per token on each. */
  async function both(tokenOf: (account: string) => string = (name) => name) {
    const name = account();
    for (const fleet of [lean, sdk]) {
      const rest = api(fleet.served, name);
      await createServer(rest, { name: 'alpha', type: 'http', endpoint: alpha.url });
      await createServer(rest, { name: 'beta', type: 'http', endpoint: beta.url });
    }
    return {
      name,
      lean: await session(`${lean.served.url}/mcp`, tokenOf(name)),
      sdk: await session(`${sdk.served.url}/mcp`, tokenOf(name)),
    };
  }

  const cases: [string, unknown][] = [
    ['tools/list', { jsonrpc: '2.0', id: 1, method: 'tools/list' }],
    ['tools/list with params and _meta', { jsonrpc: '2.0', id: 'l', method: 'tools/list', params: { _meta: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } } }],
    ['a call with structured content', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'alpha__lookup', arguments: { key: 'k' } } }],
    ['a call without arguments', { jsonrpc: '2.0', id: 'two', method: 'tools/call', params: { name: 'alpha__count' } }],
    ['an isError result', { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'beta__fail', arguments: {} } }],
    ['arguments the tool refuses', { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'beta__echo', arguments: { text: 5 } } }],
    ['an unknown tool', { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'alpha__nope', arguments: {} } }],
    ['an unknown server prefix', { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'nobody__echo', arguments: {} } }],
    ['an empty name', { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: '', arguments: {} } }],
    ['no name (the SDK road refuses it)', { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { arguments: {} } }],
    ['a cursor (the SDK road)', { jsonrpc: '2.0', id: 9, method: 'tools/list', params: { cursor: 'x' } }],
  ];

  it.each(cases)('%s: same status, content type and JSON-RPC message', async (_label, message) => {
    const roads = await both();
    const [a, b] = await Promise.all([roads.lean(message), roads.sdk(message)]);
    expect(answerHeaders(a)).toEqual(answerHeaders(b));
    // Byte for byte, but for the ids of the servers (each fleet registered its own).
    const [x, y] = await Promise.all([a.text(), b.text()].map(async (text) => (await text).replace(/srv_\w+/g, 'srv_')));
    expect(x).toBe(y);
  });

  it('an allowlisted key and a key without tool_calls:write are answered alike on both roads, each view listed for itself', async () => {
    for (const token of [(name: string) => `${name}|alpha__look*,beta__echo|*`, (name: string) => `${name}|*|tool_calls:read`]) {
      const roads = await both(token);
      for (const message of [
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'alpha__lookup', arguments: { key: 'k' } } },
        { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'alpha__count', arguments: {} } },
      ]) {
        const [a, b] = await Promise.all([roads.lean(message), roads.sdk(message)]);
        expect(answerHeaders(a)).toEqual(answerHeaders(b));
        expect((await a.text()).replace(/srv_\w+/g, 'srv_')).toBe((await b.text()).replace(/srv_\w+/g, 'srv_'));
      }
    }
    // Two keys of one account, different allowlists, listing in turn: each sees its own list every time.
    const name = account();
    await createServer(api(lean.served, name), { name: 'alpha', type: 'http', endpoint: alpha.url });
    const narrow = await session(`${lean.served.url}/mcp`, `${name}|alpha__lookup|*`);
    const wide = await session(`${lean.served.url}/mcp`, name);
    const listed = async (post: Post) => ((await (await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).json()) as { result: { tools: { name: string }[] } }).result.tools.map((tool) => tool.name);
    // The upstream is shared by the file's cases (one of them adds a tool): the whole list is what it lists now.
    const all = await listed(wide);
    expect(all).toContain('alpha__lookup');
    expect(all.length).toBeGreaterThan(1);
    for (let i = 0; i < 2; i++) {
      expect(await listed(narrow)).toEqual(['alpha__lookup']);
      expect(await listed(wide)).toEqual(all);
    }
  });

  it('tools/list follows an upstream list_changed, on both roads', async () => {
    const roads = await both();
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const before = ((await (await roads.lean(list)).json()) as { result: { tools: unknown[] } }).result.tools.length;
    const tool = `added_${Math.random().toString(36).slice(2, 7)}`;
    await alpha.addTool(tool);
    for (const post of [roads.lean, roads.sdk]) {
      await expect
        .poll(async () => ((await (await post(list)).json()) as { result: { tools: { name: string }[] } }).result.tools.map((t) => t.name), { timeout: 5000 })
        .toContain(`alpha__${tool}`);
    }
    expect(((await (await roads.lean(list)).json()) as { result: { tools: unknown[] } }).result.tools.length).toBe(before + 1);
  });

  it('notifications/cancelled on another POST cancels a call of either road at the upstream; the session goes on', async () => {
    const roads = await both();
    for (const post of [roads.lean, roads.sdk]) {
      const before = alpha.cancelled();
      const controller = new AbortController();
      const waiting = post({ jsonrpc: '2.0', id: 41, method: 'tools/call', params: { name: 'alpha__wait', arguments: { ms: 20_000 } } }, { signal: controller.signal }).then(
        (res) => res.text(),
        () => 'aborted',
      );
      // The call reaches the upstream first.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const cancel = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 41, reason: 'test' } });
      expect(cancel.status).toBe(202);
      await expect.poll(() => alpha.cancelled(), { timeout: 5000 }).toBe(before + 1);
      controller.abort();
      expect(await waiting).not.toContain('"result"');
      const after = await post({ jsonrpc: '2.0', id: 42, method: 'tools/call', params: { name: 'alpha__count', arguments: {} } });
      expect(((await after.json()) as { result: { content: unknown } }).result.content).toEqual([{ type: 'text', text: 'counted' }]);
    }
  });

  it('a tool whose outputSchema the 2025 era wraps (SEP-2106) is listed as the SDK road lists it, from the cache too', async () => {
    // A 2026-07-28 upstream may declare a non-object output schema; a 2025 session gets it wrapped by the SDK's codec.
    const arrays = await listingUpstream('arrays', [
      { name: 'tags', inputSchema: { type: 'object' }, outputSchema: { type: 'array', items: { type: 'string' } } },
      { name: 'plain', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: { n: { type: 'number' } } } },
    ]);
    try {
      const name = account();
      for (const fleet of [lean, sdk]) await createServer(api(fleet.served, name), { name: 'arrays', type: 'http', endpoint: `${arrays.origin}/mcp` });
      const roads = { lean: await session(`${lean.served.url}/mcp`, name), sdk: await session(`${sdk.served.url}/mcp`, name) };
      for (let i = 0; i < 2; i++) {
        const list = { jsonrpc: '2.0', id: i, method: 'tools/list' };
        const [a, b] = await Promise.all([roads.lean(list), roads.sdk(list)]);
        const [x, y] = await Promise.all([a, b].map(async (res) => (await res.text()).replace(/srv_\w+/g, 'srv_')));
        expect(x).toBe(y);
        const tools = (JSON.parse(x as string) as { result: { tools: { name: string; outputSchema: unknown }[] } }).result.tools;
        expect(tools.find((tool) => tool.name === 'arrays__tags')?.outputSchema).toMatchObject({ type: 'object', properties: { result: { type: 'array' } }, required: ['result'] });
        expect(tools.find((tool) => tool.name === 'arrays__plain')?.outputSchema).toEqual({ type: 'object', properties: { n: { type: 'number' } } });
      }
    } finally {
      await arrays.close();
    }
  });

  it('a list larger than PIECES_FROM, sent as its kept bytes and a tail, arrives whole: its Content-Length, not chunked, byte for byte as the SDK road lists it, from the cache too', async () => {
    // 300 tools of about 1.2 KB each: about 370 KB, past the size from which the lean road sends the kept list as it
    // is, beside the request's tail, instead of one copy of both.
    const tools = Array.from({ length: 300 }, (_, i) => ({ name: `t${i}`, description: `Tool ${i}: ${'é'.repeat(600)}`, inputSchema: { type: 'object' as const } }));
    const many = await listingUpstream('many', tools);
    try {
      const name = account();
      for (const fleet of [lean, sdk]) await createServer(api(fleet.served, name), { name: 'many', type: 'http', endpoint: `${many.origin}/mcp` });
      const roads = { lean: await session(`${lean.served.url}/mcp`, name), sdk: await session(`${sdk.served.url}/mcp`, name) };
      // A string id of characters of more than one byte each: the length is counted in bytes.
      for (const id of [1, 'lïst-ü', 'lïst-ü-2']) {
        const list = { jsonrpc: '2.0', id, method: 'tools/list' };
        const [a, b] = await Promise.all([roads.lean(list), roads.sdk(list)]);
        expect(a.headers.get('content-type')).toBe('application/json');
        expect(a.headers.get('transfer-encoding')).toBeNull();
        const bytes = Buffer.from(await a.arrayBuffer());
        expect(bytes.length).toBeGreaterThan(PIECES_FROM);
        expect(Number(a.headers.get('content-length'))).toBe(bytes.length);
        const [x, y] = [bytes.toString(), (await b.text()).replace(/srv_\w+/g, 'srv_')];
        expect(x.replace(/srv_\w+/g, 'srv_')).toBe(y);
        const answer = JSON.parse(x) as { id: unknown; result: { tools: unknown[] } };
        expect(answer.id).toBe(id);
        expect(answer.result.tools).toHaveLength(300);
        // The bytes `JSON.stringify` of the message gives: no whitespace, nothing added.
        expect(x).toBe(JSON.stringify(answer));
      }
    } finally {
      await many.close();
    }
  });

  it('protocol checks come first on the lean road: unknown session 404, unsupported protocol version 400, Accept without SSE 406', async () => {
    const roads = await both();
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'alpha__count', arguments: {} } };
    for (const fleet of [lean, sdk]) {
      const url = `${fleet.served.url}/mcp`;
      const base = { authorization: `Bearer ${roads.name}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const missing = await fetch(url, { method: 'POST', headers: { ...base, 'mcp-session-id': '00000000-0000-4000-8000-000000000000' }, body: JSON.stringify(call) });
      expect(missing.status).toBe(404);
      expect(((await missing.json()) as { error: { code: number } }).error.code).toBe(-32001);
    }
    for (const [header, status] of [
      [{ 'mcp-protocol-version': '1999-01-01' }, 400],
      [{ accept: 'application/json' }, 406],
    ] as const) {
      const answers = await Promise.all(
        [roads.lean, roads.sdk].map(async (post) => {
          const res = await post(call, { headers: header });
          return { status: res.status, body: await res.json() };
        }),
      );
      expect(answers[0]?.status).toBe(status);
      expect(answers[0]).toEqual(answers[1]);
    }
  });
});

describe.each(ADAPTERS)('tools/list taken as kept over the memory stores ($name)', (adapter) => {
  // One memory store shared by the served fleet and a second one in this process, which changes servers behind the
  // first one's back; one clock for both, moved by the test.
  const index = new CountingIndexStore();
  const store = { ...createMemoryStore(), index };
  let clock = Date.now();
  const now = () => clock;
  /** What the second fleet's probes answer. */
  let probeOk = true;
  const prober: Prober = async () => ({ ok: probeOk, era: '2025', responseTimeMs: 1, error: probeOk ? null : { code: 'UPSTREAM_UNREACHABLE', message: 'down' } });
  const suite = serveForSuite(adapter, { authenticate, allowPrivateNetworks: true, onError: () => {}, store, now });
  let other: Fleet;
  beforeAll(() => {
    other = createFleet({ store, now, prober, allowPrivateNetworks: true, onError: () => {} });
  });
  afterAll(() => other.close());

  it('reads no listing while no server changed (a tool call aside), and sees every change another fleet sharing the store makes, and the end of a TTL', async () => {
    const name = account();
    const tools: Tool[] = [{ name: 'first', inputSchema: { type: 'object' } }];
    const upstream = await listingUpstream('ttl', tools);
    try {
      const client = new V2Client({ name: 'kept', version: '1.0.0' });
      await client.connect(new V2Transport(new URL(`${suite.served.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${name}` } } }));
      const names = async () => (await client.listTools()).tools.map((tool) => tool.name).sort();
      const a = (await other.servers.create(name, { name: 'alpha', type: 'http', endpoint: alpha.url }))._unsafeUnwrap();
      const alphaTools = await names();
      expect(alphaTools.length).toBeGreaterThan(0);

      // Nothing changed: the lists after the one that kept the answer read nothing of the account's servers; nor do
      // they after tool calls (their records and listings are not the servers').
      await names();
      const reads = index.listingReads;
      for (let i = 0; i < 3; i++) expect(await names()).toEqual(alphaTools);
      expect((await client.callTool({ name: 'alpha__count', arguments: {} })).isError).not.toBe(true);
      expect(await names()).toEqual(alphaTools);
      expect(index.listingReads - reads).toBe(0);

      // Registered, renamed, probed unhealthy and deleted through the other fleet: each seen on the next list.
      const b = (await other.servers.create(name, { name: 'beta', type: 'http', endpoint: beta.url }))._unsafeUnwrap();
      const both = await names();
      expect(both.some((tool) => tool.startsWith('beta__'))).toBe(true);
      expect(await names()).toEqual(both);
      (await other.servers.update(name, b.id, { name: 'gamma' }))._unsafeUnwrap();
      expect((await names()).some((tool) => tool.startsWith('beta__'))).toBe(false);
      expect((await names()).some((tool) => tool.startsWith('gamma__'))).toBe(true);
      probeOk = false;
      expect((await other.servers.health(name, a.id))._unsafeUnwrap().status).toBe('unhealthy');
      expect((await names()).some((tool) => tool.startsWith('alpha__'))).toBe(false);
      probeOk = true;
      (await other.servers.delete(name, b.id))._unsafeUnwrap();
      expect(await names()).toEqual([]);

      // A listing kept within its TTL answers; past it, the upstream is asked again (it lists one more tool by then,
      // and says nothing of it: no list_changed).
      (await other.servers.create(name, { name: 'ttl', type: 'http', endpoint: `${upstream.origin}/mcp` }))._unsafeUnwrap();
      expect(await names()).toEqual(['ttl__first']);
      tools.push({ name: 'second', inputSchema: { type: 'object' } });
      expect(await names()).toEqual(['ttl__first']);
      expect(await names()).toEqual(['ttl__first']);
      clock += 61_000;
      expect(await names()).toEqual(['ttl__first', 'ttl__second']);
      await client.close();
    } finally {
      await upstream.close();
    }
  });
});
