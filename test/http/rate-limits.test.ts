import { createMemoryStore, type RateLimitStore } from '@mcp-fleet/core';
import { describe, expect, it } from 'vitest';
import { ADAPTERS } from '../support/adapters.js';
import { api, createKey, expectError, freshClient, httpServer, serveForSuite, UNKNOWN_SERVER_ID } from '../support/http-client.js';

const MINUTE = 60_000;
/**
 * A fake clock: each test starts in a window of its own, a few seconds into it. It starts at the real time and only
 * moves ahead: a PostgreSQL store ends a window on the database's clock, which must not be past the fake one.
 */
let clock = Math.floor(Date.now() / MINUTE) * MINUTE + 5_000;
const nextWindow = () => {
  clock = (Math.floor(clock / MINUTE) + 1) * MINUTE + 5_000;
  return (Math.floor(clock / MINUTE) + 1) * 60; // this window's reset, Unix seconds
};
const now = () => clock;

function limits(res: { headers: Headers }) {
  return {
    limit: Number(res.headers.get('x-ratelimit-limit')),
    remaining: Number(res.headers.get('x-ratelimit-remaining')),
    reset: Number(res.headers.get('x-ratelimit-reset')),
  };
}

describe.each(ADAPTERS)('rate limits through $name', (adapter) => {
  describe('with the contract defaults', () => {
    const suite = serveForSuite(adapter, { now, rateLimit: {} });

    it('carries the binding limit on every authenticated answer, exact across a window', async () => {
      const reset = nextWindow();
      const client = api(suite.served, await createKey(suite.served, { account: 'hdr-free', tier: 'free' }));
      // list: operation 100, tier free 60 → the tier binds (fewest remaining).
      for (let i = 1; i <= 3; i++) {
        const res = await client.get('/servers');
        expect(res.status).toBe(200);
        expect(limits(res)).toEqual({ limit: 60, remaining: 60 - i, reset });
      }
      // A 404, a 405 and a 403 are authenticated answers too: counted, with headers.
      expect(limits(await client.get(`/servers/${UNKNOWN_SERVER_ID}`))).toEqual({ limit: 60, remaining: 56, reset });
      expect(limits(await client.request('PATCH', '/servers'))).toEqual({ limit: 60, remaining: 55, reset });
      expect(limits(await client.get('/nowhere'))).toEqual({ limit: 60, remaining: 54, reset });
    });

    it('refuses the 11th create in a minute with 429 while a list still passes, and the refusal consumes nothing', async () => {
      const reset = nextWindow();
      const client = await freshClient(suite.served);
      for (let i = 0; i < 10; i++) expect((await client.post('/servers', httpServer())).status).toBe(201);
      clock += 15_000;
      const refused = await client.post('/servers', httpServer());
      expectError(refused, 429, 'RATE_LIMITED', { limit: 10, reset, scope: 'operation' });
      expect(refused.headers.get('retry-after')).toBe(String(reset - Math.floor(clock / 1000)));
      expect(limits(refused)).toEqual({ limit: 10, remaining: 0, reset });
      const list = await client.get('/servers');
      expect(list.status).toBe(200);
      expect(list.body.pagination.total).toBe(10);
      expect(limits(list)).toEqual({ limit: 100, remaining: 99, reset });
    });

    it('counts accounts apart', async () => {
      nextWindow();
      const a = await freshClient(suite.served);
      const b = await freshClient(suite.served);
      for (let i = 0; i < 10; i++) await a.post('/servers', httpServer());
      expect((await a.post('/servers', httpServer())).status).toBe(429);
      const fromB = await b.post('/servers', httpServer());
      expect(fromB.status).toBe(201);
      expect(limits(fromB).remaining).toBe(9);
    });

    it('opens a new window when the clock passes the minute', async () => {
      const reset = nextWindow();
      const client = await freshClient(suite.served);
      for (let i = 0; i < 10; i++) await client.post('/servers', httpServer());
      expect((await client.post('/servers', httpServer())).status).toBe(429);
      clock = reset * 1000; // the first instant of the next window
      const again = await client.post('/servers', httpServer());
      expect(again.status).toBe(201);
      expect(limits(again)).toEqual({ limit: 10, remaining: 9, reset: reset + 60 });
    });

    it('answers 429 to failed keys of an address that spent its 401 budget, until the window ends; a valid key still passes', async () => {
      const reset = nextWindow();
      const valid = await createKey(suite.served, { account: 'guessed' });
      const anonymous = api(suite.served, null);
      for (let i = 0; i < 25; i++) {
        const wrong = await anonymous.get('/servers', { key: `mcpf_wrong${i}` });
        expect(wrong.status).toBe(i < 20 ? 401 : 429);
      }
      const blocked = await anonymous.get('/servers', { key: 'mcpf_wrong-again' });
      expectError(blocked, 429, 'RATE_LIMITED', { limit: 20, reset, scope: 'address' });
      expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
      // The key is checked first: a valid key is never refused for its address, and counts against its account alone.
      const passed = await anonymous.get('/servers', { key: valid });
      expect(passed.status).toBe(200);
      expect(limits(passed)).toEqual({ limit: 100, remaining: 99, reset });
      expect((await anonymous.get('/servers', { key: 'mcpf_wrong-once-more' })).status).toBe(429);
      clock = reset * 1000;
      expect((await anonymous.get('/servers', { key: 'mcpf_wrong-next-window' })).status).toBe(401);
    });

    it('does not count keyless requests: CORS preflights, /.well-known lookups (below /mcp too) and keyless calls leave the budget whole', async () => {
      nextWindow();
      const valid = await createKey(suite.served, { account: 'behind-nat' });
      const anonymous = api(suite.served, null);
      const preflight = { headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' } };
      for (let i = 0; i < 5; i++) {
        // OPTIONS without a key: 204 with the methods of the path, and no CORS headers (CORS stays off).
        const options = await anonymous.request('OPTIONS', i % 2 === 0 ? '/mcp' : '/servers', preflight);
        expect(options.status).toBe(204);
        expect(options.headers.get('allow')).toBe(i % 2 === 0 ? 'GET, POST, DELETE' : 'GET, POST');
        expect(options.headers.get('x-request-id')).toMatch(/^req_/);
        expect([...options.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
        // Discovery lookups as mcp-remote sends them at every start: 404, not a 401 to count.
        for (const path of ['/mcp/.well-known/openid-configuration', '/.well-known/oauth-protected-resource/mcp', '/servers/srv_x/mcp/.well-known/oauth-authorization-server']) {
          expectError(await anonymous.get(path), 404, 'NOT_FOUND', { path });
        }
        // A keyless MCP request or API call: 401 with its challenge, but nothing was guessed, so nothing counts.
        const keyless = await anonymous.post('/mcp', { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} });
        expectError(keyless, 401, 'UNAUTHORIZED', {});
        expect(keyless.headers.get('www-authenticate')).toBe('Bearer');
        expect((await anonymous.get('/servers')).status).toBe(401);
      }
      // 30 keyless requests later, a valid key answers, and the address still has its whole budget for wrong keys.
      expect((await anonymous.get('/servers', { key: valid })).status).toBe(200);
      for (let i = 0; i < 20; i++) expect((await anonymous.get('/servers', { key: `mcpf_typo${i}` })).status).toBe(401);
      expect((await anonymous.get('/servers', { key: 'mcpf_typo-21' })).status).toBe(429);
    });
    it('does not count discovery lookups that carry a credential: 30 /.well-known lookups with a stale token, then a valid key passes', async () => {
      nextWindow();
      const valid = await createKey(suite.served, { account: 'stale-token' });
      const anonymous = api(suite.served, null);
      // An agent restarting with the expired token it still holds sends it with its discovery lookups.
      const paths = ['/mcp/.well-known/openid-configuration', '/mcp/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource/mcp'];
      for (let i = 0; i < 30; i++) {
        const path = paths[i % paths.length] as string;
        expectError(await anonymous.get(path, { key: `stale-token-${i}` }), 404, 'NOT_FOUND', { path });
      }
      expect((await anonymous.get('/servers', { key: valid })).status).toBe(200);
      // The address's whole budget is left for wrong keys.
      for (let i = 0; i < 20; i++) expect((await anonymous.get('/servers', { key: `mcpf_typo${i}` })).status).toBe(401);
      expect((await anonymous.get('/servers', { key: 'mcpf_typo-21' })).status).toBe(429);
    });
  });

  describe('when the tier is smaller than the operation', () => {
    const suite = serveForSuite(adapter, { now, rateLimit: { tiers: { free: 5, pro: 15 }, accounts: { 'big-co': 3 } } });

    it('a request refused by one limit consumes none: the tier does not count the refused create', async () => {
      const reset = nextWindow();
      const client = await freshClient(suite.served); // pro: 15
      for (let i = 0; i < 10; i++) expect((await client.post('/servers', httpServer())).status).toBe(201);
      for (let i = 0; i < 3; i++) expect((await client.post('/servers', httpServer())).status).toBe(429);
      // 10 creates + this list = 11 of 15: the three refused creates left the tier alone.
      expect(limits(await client.get('/servers'))).toEqual({ limit: 15, remaining: 4, reset });
    });

    it('binds the tier first: the 6th list of a free account is 429 with scope tier', async () => {
      const reset = nextWindow();
      const client = api(suite.served, await createKey(suite.served, { account: 'small', tier: 'free' }));
      for (let i = 0; i < 5; i++) expect((await client.get('/servers')).status).toBe(200);
      expectError(await client.get('/servers'), 429, 'RATE_LIMITED', { limit: 5, reset, scope: 'tier' });
    });

    it('uses an account-specific limit instead of the tier one (enterprise contracts)', async () => {
      nextWindow();
      const client = api(suite.served, await createKey(suite.served, { account: 'big-co', tier: 'enterprise' }));
      for (let i = 0; i < 3; i++) expect(limits(await client.get('/servers')).limit).toBe(3);
      expect((await client.get('/servers')).body.error.details.scope).toBe('tier');
    });
  });

  describe('on a tie of remaining requests', () => {
    const suite = serveForSuite(adapter, { now, rateLimit: { tiers: { pro: 20 }, operations: { 'servers.list': 10 } } });

    it('reports the smaller limit', async () => {
      nextWindow();
      const client = await freshClient(suite.served);
      for (let i = 0; i < 10; i++) await client.get(`/servers/${UNKNOWN_SERVER_ID}`);
      // tier 20 − 11 = 9 and list 10 − 1 = 9: the smaller limit binds.
      expect(limits(await client.get('/servers'))).toMatchObject({ limit: 10, remaining: 9 });
    });
  });

  describe('when the counter store fails', () => {
    const broken: RateLimitStore = { consume: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379')) };
    const closed = serveForSuite(adapter, { now, store: { ...createMemoryStore({ now }), rateLimits: broken }, rateLimit: {}, onError: () => {} });
    const open = serveForSuite(adapter, { now, store: { ...createMemoryStore({ now }), rateLimits: broken }, rateLimit: { failOpen: true } });

    it('fails closed by default: 503 STORAGE_UNAVAILABLE, no internals', async () => {
      const client = api(closed.served, await createKey(closed.served, { account: 'down' }));
      const res = await client.get('/servers');
      expectError(res, 503, 'STORAGE_UNAVAILABLE', {});
      expect(res.text).not.toContain('ECONNREFUSED');
    });

    it('admits without rate-limit headers when told to fail open', async () => {
      const client = api(open.served, await createKey(open.served, { account: 'down' }));
      const res = await client.get('/servers');
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    });
  });
});
