import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedPort } from '../../packages/core/src/mcp/fixtures/listen.js';
import { startV2ToolServer, type ToolServer } from '../../packages/core/src/mcp/fixtures/tool-servers.js';
import { ADAPTERS } from '../support/adapters.js';
import { oneWindow } from '../support/clock.js';
import {
  type ApiClient,
  createServer,
  expectError,
  expectInvalid,
  expectSuccess,
  freshClient,
  type Json,
  serveForSuite,
  UNKNOWN_SERVER_ID,
  uniqueName,
} from '../support/http-client.js';

const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const RECORD_FIELDS = ['attempts', 'created_at', 'duration_ms', 'error', 'id', 'server_id', 'server_name', 'status', 'tool', 'via'];

let upstream: ToolServer;
beforeAll(async () => {
  upstream = await startV2ToolServer({ authorize: (h) => h === 'Bearer upstream-secret' });
});
afterAll(async () => {
  await upstream.close();
});

describe.each(ADAPTERS)('tool calls over HTTP ($name)', (adapter) => {
  let clock = T0;
  // 502s are expected here: keep the default error hook's log lines out of the test output.
  const suite = serveForSuite(adapter, { now: () => clock, allowPrivateNetworks: true, onError: () => {} });

  async function toolServer(client: ApiClient): Promise<string> {
    const created = await createServer(client, {
      name: uniqueName('tools'),
      type: 'http',
      endpoint: upstream.url,
      authentication: { type: 'bearer', token: 'upstream-secret' },
    });
    return created.id;
  }

  async function call(client: ApiClient, id: string, name: string, args: Record<string, unknown> = {}): Promise<Json> {
    clock += 1000;
    return expectSuccess(await client.post(`/servers/${id}/tools/call`, { name, arguments: args }), 200);
  }

  it('POST /servers/{id}/tools/call answers the record plus the MCP result; GET /tool-calls/{id} reads it back', async () => {
    const client = await freshClient(suite.served);
    const id = await toolServer(client);
    const res = await client.post(`/servers/${id}/tools/call`, { name: 'echo', arguments: { text: 'over http' } });
    const data = expectSuccess(res, 200);
    expect(Object.keys(data).sort()).toEqual([...RECORD_FIELDS, 'result'].sort());
    expect(data).toMatchObject({ server_id: id, tool: 'echo', status: 'success', attempts: 1, error: null, via: 'http' });
    expect(data.result.content[0].text).toBe('over http');
    expect(res.text).not.toContain('upstream-secret');
    const { result: _result, ...record } = data;
    expect(expectSuccess(await client.get(`/tool-calls/${data.id}`), 200)).toEqual(record);

    const failed = await call(client, id, 'fail');
    expect(failed).toMatchObject({ status: 'error', error: { code: 'TOOL_ERROR' } });
    expect(failed.result.isError).toBe(true);
  });

  it('a client gone before the answer cancels the upstream call, and its record says so', async () => {
    const client = await freshClient(suite.served);
    const id = await toolServer(client);
    const runs = upstream.slowRuns();
    const gone = new AbortController();
    const answered = fetch(`${suite.served.url}/servers/${id}/tools/call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${client.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'slow', arguments: { ms: 20_000 } }),
      signal: gone.signal,
    }).then(
      () => 'answered',
      () => 'gone',
    );
    await expect.poll(() => upstream.slowRuns(), { timeout: 5000 }).toBe(runs + 1);
    gone.abort();
    expect(await answered).toBe('gone');
    // Well before the tool's 20 s the call ends (the SDK cancels it upstream: on 2026-07-28 by closing its request) and
    // is recorded as ended by its caller; without the request's signal the fleet would wait the 20 s out.
    await expect
      .poll(async () => expectSuccess(await client.get(`/tool-calls?server_id=${id}`), 200).map((r: Json) => [r.tool, r.status, r.error?.code]), { timeout: 5000 })
      .toEqual([['slow', 'error', 'UPSTREAM_PROTOCOL_ERROR']]);
  });

  it('GET /servers/{id}/tools lists the tools; an unreachable server answers 502', async () => {
    const client = await freshClient(suite.served);
    const id = await toolServer(client);
    const tools = expectSuccess(await client.get(`/servers/${id}/tools`), 200);
    expect(tools.map((t: Json) => t.name).sort()).toEqual(['echo', 'fail', 'slow']);
    const refused = await createServer(client, { name: uniqueName('down'), type: 'http', endpoint: `http://127.0.0.1:${await refusedPort()}/mcp` });
    expectError(await client.get(`/servers/${refused.id}/tools`), 502, 'UPSTREAM_UNREACHABLE');
  });

  it('validates the call body in the contract envelope and changes nothing', async () => {
    const client = await freshClient(suite.served);
    const id = await toolServer(client);
    expectInvalid(await client.post(`/servers/${id}/tools/call`, { arguments: {} }), 'name');
    expectInvalid(await client.post(`/servers/${id}/tools/call`, { name: 'echo', arguments: [1] }), 'arguments');
    expectInvalid(await client.post(`/servers/${id}/tools/call`, { name: 'echo', extra: 1 }), 'extra');
    expectInvalid(await client.post(`/servers/${id}/tools/call`, ['echo']), 'body');
    // A lone surrogate in the name (JSON escapes it as \ud800): refused before the upstream hears of it, where the call
    // went out and its record then failed to file (500).
    const calls = upstream.methods.filter((method) => method === 'tools/call').length;
    expect(expectInvalid(await client.post(`/servers/${id}/tools/call`, { name: 'echo\ud800' }), 'name').issue).toMatch(/well-formed Unicode/);
    expect(upstream.methods.filter((method) => method === 'tools/call').length).toBe(calls);
    expectError(await client.post(`/servers/${UNKNOWN_SERVER_ID}/tools/call`, { name: 'echo' }), 404, 'SERVER_NOT_FOUND');
    expectInvalid(await client.get('/tool-calls?status=broken'), 'status');
    expect(expectSuccess(await client.get('/tool-calls'), 200)).toEqual([]);
  });

  it('needs tool_calls:write to call and tool_calls:read to list', async () => {
    const admin = await freshClient(suite.served);
    const id = await toolServer(admin);
    const reader = await freshClient(suite.served, ['tool_calls:read', 'servers:read']);
    expectError(await reader.post(`/servers/${id}/tools/call`, { name: 'echo' }), 403, 'FORBIDDEN', { required_scope: 'tool_calls:write' });
    const writer = await freshClient(suite.served, ['tool_calls:write']);
    expectError(await writer.get('/tool-calls'), 403, 'FORBIDDEN', { required_scope: 'tool_calls:read' });
  });

  it('lists newest first with right totals, filters and order across pages', async () => {
    const client = await freshClient(suite.served);
    const a = await toolServer(client);
    const b = await toolServer(client);
    const made: Json[] = [];
    for (const [server, tool] of [
      [a, 'echo'], [a, 'fail'], [b, 'echo'], [a, 'echo'], [b, 'fail'], [b, 'echo'], [a, 'fail'],
    ] as const) {
      made.push(await call(client, server, tool, tool === 'echo' ? { text: 't' } : {}));
    }
    const newestFirst = [...made].reverse().map((c) => c.id);

    async function all(query: string, limit = 2): Promise<{ ids: string[]; total: number }> {
      const ids: string[] = [];
      let total = -1;
      for (let page = 1; ; page++) {
        const res = await client.get(`/tool-calls?limit=${limit}&page=${page}${query}`);
        const data = expectSuccess(res, 200);
        total = res.body.pagination.total;
        expect(res.body.pagination).toMatchObject({ page, limit, total, pages: Math.ceil(total / limit) });
        for (const record of data) expect(Object.keys(record).sort()).toEqual(RECORD_FIELDS);
        ids.push(...data.map((c: Json) => c.id));
        if (data.length < limit) break;
      }
      return { ids, total };
    }

    expect(await all('')).toEqual({ ids: newestFirst, total: 7 });
    const only = (pred: (c: Json) => boolean) => [...made].reverse().filter(pred).map((c) => c.id);
    expect(await all(`&server_id=${a}`)).toEqual({ ids: only((c) => c.server_id === a), total: 4 });
    expect(await all('&status=error')).toEqual({ ids: only((c) => c.status === 'error'), total: 3 });
    expect(await all('&tool=echo')).toEqual({ ids: only((c) => c.tool === 'echo'), total: 4 });
    expect(await all(`&server_id=${b}&status=success&tool=echo`, 1)).toEqual({ ids: only((c) => c.server_id === b && c.tool === 'echo'), total: 2 });
    expect(await all('&tool=nothing')).toEqual({ ids: [], total: 0 });

    // Another account sees none of them.
    const other = await freshClient(suite.served);
    expect(expectSuccess(await other.get('/tool-calls'), 200)).toEqual([]);
    expectError(await other.get(`/tool-calls/${made[0].id}`), 404, 'NOT_FOUND');
  });
});

describe.each(ADAPTERS)('tool call rate limits ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { now: oneWindow(), allowPrivateNetworks: true, rateLimit: { operations: { 'tools.call': 2 } } });

  it('counts tools.call against its configured per-operation limit', async () => {
    const client = await freshClient(suite.served);
    const created = await createServer(client, {
      name: uniqueName('rl'),
      type: 'http',
      endpoint: upstream.url,
      authentication: { type: 'bearer', token: 'upstream-secret' },
    });
    for (let i = 0; i < 2; i++) expectSuccess(await client.post(`/servers/${created.id}/tools/call`, { name: 'echo', arguments: { text: 'x' } }), 200);
    const limited = await client.post(`/servers/${created.id}/tools/call`, { name: 'echo', arguments: { text: 'x' } });
    expect(expectError(limited, 429, 'RATE_LIMITED')).toMatchObject({ scope: 'operation', limit: 2 });
    // Listing tools is another operation: only the tier limit applies.
    expectSuccess(await client.get(`/servers/${created.id}/tools`), 200);
  });
});

