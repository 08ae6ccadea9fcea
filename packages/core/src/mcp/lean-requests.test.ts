import type { CallToolResult, FetchLike } from '@modelcontextprotocol/client';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { HttpServerConfig } from '../registry/schema.js';
import { createGuardedFetch } from '../net/guarded-fetch.js';
import type { ExchangeInit } from '../net/dispatch-fetch.js';
import { closedAfterEach, listen, readBody } from './fixtures/listen.js';
import { startV1ToolServer, startV2ToolServer, type ToolServer } from './fixtures/tool-servers.js';
import { closeClient, connectClient, type ConnectedClient, type McpEra } from './connect.js';
import { httpStatusOf, toUpstreamError } from './errors.js';

const started = closedAfterEach();

const http = (endpoint: string, extra: Partial<HttpServerConfig> = {}): HttpServerConfig => ({ name: 'lean-test', type: 'http', endpoint, timeout: 3000, ...extra });

/**
 * A client of `server` over the guarded fetch, on the lean road (`mcpExchange` given) or the SDK's alone, counting
 * the requests each road sends after the connection is open.
 */
async function connectVia(endpoint: string, lean: boolean, extra: Partial<HttpServerConfig> = {}, era?: McpEra) {
  const guarded = createGuardedFetch({ allowPrivateNetworks: true });
  const counts = { fetched: 0, exchanged: 0 };
  const mcpFetch: FetchLike = (url, init) => {
    counts.fetched += 1;
    return guarded.direct(url, init);
  };
  const mcpExchange = (url: URL, init: ExchangeInit) => {
    counts.exchanged += 1;
    return guarded.exchange(url, init);
  };
  const connected = await connectClient(http(endpoint, extra), { fetch: guarded, mcpFetch, ...(lean ? { mcpExchange } : {}) }, { signal: new AbortController().signal, timeoutMs: 3000, ...(era === undefined ? {} : { era }) });
  counts.fetched = 0;
  return { ...connected, counts, close: () => closeClient(connected.client, connected.transport, 0) };
}

/**
 * A tool call, a listing and (in the 2025 era, which has it) a ping, as the fleet makes them (the call with a progress
 * handler: a `progressToken`). Answers how many requests were made.
 */
async function hotRequests({ client, era }: ConnectedClient): Promise<{ answers: unknown[]; requests: number }> {
  const call = (await client.callTool({ name: 'echo', arguments: { text: 'hi' } }, { timeout: 3000, onprogress: () => {} })) as CallToolResult;
  const listed = await client.listTools(undefined, { timeout: 3000 });
  if (era === '2025') await client.ping({ timeout: 3000 });
  return { answers: [call.content, listed.tools.map((tool) => tool.name)], requests: era === '2025' ? 3 : 2 };
}

/** A request's headers as the upstream saw them, in order, its session id (one per connection) made alike. */
const comparable = (headers: IncomingHttpHeaders | undefined) =>
  Object.entries(headers ?? {}).map(([name, value]) => (name === 'mcp-session-id' ? [name, 'SESSION'] : [name, value]));

