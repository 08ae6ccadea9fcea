import { InMemoryTransport, Server } from '@modelcontextprotocol/server';
import { Client } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { hotHeaders, hotRequest, partsOf } from './lean-road.js';

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
