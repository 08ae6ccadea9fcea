import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FleetStore } from '@mcp-fleet/core';
import { createSqliteStore, SqliteIndexStore } from '@mcp-fleet/sqlite';
import { createRedisStore } from '@mcp-fleet/redis';
import { afterAll, describe, expect, it } from 'vitest';
import { ADAPTERS, type Served, serveFleet } from '../support/adapters.js';
import { api, createKey, expectError, expectSuccess, freshClient, httpServer, serveForSuite, total } from '../support/http-client.js';
import { deleteKeys, REDIS_URL, uniquePrefix, withoutRedis } from '../support/redis.js';

const HOOK = { url: 'https://hooks.example.com/in', events: ['server.created'] };

describe.each(ADAPTERS)('quotas ($name)', (adapter) => {
  // No worker: the deliveries a published event creates stay queued, where the test counts them.
  const suite = serveForSuite(adapter, { quotas: { serversPerAccount: 3, webhooksPerAccount: 2 }, webhooks: { worker: false } });

  it('the server past the quota is 409 QUOTA_EXCEEDED; nothing is written and no event is published', async () => {
    const client = await freshClient(suite.served);
    const hook = expectSuccess(await client.post('/webhooks', HOOK), 201);
    const told: string[] = [];
    const stop = suite.served.fleet.events.on('server.created', ({ account, server }) => {
      if (account === client.account) told.push(server.id);
    });
    try {
      for (let i = 0; i < 3; i++) expectSuccess(await client.post('/servers', httpServer()), 201);
      const refused = await client.post('/servers', httpServer({ name: 'one-too-many' }));
      expectError(refused, 409, 'QUOTA_EXCEEDED', { resource: 'servers', limit: 3 });
      expect(refused.body.error.message).toMatch(/quotas\.serversPerAccount/);
      expect(await total(client)).toBe(3);
      expect((await client.get('/servers?limit=100')).body.data.map((s: { name: string }) => s.name)).not.toContain('one-too-many');
      expect(told).toHaveLength(3);
      expect((await client.get(`/webhooks/${hook.id}/deliveries`)).body.pagination.total).toBe(3);
      // The name of the refused server was never claimed: once there is room, it is free.
      const first = (await client.get('/servers?limit=1')).body.data[0];
      expectSuccess(await client.delete(`/servers/${first.id}`), 200);
      expectSuccess(await client.post('/servers', httpServer({ name: 'one-too-many' })), 201);
    } finally {
      stop();
    }
  });

  it('of 12 concurrent creates on an account with room for 3, exactly 3 land', async () => {
    const client = await freshClient(suite.served);
    const answers = await Promise.all(Array.from({ length: 12 }, () => client.post('/servers', httpServer())));
    expect(answers.filter((r) => r.status === 201)).toHaveLength(3);
    for (const r of answers.filter((a) => a.status !== 201)) expectError(r, 409, 'QUOTA_EXCEEDED', { resource: 'servers', limit: 3 });
    expect(await total(client)).toBe(3);
  });

  it('the webhook past the quota is 409 QUOTA_EXCEEDED; a deleted one makes room', async () => {
    const client = await freshClient(suite.served);
    const answers = await Promise.all(Array.from({ length: 5 }, () => client.post('/webhooks', HOOK)));
    const created = answers.filter((r) => r.status === 201).map((r) => r.body.data);
    expect(created).toHaveLength(2);
    for (const r of answers.filter((a) => a.status !== 201)) expectError(r, 409, 'QUOTA_EXCEEDED', { resource: 'webhooks', limit: 2 });
    expect((await client.get('/webhooks')).body.pagination.total).toBe(2);
    expectSuccess(await client.delete(`/webhooks/${created[0].id}`), 200);
    expectSuccess(await client.post('/webhooks', HOOK), 201);
    expectError(await client.post('/webhooks', HOOK), 409, 'QUOTA_EXCEEDED', { resource: 'webhooks', limit: 2 });
  });

  it('quotas are per account', async () => {
    const one = await freshClient(suite.served);
    const two = await freshClient(suite.served);
    for (let i = 0; i < 3; i++) expectSuccess(await one.post('/servers', httpServer()), 201);
    expectSuccess(await two.post('/servers', httpServer()), 201);
  });
});

/** Two fleets, each with its own connection to one store, as two processes sharing storage are. */
describe.each(ADAPTERS)('quotas across fleets sharing storage ($name)', (adapter) => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-quotas-'));
  const opened: { close(): Promise<void> }[] = [];
  afterAll(async () => {
    for (const c of opened.splice(0).reverse()) await c.close();
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * Creates past the quotas through both fleets, all at once (`parallel`) or one after another alternating fleets.
   * SQLite goes one after another here: connections of one process waiting for the file's write lock sleep on libuv's
   * 4 threads and starve each other (the race itself is held by the IndexStore contract, two connections on one file).
   */
  async function race(stores: FleetStore[], parallel: boolean) {
    const all = <T>(n: number, make: (i: number) => Promise<T>): Promise<T[]> =>
      parallel
        ? Promise.all(Array.from({ length: n }, (_, i) => make(i)))
        : Array.from({ length: n }, (_, i) => i).reduce<Promise<T[]>>(async (done, i) => [...(await done), await make(i)], Promise.resolve([]));
    const served: Served[] = [];
    for (const store of stores) {
      const s = await serveFleet(adapter, { store, quotas: { serversPerAccount: 5, webhooksPerAccount: 3 }, webhooks: { worker: false } });
      opened.push(s);
      served.push(s);
    }
    const account = `acct-shared-${Math.random().toString(36).slice(2, 8)}`;
    const clients = await Promise.all(served.map(async (s) => api(s, await createKey(s, { account }))));
    const servers = await all(16, (i) => clients[i % clients.length]!.post('/servers', httpServer()));
    expect(servers.filter((r) => r.status === 201)).toHaveLength(5);
    for (const r of servers.filter((a) => a.status !== 201)) expectError(r, 409, 'QUOTA_EXCEEDED', { resource: 'servers', limit: 5 });
    for (const client of clients) expect(await total(client)).toBe(5);
    const hooks = await all(10, (i) => clients[i % clients.length]!.post('/webhooks', HOOK));
    expect(hooks.filter((r) => r.status === 201)).toHaveLength(3);
    for (const client of clients) expect((await client.get('/webhooks')).body.pagination.total).toBe(3);
  }

  it('on one SQLite file, one create after another through either fleet: exactly the quota lands', async () => {
    const path = join(dir, `${adapter.name}.sqlite`);
    const one = await createSqliteStore({ path });
    opened.push(one);
    // A second index connection to the file (the records' connection is shared): more than 3 connections racing
    // in one process would block libuv's 4 threads (see sqlite-index-store.test.ts).
    const index = await SqliteIndexStore.open({ path });
    opened.push(index);
    await race([one, { ...one, index }], false);
  });

  it.skipIf(withoutRedis('quotas on Redis'))('on one Redis, creates racing through both fleets: exactly the quota lands', async () => {
    const keyPrefix = uniquePrefix('quotas');
    opened.push({ close: () => deleteKeys(keyPrefix) });
    const one = await createRedisStore({ url: REDIS_URL as string, keyPrefix });
    opened.push(one);
    const two = await createRedisStore({ url: REDIS_URL as string, keyPrefix });
    opened.push(two);
    await race([one, two], true);
  });
});
