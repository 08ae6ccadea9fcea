import { createFleet } from '@mcp-fleet/core';
import { rateLimitStoreContract } from '@mcp-fleet/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropSchemas, notingPool, sql, uniqueSchema, withoutPostgres } from '../../../test/support/postgres.js';
import { createPostgresStore } from './index.js';

const skip = withoutPostgres('PostgresRateLimitStore');
const connectionString = DATABASE_URL as string;
const schema = uniqueSchema('ratelimit');

afterAll(async () => {
  if (!skip) await dropSchemas(schema);
});

describe.skipIf(skip)('PostgresRateLimitStore on a real PostgreSQL', () => {
  // Counter keys are unique to each case; every store of the file shares the schema, as processes would.
  rateLimitStoreContract('PostgresRateLimitStore', async () => {
    const store = await createPostgresStore({ connectionString, schema, sweepIntervalMs: 0 });
    return { consume: (counters, expiresAt, cost) => store.rateLimits.consume(counters, expiresAt, cost), close: store.close };
  });

  it('two stores (two pools) admit exactly the limit between them; a refusal writes no row', async () => {
    const stores = [await createPostgresStore({ connectionString, schema, sweepIntervalMs: 0 }), await createPostgresStore({ connectionString, schema, sweepIntervalMs: 0 })];
    const expiresAt = Date.now() + 60_000;
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => (stores[i % 2] as (typeof stores)[number]).rateLimits.consume([{ key: 'two:op', limit: 20 }, { key: 'two:tier', limit: 1000 }], expiresAt)),
    );
    expect(results.filter((r) => r.allowed)).toHaveLength(20);
    expect(await stores[0]?.rateLimits.consume([{ key: 'two:absent', limit: 0 }, { key: 'two:fresh', limit: 5 }], expiresAt)).toEqual({ allowed: false, counts: [0, 0] });
    expect(await sql(`SELECT key, count FROM "${schema}".counters WHERE key LIKE 'two:%' ORDER BY key`)).toEqual([
      { key: 'two:op', count: '20' },
      { key: 'two:tier', count: '20' },
    ]);
    for (const store of stores) await store.close();
  });

  it('sweep deletes expired counters only', async () => {
    const store = await createPostgresStore({ connectionString, schema, sweepIntervalMs: 0 });
    await store.rateLimits.consume([{ key: 'sweep:short', limit: 5 }], Date.now() + 50);
    await store.rateLimits.consume([{ key: 'sweep:long', limit: 5 }], Date.now() + 60_000);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await store.sweep()).toBeGreaterThanOrEqual(1);
    expect((await sql<{ key: string }>(`SELECT key FROM "${schema}".counters WHERE key LIKE 'sweep:%'`)).map((r) => r.key)).toEqual(['sweep:long']);
    await store.close();
  });

  it('a record read and a decision asked for in the same turn are one statement, each answered as if alone; a failed decision fails only itself', async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const store = await createPostgresStore({ pool, schema, sweepIntervalMs: 0 });
    await store.records.set('pair:one', { n: 1 });
    const expiresAt = Date.now() + 60_000;
    sent.length = 0;
    const [read, admitted] = await Promise.all([store.records.get('pair:one'), store.rateLimits.consume([{ key: 'pair:op', limit: 1 }], expiresAt)]);
    expect(read).toEqual({ n: 1 });
    expect(admitted).toEqual({ allowed: true, counts: [1] });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/\.consume\(.*FROM .*\.records r/s);
    // A refusal still answers the read; an absent record reads as undefined.
    sent.length = 0;
    const [absent, refused] = await Promise.all([store.records.get('pair:absent'), store.rateLimits.consume([{ key: 'pair:op', limit: 1 }], expiresAt)]);
    expect(absent).toBeUndefined();
    expect(refused).toEqual({ allowed: false, counts: [1] });
    expect(sent).toHaveLength(1);
    // Three reads and two decisions of one turn (requests answered together): two pairs, the n-th read with the n-th
    // decision, and the read left over alone; every answer its own.
    sent.length = 0;
    await store.records.set('pair:two', 'two');
    sent.length = 0;
    const five = await Promise.all([
      store.records.get('pair:one'),
      store.records.get('pair:two'),
      store.records.get('pair:absent'),
      store.rateLimits.consume([{ key: 'pair:a', limit: 5 }], expiresAt),
      store.rateLimits.consume([{ key: 'pair:b', limit: 5 }], expiresAt, 2),
    ]);
    expect(five).toEqual([{ n: 1 }, 'two', undefined, { allowed: true, counts: [1] }, { allowed: true, counts: [2] }]);
    expect(sent).toHaveLength(3);
    expect(sent.filter((text) => /\.consume\(.*FROM .*\.records r/s.test(text))).toHaveLength(2);
    // A decision that fails (a cost PostgreSQL's bigint cannot hold, refused by the server) fails only itself: the
    // read is sent again alone and answered (a limiter that fails open then admits the request).
    sent.length = 0;
    const failed = await Promise.allSettled([store.records.get('pair:one'), store.rateLimits.consume([{ key: 'pair:c', limit: 5 }], expiresAt, Number.MAX_VALUE)]);
    expect(failed[0]).toEqual({ status: 'fulfilled', value: { n: 1 } });
    expect(String((failed[1] as PromiseRejectedResult).reason)).toMatch(/a key read and a rate-limit decision failed/);
    expect(sent).toHaveLength(2);
    await store.close();
    await pool.end();
  });

  it("the handler's key read and its admission go out as one statement: an authenticated, limited GET of a server is 2", async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const store = await createPostgresStore({ pool, schema, sweepIntervalMs: 0 });
    const fleet = createFleet({ store, webhooks: false, monitor: false, rateLimit: { tiers: { pro: 1000 }, operations: { 'servers.get': 1000 } } });
    await fleet.ready();
    const { secret } = (await fleet.keys.create({ account: 'pair-acct', tier: 'pro' }))._unsafeUnwrap();
    const made = (await fleet.servers.create('pair-acct', { name: 'pair', type: 'http', endpoint: 'https://mcp.example.com/mcp' }))._unsafeUnwrap();
    const get = () => fleet.handle(new Request(`http://fleet.test/v1/servers/${made.id}`, { headers: { authorization: `Bearer ${secret}` } }));
    // The first request verifies the key (the principal is not known yet); from the second on, both go together.
    expect((await get()).status).toBe(200);
    sent.length = 0;
    const response = await get();
    expect(response.status).toBe(200);
    expect(response.headers.get('x-ratelimit-remaining')).toBe('998');
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatch(/\.consume\(.*FROM .*\.records r/s);
    await fleet.close();
    await store.close();
    await pool.end();
  });
});