describe.each([
  ['2025-era (v1 SDK, sessions, answers as event streams)', startV1ToolServer, '2025'],
  ['2026-07-28 (v2 SDK, stateless, JSON answers)', startV2ToolServer, '2026-07-28'],
] as const)('lean requests of a Streamable HTTP upstream, %s', (_name, start, era) => {
  it('sends tools/call, tools/list and ping in one exchange each, with the very headers and body of the SDK road, and hands on the same answers', async () => {
    const server: ToolServer = await started(start({ authorize: (header) => header === 'Bearer lean-secret' }));
    const config = { authentication: { type: 'bearer' as const, token: 'lean-secret' } };
    const sdkRoad = await connectVia(server.url, false, config);
    const leanRoad = await connectVia(server.url, true, config);
    expect([sdkRoad.era, leanRoad.era]).toEqual([era, era]);

    const sdkAnswers = await hotRequests(sdkRoad);
    const leanAnswers = await hotRequests(leanRoad);
    expect(leanAnswers).toEqual(sdkAnswers);
    expect(leanAnswers.answers[0]).toEqual([{ type: 'text', text: 'hi' }]);
    // The SDK road fetched each request; the lean road's went by the exchange alone.
    expect(sdkRoad.counts).toEqual({ fetched: sdkAnswers.requests, exchanged: 0 });
    expect(leanRoad.counts).toEqual({ fetched: 0, exchanged: leanAnswers.requests });

    const [sdkCall, leanCall] = server.callHeaders.slice(-2);
    expect(comparable(leanCall)).toEqual(comparable(sdkCall));
    expect(leanCall?.authorization).toBe('Bearer lean-secret');
    const [sdkMeta, leanMeta] = server.callMetas.slice(-2);
    expect(leanMeta).toEqual(sdkMeta);
    await sdkRoad.close();
    await leanRoad.close();
  });

  it('fails a call whose upstream answered 503 as the SDK road fails it (the answer handed to the SDK transport)', async () => {
    const server = await started(start({ failFirstCalls: 2 }));
    const sdkRoad = await connectVia(server.url, false);
    const leanRoad = await connectVia(server.url, true);
    const failure = (connected: ConnectedClient) =>
      connected.client.callTool({ name: 'echo', arguments: { text: 'hi' } }, { timeout: 3000 }).then(
        () => undefined,
        (error: unknown) => ({ status: httpStatusOf(error), error: toUpstreamError(error, 3000) }),
      );
    const sdkFailure = await failure(sdkRoad);
    const leanFailure = await failure(leanRoad);
    expect(sdkFailure?.status).toBe(503);
    expect(leanFailure).toEqual(sdkFailure);
    // The 503 went by the exchange once, and its answer to the SDK transport, which read it without fetching again.
    expect(leanRoad.counts).toEqual({ fetched: 0, exchanged: 1 });
    // The connection goes on: the next call is answered.
    expect(((await leanRoad.client.callTool({ name: 'echo', arguments: { text: 'again' } })) as CallToolResult).content).toEqual([{ type: 'text', text: 'again' }]);
    await sdkRoad.close();
    await leanRoad.close();
  });
});

describe('lean requests, answers the SDK transport reads itself', () => {
  it('a session the upstream forgot (404) fails as on the SDK road, with its status, for the pool to open a new session', async () => {
    const server = await started(startV1ToolServer());
    const sdkRoad = await connectVia(server.url, false);
    const leanRoad = await connectVia(server.url, true);
    await server.forgetSessions();
    const failure = (connected: ConnectedClient) =>
      connected.client.callTool({ name: 'echo', arguments: { text: 'hi' } }, { timeout: 3000 }).then(
        () => undefined,
        (error: unknown) => ({ status: httpStatusOf(error), error: toUpstreamError(error, 3000) }),
      );
    const sdkFailure = await failure(sdkRoad);
    expect(sdkFailure?.status).toBe(404);
    expect(await failure(leanRoad)).toEqual(sdkFailure);
    await sdkRoad.close();
    await leanRoad.close();
  });

  it('a 200 answer that is not one JSON-RPC message, and an upstream gone, fail as on the SDK road', async () => {
    // A hand-written 2025-era upstream: initialize answered, then every tools/call answered with broken JSON.
    let broken = 'not json';
    const upstream = await started(
      listen(async (req, res) => {
        const message = JSON.parse(await readBody(req)) as { id?: number; method: string };
        if (message.method === 'initialize') {
          res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' });
          res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'hand', version: '1' } } }));
        } else if (message.id === undefined) {
          res.writeHead(202).end();
        } else {
          res.writeHead(200, { 'content-type': 'application/json' }).end(broken);
        }
      }),
    );
    const endpoint = `${upstream.origin}/mcp`;
    const sdkRoad = await connectVia(endpoint, false, {}, '2025');
    const leanRoad = await connectVia(endpoint, true, {}, '2025');
    const failure = (connected: ConnectedClient) =>
      connected.client.callTool({ name: 'echo', arguments: {} }, { timeout: 1000 }).then(
        () => undefined,
        (error: unknown) => toUpstreamError(error, 1000),
      );
    for (const answer of ['not json', '{"jsonrpc":"2.0","id":1}', '[]']) {
      broken = answer;
      const sdkFailure = await failure(sdkRoad);
      expect(sdkFailure).toBeDefined();
      expect(await failure(leanRoad)).toEqual(sdkFailure);
    }
    await upstream.close();
    const sdkFailure = await failure(sdkRoad);
    expect(sdkFailure?.code).toBe('UPSTREAM_UNREACHABLE');
    expect(await failure(leanRoad)).toEqual(sdkFailure);
    await sdkRoad.close();
    await leanRoad.close();
  });
});
