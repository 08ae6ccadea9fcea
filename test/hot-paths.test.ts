import { randomBytes } from 'node:crypto';
import { createFleet, createMemoryStorage, createMemoryStore, type Fleet } from '@mcp-fleet/core';
import { createRedisStore, type RedisStore } from '@mcp-fleet/redis';
import Keyv from 'keyv';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ADAPTERS, type Served } from './support/adapters.js';
import { oneWindow } from './support/clock.js';
import { api, expectError, expectSuccess, httpServer } from './support/http-client.js';
import { killLeftovers, removeTempDirs, startServer, tempDir } from './support/reference-server.js';
import { deleteKeys, REDIS_URL, removeKeysAddedDuring, uniquePrefix, withDatabase, withoutRedis } from './support/redis.js';

/**
 * docs/performance.md: what the fast read path must not weaken. Records are read without decoding them again (the
 * fleet's memory keeps objects; any other Keyv has a cache keyed by the stored text) and the handler asks for the
 * key and the rate-limit decision together; still a revoked key is refused on the next request by every fleet that
 * shares the storage, a record handed out is the caller's own copy, and a storage outage is a 503.
 */

const LIMITS = { tiers: { pro: 1e6 }, operations: { 'servers.list': 1e6, 'servers.get': 1e6 } };

