import { createFleet, createMemoryStore, type Fleet, type FleetStore } from '@mcp-fleet/core';
import { createPostgresStore } from '@mcp-fleet/postgres';
import { createRedisStore } from '@mcp-fleet/redis';
import { afterEach, describe, expect, it } from 'vitest';
import { startV2ToolServer, type ToolServer } from '../packages/core/src/mcp/fixtures/tool-servers.js';
import { DATABASE_URL, dropSchemas, uniqueSchema, withoutPostgres } from './support/postgres.js';
import { deleteKeys, REDIS_URL, uniquePrefix, withoutRedis } from './support/redis.js';

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Two stores over one backend: what two processes would open. */
type Backend = { name: string; skip: boolean; open(): Promise<{ stores: [FleetStore, FleetStore]; cleanup(): Promise<void> }> };

const BACKENDS: Backend[] = [
  {
    name: 'one memory store',
    skip: false,
    async open() {
      const store = createMemoryStore();
      return { stores: [store, store], cleanup: () => store.close() };
    },
  },
  {
    name: 'Redis',
    skip: withoutRedis('the shared breaker on Redis'),
    async open() {
      const keyPrefix = uniquePrefix('breaker');
      const stores: [FleetStore, FleetStore] = [await createRedisStore({ url: REDIS_URL as string, keyPrefix }), await createRedisStore({ url: REDIS_URL as string, keyPrefix })];
      return {
        stores,
        cleanup: async () => {
          await Promise.all(stores.map((store) => store.close()));
          await deleteKeys(keyPrefix);
        },
      };
    },
  },
  {
    name: 'PostgreSQL',
    skip: withoutPostgres('the shared breaker on PostgreSQL'),
    async open() {
      const schema = uniqueSchema('breaker');
      const first = await createPostgresStore({ connectionString: DATABASE_URL as string, schema, sweepIntervalMs: 0 });
      const second = await createPostgresStore({ connectionString: DATABASE_URL as string, schema, sweepIntervalMs: 0 });
      return {
        stores: [first, second],
        cleanup: async () => {
          await first.close();
          await second.close();
          await dropSchemas(schema);
        },
      };
    },
  },
];

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.each(BACKENDS)('the circuit breaker shared by two fleets over $name', (backend) => {
  it.skipIf(backend.skip)('one fleet opens it and the other fails fast without reaching the server; one learns the recovery, the other stops failing fast', async () => {
    const upstream: ToolServer = await startV2ToolServer({ failFirstCalls: 2 });
    cleanups.push(() => upstream.close());
    const { stores, cleanup } = await backend.open();
    cleanups.push(cleanup);
    const fleets: Fleet[] = stores.map((store) =>
      createFleet({ store, rateLimit: false, webhooks: false, allowPrivateNetworks: true, health: { announceAfter: 1, breaker: { failures: 2, backoffMs: 2500, maxBackoffMs: 5000 } } }),
    );
    cleanups.push(async () => {
      for (const fleet of fleets) await fleet.close();
    });
    const [one, two] = fleets as [Fleet, Fleet];
    const server = (await one.servers.create('acme', { name: 'shared', type: 'http', endpoint: upstream.url }))._unsafeUnwrap();
    const callThrough = (fleet: Fleet) => fleet.tools.call('acme', server.id, 'echo', { text: 'hi' });
    const calls = () => upstream.methods.filter((method) => method === 'tools/call').length;

    // The second fleet reads the closed breaker once before its first call (a closed breaker is read again after 1 s).
    expect((await two.servers.healthHistory('acme', server.id))._unsafeUnwrap().breaker.state).toBe('closed');
    for (let i = 0; i < 2; i++) expect((await callThrough(one))._unsafeUnwrap().status).toBe('error');
    expect(calls()).toBe(2);
    await wait(1100);

    // The other fleet has not failed once, yet fails fast: the breaker is the store's.
    const seen = upstream.methods.length;
    const refused = (await callThrough(two))._unsafeUnwrapErr();
    expect(refused.code).toBe('UPSTREAM_UNAVAILABLE');
    expect(refused.details).toMatchObject({ server_id: server.id });
    expect(upstream.methods.length).toBe(seen);
    const retryAt = Date.parse((refused.details as { retry_at: string }).retry_at);

    // After the backoff, the first fleet probes the server (a health check) and learns it is back...
    await wait(retryAt - Date.now() + 50);
    expect((await one.servers.health('acme', server.id))._unsafeUnwrap()).toMatchObject({
      // It answers again; the two failed calls of the last 15 minutes still make it degraded.
      status: 'degraded',
      state_reason: 'error_rate',
      breaker: { state: 'closed', consecutive_failures: 0 },
    });
    const probes = async () => (await two.servers.healthHistory('acme', server.id))._unsafeUnwrap().buckets.reduce((sum, bucket) => sum + bucket.probes, 0);
    const probed = await probes();
    // ...and the second, which saw it open, calls again at once, without a half-open probe of its own.
    expect((await callThrough(two))._unsafeUnwrap().status).toBe('success');
    expect(await probes()).toBe(probed);
    expect(calls()).toBe(3);
  });
});
