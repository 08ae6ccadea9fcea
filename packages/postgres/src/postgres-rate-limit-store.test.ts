import { rateLimitStoreContract } from '@mcp-fleet/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropSchemas, sql, uniqueSchema, withoutPostgres } from '../../../test/support/postgres.js';
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
});