async function serve(adapter: (typeof ADAPTERS)[number], fleet: Fleet): Promise<Served> {
  const { origin, server } = await adapter.serve(fleet, '');
  return {
    fleet,
    origin,
    url: `${origin}${fleet.prefix}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await fleet.close();
    },
  };
}

/** Two fleets on one storage, each behind the adapter: a key used at both, revoked at one, refused at both. */
async function revocationAcross(a: Served, b: Served): Promise<void> {
  const account = `acct${randomBytes(4).toString('hex')}`;
  const created = (await a.fleet.keys.create({ account, tier: 'pro' }))._unsafeUnwrap();
  const atA = api(a, created.secret);
  const atB = api(b, created.secret);
  const server = expectSuccess(await atA.post('/servers', httpServer()), 201);
  // Warm every cache and hint there is, in both.
  for (let i = 0; i < 3; i++) {
    expectSuccess(await atB.get('/servers'), 200);
    expectSuccess(await atB.get(`/servers/${server.id}`), 200);
    expectSuccess(await atA.get(`/servers/${server.id}`), 200);
  }
  (await a.fleet.keys.revoke(created.key.id))._unsafeUnwrap();
  expectError(await atB.get(`/servers/${server.id}`), 401, 'UNAUTHORIZED');
  expectError(await atB.get('/servers'), 401, 'UNAUTHORIZED');
  expectError(await atA.get('/servers'), 401, 'UNAUTHORIZED');
}

/** A server read through the fleet, changed by the caller, read again: what is stored did not change. */
async function independentCopies(fleet: Fleet): Promise<void> {
  const created = (await fleet.servers.create('copies', { name: `copy-${randomBytes(4).toString('hex')}`, type: 'http', endpoint: 'https://a.example.com/mcp' }))._unsafeUnwrap();
  const original = structuredClone(created);
  const read = (await fleet.servers.get('copies', created.id))._unsafeUnwrap();
  (read as { name: string }).name = 'mutated';
  (read as unknown as { config: { endpoint: string } }).config = { endpoint: 'https://evil.example.com' };
  created.name = 'mutated too';
  const listed = (await fleet.servers.list('copies', {}))._unsafeUnwrap();
  listed.data.forEach((s) => Object.assign(s, { name: 'listed and mutated' }));
  const again = (await fleet.servers.get('copies', created.id))._unsafeUnwrap();
  expect(again).toEqual(original);
}

/**
 * Listings over the memory stores answer at once, each summary's JSON kept with its stored record: every change made
 * through any fleet on the storage shows on the next listing, a listing entry whose record is gone is repaired (the
 * slow path), and the text is the JSON of the envelope object, as `JSON.stringify` writes it.
 */
async function listingsFollowChanges(a: Served, b: Served, storage: Keyv): Promise<void> {
  const account = `acct${randomBytes(4).toString('hex')}`;
  const { secret } = (await a.fleet.keys.create({ account, tier: 'pro' }))._unsafeUnwrap();
  const atA = api(a, secret);
  const atB = api(b, secret);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(expectSuccess(await atA.post('/servers', httpServer({ name: `listed-${i}` })), 201).id);
  const first = await atB.get('/servers');
  expect(first.status).toBe(200);
  expect(JSON.stringify(JSON.parse(first.text))).toBe(first.text);
  expect(Object.keys(first.body)).toEqual(['success', 'data', 'pagination', 'meta']);
  expect(first.body.data.map((s: { name: string }) => s.name)).toEqual(['listed-0', 'listed-1', 'listed-2']);

  // Renamed through A, listed through B (and A): the new name and the new updated_at, at once.
  const renamed = expectSuccess(await atA.put(`/servers/${ids[1]}`, { name: 'renamed' }), 200);
  for (const at of [atB, atA]) {
    const listed = expectSuccess(await at.get('/servers'), 200);
    expect(listed[1]).toEqual({ id: ids[1], name: 'renamed', type: 'http', endpoint: renamed.endpoint, status: 'active', health: 'unknown', created_at: renamed.created_at, updated_at: renamed.updated_at });
  }

  // The record of ids[0] gone behind the fleet's back (a crash between two writes): left out, and the total repaired.
  await storage.delete(`mcp-fleet:server:${ids[0]}`);
  for (let i = 0; i < 2; i++) {
    const listed = await atB.get('/servers');
    expect(listed.body.data.map((s: { id: string }) => s.id)).toEqual([ids[1], ids[2]]);
    expect(listed.body.pagination).toEqual({ page: 1, limit: 50, total: 2, pages: 1 });
  }
  expectSuccess(await atA.delete(`/servers/${ids[2]}`), 200);
  expect(expectSuccess(await atB.get('/servers'), 200).map((s: { id: string }) => s.id)).toEqual([ids[1]]);
}

describe.each(ADAPTERS)('the fast read path keeps every guarantee, in one process ($name)', (adapter) => {
  const open: Served[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });

  it.each([
    ['the fleet’s object memory (createMemoryStorage)', () => createMemoryStorage()],
    ['a plain Keyv (decode cache)', () => new Keyv({ throwOnErrors: true })],
  ])('a key revoked through one fleet is refused at once by another on the same storage: %s', async (_what, storage) => {
    const shared = { store: createMemoryStore({ records: storage() }), rateLimit: LIMITS };
    const a = await serve(adapter, createFleet(shared));
    const b = await serve(adapter, createFleet(shared));
    open.push(a, b);
    await revocationAcross(a, b);
  });

  it.each([
    ['the fleet’s object memory (createMemoryStorage)', () => createMemoryStorage()],
    ['a plain Keyv (decode cache)', () => new Keyv({ throwOnErrors: true })],
  ])('listings show every change at once and repair entries whose record is gone: %s', async (_what, storage) => {
    const shared = { store: createMemoryStore({ records: storage() }), rateLimit: LIMITS };
    const a = await serve(adapter, createFleet(shared));
    const b = await serve(adapter, createFleet(shared));
    open.push(a, b);
    await listingsFollowChanges(a, b, shared.store.records);
  });

  it.each([
    ['the default storage', () => undefined],
    ['a plain Keyv (decode cache)', () => new Keyv({ throwOnErrors: true })],
  ])('records come back as independent copies: %s', async (_what, storage) => {
    const records = storage();
    const fleet = createFleet({ ...(records && { store: createMemoryStore({ records }) }), rateLimit: false });
    open.push(await serve(adapter, fleet));
    await independentCopies(fleet);
  });
});

describe.skipIf(withoutRedis('fast read path over Redis'))('the fast read path keeps every guarantee over Redis', () => {
  const prefix = uniquePrefix('hot-paths');
  const opened: RedisStore[] = [];
  const served: Served[] = [];
  afterAll(async () => {
    await Promise.all(served.map((s) => s.close()));
    await Promise.all(opened.map((s) => s.close()));
    await deleteKeys(prefix);
  });
  const fleetOnRedis = async (quiet = false) => {
    const stores = await createRedisStore({ url: REDIS_URL as string, keyPrefix: prefix });
    opened.push(stores);
    const options = quiet ? { webhooks: false as const, onError: () => {} } : {};
    return { stores, fleet: createFleet({ store: stores, rateLimit: LIMITS, ...options }) };
  };

  it.each(ADAPTERS)('a key revoked through one connection is refused at once through another ($name)', async (adapter) => {
    const [a, b] = await Promise.all([fleetOnRedis(), fleetOnRedis()]);
    const servedA = await serve(adapter, a.fleet);
    const servedB = await serve(adapter, b.fleet);
    served.push(servedA, servedB);
    await revocationAcross(servedA, servedB);
  });

  it('records come back as independent copies', async () => {
    await independentCopies((await fleetOnRedis()).fleet);
  });

  it('a valid key passes from an address that spent its 401 budget, asked together with its admission; failed keys from there are 429', async () => {
    const stores = await createRedisStore({ url: REDIS_URL as string, keyPrefix: `${prefix}gate:` });
    opened.push(stores);
    const fleet = createFleet({ store: stores, now: oneWindow(), webhooks: false, rateLimit: { unauthenticated: 1, tiers: { pro: 100 } } });
    const { secret } = (await fleet.keys.create({ account: 'gated', tier: 'pro' }))._unsafeUnwrap();
    const get = (key: string, clientAddress: string) =>
      fleet.handle(new Request('http://x/v1/servers', { headers: { authorization: `Bearer ${key}` } }), { clientAddress });
    // The key verifies once from a good address (this process now has a hint for it)...
    expect((await get(secret, '10.0.0.1')).headers.get('x-ratelimit-remaining')).toBe('99');
    // ...then another address spends its 401 budget: its next wrong key is 429, its right key passes every time.
    expect((await get(`mcpf_${'A'.repeat(40)}`, '10.0.0.2')).status).toBe(401);
    const refused = await get(`mcpf_${'B'.repeat(40)}`, '10.0.0.2');
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { details: { scope: string } } }).error.details.scope).toBe('address');
    for (let i = 0; i < 5; i++) expect((await get(secret, '10.0.0.2')).headers.get('x-ratelimit-remaining')).toBe(String(98 - i));
    // Each counted once against the account, none twice: 100 − 1 − 5 − this one.
    expect((await get(secret, '10.0.0.1')).headers.get('x-ratelimit-remaining')).toBe('93');
    await fleet.close();
  });

  it('a request to /mcp by a key verified before is counted once per message, not also asked for early', async () => {
    const stores = await createRedisStore({ url: REDIS_URL as string, keyPrefix: `${prefix}mcp-once:` });
    opened.push(stores);
    const fleet = createFleet({ store: stores, now: oneWindow(), webhooks: false, rateLimit: { tiers: { pro: 100 } } });
    const { secret } = (await fleet.keys.create({ account: 'mcp-once', tier: 'pro' }))._unsafeUnwrap();
    const authorization = `Bearer ${secret}`;
    const remaining = (res: Response) => res.headers.get('x-ratelimit-remaining');
    expect(remaining(await fleet.handle(new Request('http://x/v1/servers', { headers: { authorization } })))).toBe('99');
    const headers = { authorization, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const pings = JSON.stringify([1, 2].map((id) => ({ jsonrpc: '2.0', id, method: 'ping' })));
    const mcp = await fleet.handle(new Request('http://x/v1/mcp', { method: 'POST', headers, body: pings }));
    await mcp.text();
    expect(remaining(mcp)).toBe('97');
    expect(remaining(await fleet.handle(new Request('http://x/v1/servers', { headers: { authorization } })))).toBe('96');
    await fleet.close();
  });

  it.each(ADAPTERS)('with every cache warm, a storage outage is still a 503 ($name)', async (adapter) => {
    // Quiet: the expected 503s would be logged as the failures they are.
    const { stores, fleet } = await fleetOnRedis(true);
    const s = await serve(adapter, fleet);
    const created = (await fleet.keys.create({ account: 'outage', tier: 'pro' }))._unsafeUnwrap();
    const client = api(s, created.secret);
    const server = expectSuccess(await client.post('/servers', httpServer()), 201);
    for (let i = 0; i < 3; i++) expectSuccess(await client.get(`/servers/${server.id}`), 200);
    await stores.close();
    expectError(await client.get(`/servers/${server.id}`), 503, 'STORAGE_UNAVAILABLE');
    expectError(await client.get('/servers'), 503, 'STORAGE_UNAVAILABLE');
    await s.close();
  });
});

describe.skipIf(withoutRedis('revocation across processes'))('revocation across two reference servers on one Redis', () => {
  // Database 11: other process suites use 9 and 10.
  const store = REDIS_URL === undefined ? '' : withDatabase(REDIS_URL, 11);
  removeKeysAddedDuring(store);
  afterEach(async () => {
    await killLeftovers();
    await removeTempDirs();
  });

  it('a key revoked by a third process is refused by both servers on their next request', async () => {
    const secret = `revoke-${randomBytes(12).toString('hex')}`;
    const account = `revoke${randomBytes(4).toString('hex')}`;
    const env = { MCP_FLEET_STORE: store, MCP_FLEET_API_KEYS: `${account}:pro:${secret}` };
    const [a, b] = await Promise.all([startServer({ cwd: await tempDir(), env }), startServer({ cwd: await tempDir(), env })]);
    const get = (url: string) => fetch(`${url}/servers`, { headers: { authorization: `Bearer ${secret}` } }).then((res) => res.status);
    for (let i = 0; i < 3; i++) expect([await get(a.url), await get(b.url)]).toEqual([200, 200]);

    const stores = await createRedisStore({ url: store });
    try {
      const fleet = createFleet({ store: stores, rateLimit: false, webhooks: false });
      const [key] = (await fleet.keys.list(account))._unsafeUnwrap().data;
      (await fleet.keys.revoke(key!.id))._unsafeUnwrap();
      await fleet.close();
    } finally {
      await stores.close();
    }
    expect([await get(a.url), await get(b.url)]).toEqual([401, 401]);
    await Promise.all([a.stop('SIGTERM'), b.stop('SIGTERM')]);
  });
});