describe.each(ADAPTERS)('tool-call records expire after toolCalls.retentionDays ($name)', (adapter) => {
  let clock = T0;
  // A quarter of a day, swept every 20 ms against the test's clock.
  const suite = serveForSuite(adapter, { now: () => clock, allowPrivateNetworks: true, onError: () => {}, toolCalls: { retentionDays: 0.25, expirySweepMs: 20 } });

  it('old records vanish from GET /tool-calls, its filtered listings and their totals; newer ones stay', async () => {
    const client = await freshClient(suite.served);
    const server = await createServer(client, { name: uniqueName('expiry'), type: 'http', endpoint: upstream.url, authentication: { type: 'bearer', token: 'upstream-secret' } });
    const call = async (name: string) => {
      clock += 1000;
      return expectSuccess(await client.post(`/servers/${server.id}/tools/call`, { name, arguments: { text: 'x' } }), 200);
    };
    const old = [await call('echo'), await call('echo'), await call('fail')];
    clock += 7 * 3_600_000; // 7 hours: the three are past 6 hours old
    const fresh = [await call('echo'), await call('fail')];
    const totalOf = async (query = '') => (await client.get(`/tool-calls?limit=100${query}`)).body.pagination.total;
    await expect.poll(() => totalOf(), { timeout: 5000 }).toBe(2);
    const listed = (await client.get('/tool-calls?limit=100')).body.data.map((c: Json) => c.id);
    expect(listed).toEqual([fresh[1].id, fresh[0].id]);
    expect(await totalOf('&status=success')).toBe(1);
    expect(await totalOf('&status=error')).toBe(1);
    expect(await totalOf(`&server_id=${server.id}&tool=echo`)).toBe(1);
    expect(await totalOf(`&server_id=${server.id}&status=error&tool=fail`)).toBe(1);
    for (const gone of old) expectError(await client.get(`/tool-calls/${gone.id}`), 404, 'NOT_FOUND');
    expectSuccess(await client.get(`/tool-calls/${fresh[0].id}`), 200);
  });
});
