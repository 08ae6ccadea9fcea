import type { Principal, Scope } from '@mcp-fleet/core';
import { describe, expect, it } from 'vitest';
import { ADAPTERS } from '../support/adapters.js';
import {
  api,
  type ApiResponse,
  createKey,
  createServer,
  expectError,
  expectSuccess,
  freshClient,
  httpServer,
  send,
  serveForSuite,
  total,
  UNKNOWN_SERVER_ID,
} from '../support/http-client.js';

function expectUnauthorized(res: ApiResponse): void {
  expectError(res, 401, 'UNAUTHORIZED', {});
  expect(res.headers.get('www-authenticate')).toBe('Bearer');
}

describe.each(ADAPTERS)('authentication ($name)', (adapter) => {
  const suite = serveForSuite(adapter);

  describe('401 UNAUTHORIZED', () => {
    it('no Authorization header', async () => {
      const client = await freshClient(suite.served);
      expectUnauthorized(await client.get('/servers', { key: null }));
      expectUnauthorized(await client.post('/servers', httpServer(), { key: null }));
      expect(await total(client)).toBe(0);
    });

    it.each([
      ['Basic', (key: string) => `Basic ${Buffer.from(`user:${key}`).toString('base64')}`],
      ['Token', (key: string) => `Token ${key}`],
      ['bare key', (key: string) => key],
      ['Bearer without a key', () => 'Bearer'],
      ['Bearer with two words', (key: string) => `Bearer ${key} extra`],
    ])('a non-Bearer or malformed scheme (%s)', async (_what, header) => {
      const client = await freshClient(suite.served);
      expectUnauthorized(await client.get('/servers', { key: null, headers: { authorization: header(client.key ?? '') } }));
    });

    it('an unknown key', async () => {
      expectUnauthorized(await send(suite.served.url, 'GET', '/servers', {}, `mcpf_${'A'.repeat(40)}`));
      expectUnauthorized(await send(suite.served.url, 'GET', '/servers', {}, 'whatever'));
    });

    it('a revoked key, at once', async () => {
      const account = 'revoke-me';
      const created = (await suite.served.fleet.keys.create({ account, tier: 'pro' }))._unsafeUnwrap();
      const client = api(suite.served, created.secret);
      expectSuccess(await client.get('/servers'), 200);
      (await suite.served.fleet.keys.revoke(created.key.id))._unsafeUnwrap();
      expectUnauthorized(await client.get('/servers'));
      expectUnauthorized(await client.post('/servers', httpServer()));
      // another key of the same account still works
      const other = api(suite.served, await createKey(suite.served, { account }));
      expect(await total(other)).toBe(0);
    });

    it('the scheme name is case-insensitive', async () => {
      const client = await freshClient(suite.served);
      expectSuccess(await client.get('/servers', { key: null, headers: { authorization: `bearer ${client.key}` } }), 200);
    });

    it('401 comes before route checks: unknown routes and wrong methods do not reveal anything', async () => {
      expectUnauthorized(await send(suite.served.url, 'GET', '/nowhere'));
      expectUnauthorized(await send(suite.served.url, 'PATCH', '/servers'));
      expectUnauthorized(await send(suite.served.url, 'GET', `/servers/${UNKNOWN_SERVER_ID}`));
      expectUnauthorized(await send(suite.served.url, 'GET', '/tool-calls'));
    });
  });

  describe('403 FORBIDDEN by scope', () => {
    const cases: [string, string, Scope, boolean][] = [
      ['GET', '/servers', 'servers:read', false],
      ['GET', `/servers/${UNKNOWN_SERVER_ID}`, 'servers:read', false],
      ['POST', '/servers', 'servers:write', true],
      ['PUT', `/servers/${UNKNOWN_SERVER_ID}`, 'servers:write', true],
      ['DELETE', `/servers/${UNKNOWN_SERVER_ID}`, 'servers:write', false],
      ['GET', '/tool-calls', 'tool_calls:read', false],
      ['GET', '/tool-calls/call_abcdefghijklmnopqrstuvwx', 'tool_calls:read', false],
    ];

    it.each(cases)('%s %s needs %s', async (method, path, scope, withBody) => {
      const others = (['servers:read', 'servers:write', 'servers:health', 'tool_calls:read', 'tool_calls:write', 'webhooks:manage'] as Scope[]).filter(
        (s) => s !== scope,
      );
      const denied = await freshClient(suite.served, others);
      const options = withBody ? { body: httpServer() } : {};
      expectError(await denied.request(method, path, options), 403, 'FORBIDDEN', { required_scope: scope });
      const allowed = await freshClient(suite.served, [scope]);
      const res = await allowed.request(method, path, options);
      expect(res.status).not.toBe(403);
      expect(res.status).not.toBe(401);
    });

    it('a read-only key can list and get but not create, update or delete', async () => {
      const account = 'scoped-account';
      const writer = api(suite.served, await createKey(suite.served, { account, scopes: ['servers:write'] }));
      const reader = api(suite.served, await createKey(suite.served, { account, scopes: ['servers:read'] }));
      const server = await createServer(writer);
      expectSuccess(await reader.get(`/servers/${server.id}`), 200);
      expect(await total(reader)).toBe(1);
      expectError(await reader.put(`/servers/${server.id}`, { timeout: 5 }), 403, 'FORBIDDEN', { required_scope: 'servers:write' });
      expectError(await reader.delete(`/servers/${server.id}`), 403, 'FORBIDDEN', { required_scope: 'servers:write' });
      expectError(await writer.get(`/servers/${server.id}`), 403, 'FORBIDDEN', { required_scope: 'servers:read' });
      expect(expectSuccess(await reader.get(`/servers/${server.id}`), 200).timeout).toBe(30000);
      expectSuccess(await writer.delete(`/servers/${server.id}`), 200);
      expect(await total(reader)).toBe(0);
    });

    it('a key without a scope list has every scope', async () => {
      const client = await freshClient(suite.served);
      const server = await createServer(client);
      expectSuccess(await client.get(`/servers/${server.id}`), 200);
      expectSuccess(await client.put(`/servers/${server.id}`, { timeout: 10 }), 200);
      expectSuccess(await client.get('/tool-calls'), 200);
      expectSuccess(await client.delete(`/servers/${server.id}`), 200);
    });

    it('403 is answered before the body is read (no 413/415 for a key lacking the scope)', async () => {
      const reader = await freshClient(suite.served, ['servers:read']);
      expectError(await reader.post('/servers', 'x', { raw: true, headers: { 'content-type': 'text/plain' } }), 403, 'FORBIDDEN', {
        required_scope: 'servers:write',
      });
    });
  });
});

