import { createFleet, type IndexStore } from '@mcp-fleet/core';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropSchemas, notingPool, sql, uniqueSchema, withoutPostgres } from '../../../test/support/postgres.js';
import { createPostgresStore, type PostgresStore } from './index.js';

/**
 * A server's create over PostgreSQL is one call (`commit_with_records`, migration 3): the record is written by the
 * commit that claims the name, lists the server and holds the quota, or not at all. And a create whose call
 * committed while its answer was lost (the connection cut after PostgreSQL committed) answers what is stored.
 */
const skip = withoutPostgres('the create over PostgreSQL');
const schemas: string[] = [];
const open = async (label: string, pool?: pg.Pool) => {
  const schema = uniqueSchema(label);
  schemas.push(schema);
  const where = pool === undefined ? { connectionString: DATABASE_URL as string } : { pool };
  return { schema, store: await createPostgresStore({ ...where, schema, sweepIntervalMs: 0 }) };
};

const http = (name: string) => ({ name, type: 'http' as const, endpoint: 'https://mcp.example.com/mcp' });
const recordsOf = async (schema: string) => (await sql<{ key: string }>(`SELECT key FROM "${schema}".records WHERE key LIKE 'server:%' ORDER BY key`)).map((r) => r.key);

afterAll(async () => {
  if (!skip) await dropSchemas(...schemas);
});

/** The store with its index's joint commit made to commit and then lose its answer, `lose` times. */
function losingAnswers(store: PostgresStore) {
  const index = Object.create(store.index) as IndexStore & { lose: number };
  index.lose = 0;
  index.commitWithRecords = async (tx, records) => {
    const result = await store.index.commitWithRecords(tx, records);
    if (index.lose > 0) {
      index.lose--;
      throw new Error('PostgreSQL 127.0.0.1:5432/test: a commit failed: Connection terminated unexpectedly');
    }
    return result;
  };
  return { ...store, index };
}

describe.skipIf(skip)('a create over PostgreSQL', () => {
  it('is one statement that writes the record in its commit: a refused create (the name taken, the account full) leaves no record row', async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const { schema, store } = await open('create_one', pool);
    const fleet = createFleet({ store, webhooks: false, quotas: { serversPerAccount: 2 } });
    // The fleet's start check of the stored keys reads a record once: done before counting (`ready` waits for it; a
    // read may wait for a connection the pool opens, while a later call takes the idle one).
    await fleet.ready();
    (await fleet.servers.list('acme'))._unsafeUnwrap();
    sent.length = 0;
    const first = (await fleet.servers.create('acme', http('one')))._unsafeUnwrap();
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/\.commit_with_records\(/);
    expect(await recordsOf(schema)).toEqual([`server:${first.id}`]);
    expect((await fleet.servers.create('acme', http('one')))._unsafeUnwrapErr().code).toBe('SERVER_NAME_EXISTS');
    (await fleet.servers.create('acme', http('two')))._unsafeUnwrap();
    expect((await fleet.servers.create('acme', http('three')))._unsafeUnwrapErr().code).toBe('QUOTA_EXCEEDED');
    expect(await recordsOf(schema)).toHaveLength(2);
    const page = (await fleet.servers.list('acme'))._unsafeUnwrap();
    expect(page.data.map((s) => s.name).sort()).toEqual(['one', 'two']);
    expect(page.pagination.total).toBe(2);
    // The page, its total and its records: one statement too.
    sent.length = 0;
    (await fleet.servers.list('acme', { page: 2, limit: 1 }))._unsafeUnwrap();
    expect(sent).toHaveLength(1);
    await fleet.close();
    await store.close();
    await pool.end();
  });

  it('with webhooks on, a create in an account listing no webhook is one statement; a webhook another process lists is honoured', async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const { schema, store } = await open('create_guarded', pool);
    const other = await createPostgresStore({ connectionString: DATABASE_URL as string, schema, sweepIntervalMs: 0 });
    const fleet = createFleet({ store, webhooks: { worker: false } });
    const elsewhere = createFleet({ store: other, webhooks: { worker: false } });
    await fleet.ready();
    (await fleet.servers.list('acme'))._unsafeUnwrap();
    sent.length = 0;
    (await fleet.servers.create('acme', http('one')))._unsafeUnwrap();
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/\.commit_with_records\(/);
    // A webhook created through the other store, which this fleet has not seen: its create is refused by the listing,
    // then reads the subscribers and stages the event, whose delivery is due.
    const webhook = (await elsewhere.webhooks.create('acme', { url: 'https://h.example.com/', events: ['server.created'] }))._unsafeUnwrap();
    const two = (await fleet.servers.create('acme', http('two')))._unsafeUnwrap();
    const deliveries = (await elsewhere.webhooks.deliveries('acme', webhook.id))._unsafeUnwrap();
    expect(deliveries.data).toHaveLength(1);
    const [event] = await sql<{ value: string }>(`SELECT value FROM "${schema}".records WHERE key LIKE 'webhook-event:%'`);
    expect(JSON.parse(event?.value ?? '{}').value).toMatchObject({ type: 'server.created', data: { server: { id: two.id } } });
    expect((await fleet.servers.list('acme'))._unsafeUnwrap().pagination.total).toBe(2);
    await Promise.all([fleet.close(), elsewhere.close()]);
    await Promise.all([store.close(), other.close()]);
    await pool.end();
  });

  it('a create whose commit landed and whose answer was lost answers 201, its server whole', async () => {
    const { schema, store } = await open('create_landed');
    const losing = losingAnswers(store);
    const fleet = createFleet({ store: losing, webhooks: false });
    losing.index.lose = 1;
    const created = await fleet.servers.create('acme', http('landed'));
    expect(created.isOk()).toBe(true);
    const server = created._unsafeUnwrap();
    expect(await recordsOf(schema)).toEqual([`server:${server.id}`]);
    expect((await fleet.servers.get('acme', server.id))._unsafeUnwrap().name).toBe('landed');
    expect((await fleet.servers.list('acme'))._unsafeUnwrap().data.map((s) => s.id)).toEqual([server.id]);
    expect((await fleet.servers.create('acme', http('landed')))._unsafeUnwrapErr().code).toBe('SERVER_NAME_EXISTS');
    await fleet.close();
    await store.close();
  });

  it('with preparedStatements each statement is prepared once per connection, under a name, and the fleet works the same', async () => {
    const pool = new pg.Pool({ connectionString: DATABASE_URL as string, max: 1 });
    const schema = uniqueSchema('prepared');
    schemas.push(schema);
    const store = await createPostgresStore({ pool, schema, sweepIntervalMs: 0, preparedStatements: true });
    const fleet = createFleet({ store, webhooks: false });
    const created = (await fleet.servers.create('acme', http('named')))._unsafeUnwrap();
    (await fleet.servers.create('acme', http('named-too')))._unsafeUnwrap();
    expect((await fleet.servers.get('acme', created.id))._unsafeUnwrap().name).toBe('named');
    expect((await fleet.servers.list('acme'))._unsafeUnwrap().pagination.total).toBe(2);
    // The pool's one connection holds the statements it prepared: the commit among them, prepared once.
    const { rows } = await pool.query<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements');
    const commits = rows.filter((row) => row.statement.includes('.commit_with_records('));
    expect(commits).toHaveLength(1);
    expect(commits[0]?.name).toMatch(/^mcp_fleet_[0-9a-f]{32}$/);
    await fleet.close();
    await store.close();
    await pool.end();
  });
});
