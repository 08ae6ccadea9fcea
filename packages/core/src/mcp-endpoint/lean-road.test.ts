import { InMemoryTransport, isLegacyRequest, Server, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import { Client } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { hotHeaders, hotPost, hotRequest, partsOf } from './lean-road.js';

describe('hotRequest: what the lean road takes', () => {
  const call = (params: unknown, more: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params, ...more });

  it('takes one tools/call or tools/list of a shape the SDK accepts as it is', () => {
    expect(hotRequest(call({ name: 'a__b', arguments: { x: 1 } }))).toBeDefined();
    expect(hotRequest(call({ name: 'a__b' }))).toBeDefined();
    expect(hotRequest(call({ name: 'a__b', _meta: { traceparent: 't' } }))).toBeDefined();
    expect(hotRequest({ jsonrpc: '2.0', id: 'x', method: 'tools/list' })).toBeDefined();
    expect(hotRequest({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} })).toBeDefined();
  });

  it('leaves to the SDK whatever it might refuse, rewrite or stream', () => {
    for (const body of [
      [call({ name: 'a__b' })],
      call({ name: 'a__b', _meta: { progressToken: 1 } }),
      call({ name: 'a__b', _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } }),
      call({ name: 'a__b', task: {} }),
      call({ name: 'a__b', arguments: [] }),
      call({ name: 1 }),
      call(undefined),
      call({ name: 'a__b' }, { id: 1.5 }),
      call({ name: 'a__b' }, { id: null }),
      call({ name: 'a__b' }, { jsonrpc: '1.0' }),
      call({ name: 'a__b' }, { extra: true }),
      { jsonrpc: '2.0', method: 'tools/call', params: { name: 'a__b' } },
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { cursor: 'c' } },
      { jsonrpc: '2.0', id: 1, method: 'prompts/list' },
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} },
      null,
      'tools/call',
    ]) {
      expect(hotRequest(body), JSON.stringify(body)).toBeUndefined();
    }
  });

  it('takes headers the SDK transport accepts as they are', () => {
    const headers = (more: Record<string, string>) => new Headers({ accept: 'application/json, text/event-stream', ...more });
    expect(hotHeaders(headers({}))).toBe(true);
    expect(hotHeaders(headers({ 'mcp-protocol-version': '2025-06-18' }))).toBe(true);
    expect(hotHeaders(headers({ 'mcp-protocol-version': '1999-01-01' }))).toBe(false);
    expect(hotHeaders(headers({ accept: 'application/json' }))).toBe(false);
    expect(hotHeaders(new Headers())).toBe(false);
    // A modern version header: the SDK's routing sends the request to its 2026-07-28 road, which refuses it there.
    expect(hotHeaders(headers({ 'mcp-protocol-version': '2026-07-28' }))).toBe(false);
    // Every version the SDK's 2025 transport supports is one the lean road takes: were the SDK's routing to classify
    // one otherwise, the lean road would quietly leave it, and this says so.
    for (const version of SUPPORTED_PROTOCOL_VERSIONS) expect(hotHeaders(headers({ 'mcp-protocol-version': version })), version).toBe(true);
  });

  it("routes only what the SDK's own routing classifies legacy (the endpoint does not ask isLegacyRequest of a hot POST)", async () => {
    const bodies = [
      call({ name: 'a__b', arguments: { x: 1 } }),
      call({ name: 'a__b', _meta: { traceparent: 't' } }),
      { jsonrpc: '2.0', id: 'x', method: 'tools/list' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: {} } },
    ];
    const versions = [undefined, ...SUPPORTED_PROTOCOL_VERSIONS, '2026-07-28', '1999-01-01'];
    let hot = 0;
    for (const body of bodies) {
      for (const version of versions) {
        const headers = new Headers({ accept: 'application/json, text/event-stream', 'content-type': 'application/json', 'mcp-session-id': 's' });
        if (version !== undefined) headers.set('mcp-protocol-version', version);
        if (hotPost(body, headers) === undefined) continue;
        hot++;
        const request = new Request('http://fleet.test/v1/mcp', { method: 'POST', headers, body: JSON.stringify(body) });
        expect(await isLegacyRequest(request, body), `${JSON.stringify(body)} ${version}`).toBe(true);
      }
    }
    expect(hot).toBe(bodies.length * (1 + SUPPORTED_PROTOCOL_VERSIONS.length));
  });
});

describe('partsOf: the SDK Server members the lean road reads', () => {
  // Were an SDK upgrade to drop them, the lean road would quietly give every message to the SDK's road: this says so.
  it("finds a 2025 session's wire codec and running-request map on the SDK's Server", async () => {
    const server = new Server({ name: 't', version: '1' }, { capabilities: { tools: {} } });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(a);
    const client = new Client({ name: 'c', version: '1' });
    await client.connect(b);
    const parts = partsOf(server);
    expect(parts).toBeDefined();
    expect(parts?.running).toBeInstanceOf(Map);
    expect(parts?.codec.encodeErrorCode(-32002)).toBe(-32602);
    expect(parts?.codec.validateResult('tools/call', { content: [] }).ok).toBe(true);
    expect(parts?.codec.validateResult('tools/call', { content: 'no' }).ok).toBe(false);
    await client.close();
  });
});