describe.each(ADAPTERS)('custom authenticate ($name)', (adapter) => {
  const authenticate = (request: Request): Principal | null => {
    const account = request.headers.get('x-account');
    if (account === null) return null;
    const scopes = request.headers.get('x-scopes');
    return { account, tier: 'enterprise', scopes: scopes === null ? null : (scopes.split(',') as Scope[]) };
  };
  const suite = serveForSuite(adapter, { authenticate });

  it('maps a request to an account; null is 401 with WWW-Authenticate: Bearer', async () => {
    const res = await send(suite.served.url, 'POST', '/servers', { body: httpServer({ name: 'custom' }), headers: { 'x-account': 'tenant-1' } });
    expectSuccess(res, 201);
    expectUnauthorized(await send(suite.served.url, 'GET', '/servers'));
    const list = await send(suite.served.url, 'GET', '/servers', { headers: { 'x-account': 'tenant-1' } });
    expect(expectSuccess(list, 200).map((s: { name: string }) => s.name)).toEqual(['custom']);
    const other = await send(suite.served.url, 'GET', '/servers', { headers: { 'x-account': 'tenant-2' } });
    expect(expectSuccess(other, 200)).toEqual([]);
  });

  it('replaces the key check: a valid API key alone is 401', async () => {
    const key = await createKey(suite.served, { account: 'tenant-1' });
    expectUnauthorized(await send(suite.served.url, 'GET', '/servers', {}, key));
  });

  it('its scopes are enforced', async () => {
    const res = await send(suite.served.url, 'POST', '/servers', {
      body: httpServer(),
      headers: { 'x-account': 'tenant-3', 'x-scopes': 'servers:read' },
    });
    expectError(res, 403, 'FORBIDDEN', { required_scope: 'servers:write' });
  });
});

describe.each(ADAPTERS)('account isolation ($name)', (adapter) => {
  const suite = serveForSuite(adapter);

  it("account B's GET/PUT/DELETE on account A's server is 404 SERVER_NOT_FOUND, never 403; A's server is untouched", async () => {
    const a = await freshClient(suite.served);
    const b = await freshClient(suite.served);
    const server = await createServer(a, httpServer({ name: 'private', timeout: 1234 }));
    const before = expectSuccess(await a.get(`/servers/${server.id}`), 200);
    const notFound = { server_id: server.id };
    expectError(await b.get(`/servers/${server.id}`), 404, 'SERVER_NOT_FOUND', notFound);
    expectError(await b.put(`/servers/${server.id}`, { timeout: 99 }), 404, 'SERVER_NOT_FOUND', notFound);
    expectError(await b.put(`/servers/${server.id}`, { timeout: 0 }), 404, 'SERVER_NOT_FOUND', notFound);
    expectError(await b.delete(`/servers/${server.id}`), 404, 'SERVER_NOT_FOUND', notFound);
    expect(expectSuccess(await a.get(`/servers/${server.id}`), 200)).toEqual(before);
  });

  it("B's answers for A's server are the same as for an id that does not exist", async () => {
    const a = await freshClient(suite.served);
    const b = await freshClient(suite.served);
    const server = await createServer(a);
    const mine = await b.get(`/servers/${server.id}`);
    const none = await b.get(`/servers/${UNKNOWN_SERVER_ID}`);
    expect(mine.status).toBe(none.status);
    expect(mine.body.error.code).toBe(none.body.error.code);
    expect(mine.body.error.message).toBe(none.body.error.message);
  });

  it("B's list never shows A's servers, with or without filters", async () => {
    const a = await freshClient(suite.served);
    const b = await freshClient(suite.served);
    await createServer(a);
    await createServer(a);
    const own = await createServer(b);
    for (const query of ['', '?type=http', '?health=unknown', '?type=http&health=unknown', '?limit=100']) {
      const res = await b.get(`/servers${query}`);
      expect(expectSuccess(res, 200).map((s: { id: string }) => s.id)).toEqual([own.id]);
      expect(res.body.pagination.total).toBe(1);
    }
    expect(await total(a)).toBe(2);
  });

  it("B may use a name A uses, and deleting B's does not touch A's", async () => {
    const a = await freshClient(suite.served);
    const b = await freshClient(suite.served);
    const sa = await createServer(a, httpServer({ name: 'same' }));
    const sb = await createServer(b, httpServer({ name: 'same' }));
    expectSuccess(await b.delete(`/servers/${sb.id}`), 200);
    expect(expectSuccess(await a.get(`/servers/${sa.id}`), 200).name).toBe('same');
    expectSuccess(await b.put(`/servers/${(await createServer(b)).id}`, { name: 'same' }), 200);
  });
});
