import { createFleet, type IndexTransaction } from '@mcp-fleet/core';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropSchemas, notingPool, rawPool, sql, uniqueSchema, withoutPostgres } from '../../../test/support/postgres.js';
import { createPostgresStore, type PostgresStore } from './index.js';

/**
 * Creates are committed in groups (`commit_batch`, migration 4): while one call of commits with records is in flight,
 * the next ones wait and then go together, one transaction for all. Each item is answered as its own call would be:
 * the quota and the names stay exact, a bad item fails only itself, and a batch that fails writes nothing.
 */
const skip = withoutPostgres('the group commit of creates');
const schemas: string[] = [];
const open = async (label: string, options: { pool?: pg.Pool; statementTimeoutMs?: number; schema?: string } = {}) => {
  const schema = options.schema ?? uniqueSchema(label);
  if (!schemas.includes(schema)) schemas.push(schema);
  const where = options.pool === undefined ? { connectionString: DATABASE_URL as string } : { pool: options.pool };
  const store = await createPostgresStore({ ...where, schema, sweepIntervalMs: 0, ...(options.statementTimeoutMs !== undefined && { statementTimeoutMs: options.statementTimeoutMs }) });
  return { schema, store };
};

const http = (name: string) => ({ name, type: 'http' as const, endpoint: 'https://mcp.example.com/mcp' });
const count = async (schema: string, table: string, where = 'true') => Number((await sql<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".${table} WHERE ${where}`))[0]?.n);
/** A commit with one record, as a create makes it: a claim, a listing under a limit, the record. */
const create = (store: PostgresStore, id: string, name = id, set = 'servers:acme', max = 1000) =>
  store.index.commitWithRecords({ claims: [{ key: `name:${name}`, owner: id }], add: [{ set, member: id, score: 1 }], limits: [{ set, max }] } satisfies IndexTransaction, [
    { key: `server:${id}`, value: { id, name } },
  ]);

afterAll(async () => {
  if (!skip) await dropSchemas(...schemas);
});

describe.skipIf(skip)('creates committed in groups', () => {
  it('30 concurrent creates into one account of quota 10: exactly 10 land, in batches, with their records, and the sizes match the members', async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const { schema, store } = await open('quota', { pool });
    const fleet = createFleet({ store, webhooks: false, rateLimit: false, quotas: { serversPerAccount: 10 } });
    await fleet.ready();
    sent.length = 0;
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => fleet.servers.create('acme', http(`s${i}`))));
    expect(results.filter((r) => r.isOk())).toHaveLength(10);
    expect(results.filter((r) => r.isErr()).map((r) => r._unsafeUnwrapErr().code)).toEqual(Array(20).fill('QUOTA_EXCEEDED'));
    // The first went alone; the others waited for it and went in groups.
    expect(sent.filter((text) => text.includes('.commit_batch(')).length).toBeGreaterThan(0);
    expect(sent.filter((text) => /\.commit_(batch|with_records)\(/.test(text)).length).toBeLessThan(30);
    expect(await count(schema, 'records', `key LIKE 'server:%'`)).toBe(10);
    expect(await sql(`SELECT st.name, st.size::int AS size, (SELECT count(*)::int FROM "${schema}".set_members m WHERE m.set_name = st.name) AS members FROM "${schema}".sets st WHERE st.name LIKE 'servers%' ORDER BY st.name`)).toEqual(
      expect.arrayContaining([{ name: 'servers-all', size: 10, members: 10 }]),
    );
    const page = (await fleet.servers.list('acme', { limit: 100 }))._unsafeUnwrap();
    expect(page.pagination.total).toBe(10);
    expect(new Set(page.data.map((s) => s.id))).toEqual(new Set(results.filter((r) => r.isOk()).map((r) => r._unsafeUnwrap().id)));
    await fleet.close();
    await store.close();
    await pool.end();
  });

  it('12 concurrent creates of one name over two stores: exactly one lands, the others are told the name exists', async () => {
    const { schema, store } = await open('same_name');
    const { store: other } = await open('same_name', { schema });
    const fleets = [store, other].map((s) => createFleet({ store: s, webhooks: false, rateLimit: false }));
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => (fleets[i % 2] as (typeof fleets)[number]).servers.create('acme', http('weather'))));
    expect(results.filter((r) => r.isOk())).toHaveLength(1);
    expect(results.filter((r) => r.isErr()).map((r) => r._unsafeUnwrapErr().code)).toEqual(Array(11).fill('SERVER_NAME_EXISTS'));
    expect(await count(schema, 'records', `key LIKE 'server:%'`)).toBe(1);
    expect(await count(schema, 'set_members', `set_name = 'servers-all'`)).toBe(1);
    for (const fleet of fleets) await fleet.close();
    await store.close();
    await other.close();
  });

  it('within a batch, a later item sees the earlier ones: the same name twice is a conflict, the limit counts the batch', async () => {
    const { store } = await open('within');
    const first = create(store, 'a0');
    // Queued behind the first (which goes alone), these go as one batch.
    const rest = [create(store, 'a1', 'same', 'small', 2), create(store, 'a2', 'same', 'small', 2), create(store, 'a3', 'other', 'small', 2), create(store, 'a4', 'third', 'small', 2)];
    expect(await first).toEqual({ ok: true });
    const answers = await Promise.all(rest);
    expect(answers[0]).toEqual({ ok: true });
    expect(answers[1]).toMatchObject({ ok: false, conflict: { key: 'name:same', owner: 'a1' } });
    expect(answers[2]).toEqual({ ok: true });
    expect(answers[3]).toEqual({ ok: false, full: { set: 'small', max: 2 } });
    expect(await store.index.range('small', { offset: 0, limit: 10 })).toEqual(['a1', 'a3']);
    expect(await store.records.get(['server:a1', 'server:a2', 'server:a3', 'server:a4'])).toEqual([{ id: 'a1', name: 'same' }, undefined, { id: 'a3', name: 'other' }, undefined]);
    await store.close();
  });

  it('a group answered together stays one call when its creators ask again: no commit goes alone before the rest', async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const { store } = await open('regroup', { pool });
    const commits = () => sent.filter((text) => /\.commit_(batch|with_records)\(/.test(text));
    // A group forms: the first goes alone, the 15 asked for meanwhile go together behind it.
    const first = create(store, 'g0');
    const group = Array.from({ length: 15 }, (_, i) => create(store, `g${i + 1}`));
    expect(await first).toEqual({ ok: true });
    sent.length = 0;
    expect(await Promise.all(group)).toEqual(Array(15).fill({ ok: true }));
    expect(commits()).toEqual([expect.stringContaining('.commit_batch(')]);
    // The 15 answered together ask again (as a load's clients do): held for each other, they go as one call, where the
    // first of them would go alone (nothing in flight) and the other 14 behind it.
    sent.length = 0;
    const again = await Promise.all(Array.from({ length: 15 }, (_, i) => create(store, `h${i}`)));
    expect(again).toEqual(Array(15).fill({ ok: true }));
    expect(commits()).toEqual([expect.stringContaining('.commit_batch(')]);
    // Fewer come back: what waits is held at most as long as the last call took (HOLD_MAX_MS at most), then goes.
    sent.length = 0;
    expect(await create(store, 'lone')).toEqual({ ok: true });
    expect(commits()).toEqual([expect.stringContaining('.commit_with_records(')]);
    expect(await store.index.count('servers:acme')).toBe(32);
    await store.close();
    await pool.end();
  });

  it('an item the server refuses fails alone: the batch is sent again one by one and the others land', async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const { schema, store } = await open('isolated', { pool });
    sent.length = 0;
    const first = create(store, 'b0');
    // A NUL in a claim key: jsonb refuses the whole argument (22P05), so the batch fails before it runs.
    const rest = [create(store, 'b1'), create(store, 'b2', 'b2\u0000'), create(store, 'b3')];
    await first;
    const [one, bad, three] = await Promise.allSettled(rest);
    expect(one).toEqual({ status: 'fulfilled', value: { ok: true } });
    expect(three).toEqual({ status: 'fulfilled', value: { ok: true } });
    expect(bad).toMatchObject({ status: 'rejected', reason: { code: '22P05', message: expect.stringMatching(/a commit failed/) } });
    expect(sent.filter((text) => text.includes('.commit_batch('))).toHaveLength(1);
    expect(sent.filter((text) => text.includes('.commit_with_records('))).toHaveLength(4);
    expect((await sql<{ key: string }>(`SELECT key FROM "${schema}".records ORDER BY key`)).map((r) => r.key)).toEqual(['server:b0', 'server:b1', 'server:b3']);
    expect(await store.index.count('servers:acme')).toBe(3);
    await store.close();
    await pool.end();
  });

  it('a batch that fails midway writes nothing of any item, and every item fails (a timeout is not sent again)', async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const { schema, store } = await open('all_or_nothing', { pool, statementTimeoutMs: 400 });
    expect(await create(store, 'seed', 'seed', 'late')).toEqual({ ok: true });
    // Another session holds the row of the set 'late' (a row lock, no advisory lock): the batch's second item waits on
    // it after the first item's writes, until the statement's deadline.
    const holder = rawPool();
    const client = await holder.connect();
    await client.query('BEGIN');
    await client.query(`SELECT * FROM "${schema}".sets WHERE name = 'late' FOR UPDATE`);
    sent.length = 0;
    const first = create(store, 'c0', 'c0', 'early');
    const rest = [create(store, 'c1', 'c1', 'early'), create(store, 'c2', 'c2', 'late')].map((p) => p.then(() => 'landed', (error: Error) => error.message));
    await expect(first).resolves.toEqual({ ok: true });
    const answers = await Promise.all(rest);
    for (const answer of answers) expect(answer).toMatch(/a commit failed: .*statementTimeoutMs \(400 ms\)/);
    expect(sent.filter((text) => text.includes('.commit_batch('))).toHaveLength(1);
    expect(sent.filter((text) => text.includes('.commit_with_records('))).toHaveLength(1);
    await client.query('ROLLBACK');
    client.release();
    await holder.end();
    // c1's writes, done before c2 waited, were rolled back with it: no claim, no member, no size, no record.
    expect(await count(schema, 'claims', `key IN ('name:c1', 'name:c2')`)).toBe(0);
    expect(await count(schema, 'records', `key IN ('server:c1', 'server:c2')`)).toBe(0);
    expect(await store.index.range('early', { offset: 0, limit: 10 })).toEqual(['c0']);
    expect(await store.index.count('early')).toBe(1);
    expect(await create(store, 'c1', 'c1', 'early')).toEqual({ ok: true });
    await store.close();
    await pool.end();
  });

  it('commits with records crossing each other’s keys in opposite orders over two stores never deadlock', async () => {
    const { schema, store: a } = await open('crossing');
    const { store: b } = await open('crossing', { schema });
    const keys = Array.from({ length: 8 }, (_, i) => `k${i}`);
    const results = await Promise.all(
      Array.from({ length: 80 }, (_, i) => {
        const order = i % 2 === 0 ? keys : [...keys].reverse();
        return (i % 4 < 2 ? a : b).index.commitWithRecords(
          {
            claims: order.map((key) => ({ key, owner: 'same' })),
            add: order.map((key) => ({ set: `set-${key}`, member: `m${i}`, score: i })),
            limits: order.map((key) => ({ set: `set-${key}`, max: 1000 })),
          },
          [{ key: `r${i}`, value: i }],
        );
      }),
    );
    expect(results.every((r) => r.ok)).toBe(true);
    for (const key of keys) expect(await a.index.count(`set-${key}`)).toBe(80);
    expect(await count(schema, 'records')).toBe(80);
    await a.close();
    await b.close();
  });
});
