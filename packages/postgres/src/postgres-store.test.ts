import { createServer, type Server } from 'node:net';
import { createFleet } from '@mcp-fleet/core';
import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { DATABASE_URL, dropSchemas, rawPool, sql, uniqueSchema, withoutPostgres } from '../../../test/support/postgres.js';
import { createPostgresStore, migrationSql, PostgresSchemaError, SCHEMA_VERSION } from './index.js';
import { migrations } from './schema.js';

const skip = withoutPostgres('createPostgresStore');
const connectionString = DATABASE_URL as string;
const schemas: string[] = [];
const schemaFor = (label: string) => {
  const schema = uniqueSchema(label);
  schemas.push(schema);
  return schema;
};

afterAll(async () => {
  if (!skip) await dropSchemas(...schemas);
});

/** A port that accepts connections and never answers: a database that stopped answering. */
async function silentPort(): Promise<{ port: number; server: Server }> {
  const server = createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

describe('createPostgresStore without a database', () => {
  it('refuses a bad connection string or schema without echoing the password', async () => {
    await expect(createPostgresStore({ connectionString: 'postgres://u:s3cret-pw@[bad' })).rejects.toThrow(/not a URL/);
    await expect(createPostgresStore({ connectionString: 'postgres://u:s3cret-pw@[bad' })).rejects.not.toThrow(/s3cret/);
    await expect(createPostgresStore({ connectionString: 'mysql://u:s3cret-pw@h/db' })).rejects.toThrow(/postgres:\/\//);
    await expect(createPostgresStore({ connectionString: 'postgres://h/db', schema: 'a"; DROP' })).rejects.toThrow(/plain identifier/);
  });

  it('an unreachable database: the message names host and port, never the password', async () => {
    const error = (await createPostgresStore({ connectionString: 'postgres://fleet:s3cret-pw@127.0.0.1:1/fleetdb', connectTimeoutMs: 1000 }).catch((e: Error) => e)) as Error;
    expect(error.message).toMatch(/^Cannot connect to PostgreSQL at 127\.0\.0\.1:1 \(database fleetdb\): connect ECONNREFUSED/);
    expect(error.message).not.toContain('s3cret');
  });

  it('a database that accepts and never answers: the start gives up at the connect timeout', async () => {
    const { port, server } = await silentPort();
    const started = Date.now();
    const error = (await createPostgresStore({ connectionString: `postgres://fleet:s3cret-pw@127.0.0.1:${port}/db`, connectTimeoutMs: 500 }).catch((e: Error) => e)) as Error;
    expect(Date.now() - started).toBeLessThan(3000);
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expect(error.message).not.toContain('s3cret');
    server.close();
  });

  it('prints its migration SQL for a schema', () => {
    const text = migrationSql('fleet_prod');
    expect(text).toContain('CREATE SCHEMA IF NOT EXISTS "fleet_prod";');
    expect(text).toContain('CREATE TABLE IF NOT EXISTS "fleet_prod".migrations (');
    for (const name of ['records', 'claims', 'set_members', 'sets', 'counters']) expect(text).toContain(`CREATE TABLE "fleet_prod".${name} (`);
    for (const name of ['commit_index', 'consume', 'sweep', 'commit_with_records', 'commit_lock_ids', 'commit_index_locked', 'write_records', 'commit_batch', 'commit_items_locked']) {
      expect(text).toContain(`CREATE FUNCTION "fleet_prod".${name}(`);
    }
    expect(text).toContain('CREATE OR REPLACE FUNCTION "fleet_prod".commit_index(');
    expect(text).toContain(`INSERT INTO "fleet_prod".migrations (version, name) VALUES (${SCHEMA_VERSION},`);
  });
});

describe.skipIf(skip)('createPostgresStore on a real PostgreSQL', () => {
  it('the printed SQL builds the schema a store opens with migrate: false', async () => {
    const schema = schemaFor('printed');
    await sql(migrationSql(schema));
    const store = await createPostgresStore({ connectionString, schema, migrate: false });
    await store.records.set('k', { v: 1 });
    expect(await store.records.get('k')).toEqual({ v: 1 });
    await store.close();
  });

  it('a database that refuses the store (no such database) says so, naming where, never the password', async () => {
    const url = new URL(connectionString);
    url.password = 's3cret-pw';
    url.pathname = '/no_such_database_for_mcp_fleet';
    const error = (await createPostgresStore({ connectionString: url.toString() }).catch((e: Error) => e)) as Error;
    expect(error.message).toMatch(new RegExp(`^PostgreSQL at ${url.hostname}:${url.port || 5432} \\(database no_such_database_for_mcp_fleet\\) refused the store: .*does not exist`));
    expect(error.message).not.toContain('s3cret');
  });

  it('stores starting at once migrate once, under the lock; a second migrate changes nothing', async () => {
    const schema = schemaFor('race');
    const stores = await Promise.all(Array.from({ length: 4 }, () => createPostgresStore({ connectionString, schema })));
    const versions = migrations(schema).map(({ version }) => ({ version }));
    expect(await sql(`SELECT version FROM "${schema}".migrations ORDER BY version`)).toEqual(versions);
    await stores[0]?.migrate();
    expect(await sql(`SELECT count(*)::int AS n FROM "${schema}".migrations`)).toEqual([{ n: migrations(schema).length }]);
    for (const store of stores) await store.close();
  });

  it('a schema newer than the code refuses to start, saying so; with migrate: false too', async () => {
    const schema = schemaFor('newer');
    await (await createPostgresStore({ connectionString, schema })).close();
    await sql(`INSERT INTO "${schema}".migrations (version, name) VALUES (${SCHEMA_VERSION + 1}, 'from the future')`);
    for (const migrate of [true, false]) {
      const error = await createPostgresStore({ connectionString, schema, migrate }).catch((e: Error) => e);
      expect(error).toBeInstanceOf(PostgresSchemaError);
      expect((error as Error).message).toMatch(new RegExp(`"${schema}" is at version ${SCHEMA_VERSION + 1}, newer than this @mcp-fleet/postgres knows \\(${SCHEMA_VERSION}\\)`));
    }
  });

  it('migrate: false on an empty schema refuses to start and says to migrate', async () => {
    const error = await createPostgresStore({ connectionString, schema: schemaFor('empty'), migrate: false }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(PostgresSchemaError);
    expect((error as Error).message).toMatch(new RegExp(`at version 0, .* needs ${SCHEMA_VERSION}: run its migrations`));
  });

  it('a schema at version 1 is brought to this version at start: consume then commits without waiting for the WAL flush, and commit_with_records is there', async () => {
    const schema = schemaFor('upgrade');
    const [first] = migrations(schema);
    await sql(`CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());${first?.sql}; INSERT INTO "${schema}".migrations (version, name) VALUES (1, 'v1')`);
    // What consume's transaction commits with, seen from inside it.
    const setting = async () => {
      const client = new pg.Client({ connectionString });
      await client.connect();
      try {
        await client.query('BEGIN');
        await client.query(`SELECT "${schema}".consume(ARRAY['k'], ARRAY[10]::bigint[], ARRAY[1]::bigint[], $1)`, [Date.now() + 60_000]);
        const { rows } = await client.query(`SELECT current_setting('synchronous_commit') AS value`);
        await client.query('COMMIT');
        return rows[0]?.value;
      } finally {
        await client.end();
      }
    };
    expect(await setting()).toBe('on');
    const store = await createPostgresStore({ connectionString, schema });
    expect(await sql(`SELECT max(version)::int AS v FROM "${schema}".migrations`)).toEqual([{ v: SCHEMA_VERSION }]);
    expect(await sql(`SELECT to_regproc($1) IS NOT NULL AS there`, [`"${schema}".commit_with_records`])).toEqual([{ there: true }]);
    expect(await sql(`SELECT to_regproc($1) IS NOT NULL AS there`, [`"${schema}".consume_batch`])).toEqual([{ there: true }]);
    expect(await setting()).toBe('off');
    // Only consume's own transaction: the session's setting and every other statement keep theirs.
    expect(await sql(`SELECT current_setting('synchronous_commit') AS value`)).toEqual([{ value: 'on' }]);
    await store.close();
  });

  it('a schema at version 3 with servers in it is brought to the current version: its servers stay, and creates then go in groups', async () => {
    const schema = schemaFor('v3');
    const three = migrations(schema).filter((m) => m.version <= 3);
    const migrationsTable = `CREATE TABLE "${schema}".migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());`;
    await sql(`CREATE SCHEMA "${schema}"; ${migrationsTable} ${three.map((m) => `${m.sql}; INSERT INTO "${schema}".migrations (version, name) VALUES (${m.version}, 'v${m.version}');`).join('\n')}`);
    expect(await sql(`SELECT to_regproc($1) IS NOT NULL AS there`, [`"${schema}".commit_batch`])).toEqual([{ there: false }]);
    // A server created by the v3 functions, as a fleet of the previous version would have.
    const tx = { claims: [{ key: 'name:acme:old', owner: 'srv_old' }], add: [{ set: 'servers:acme', member: 'srv_old', score: '1' }], limits: [{ set: 'servers:acme', max: 3 }] };
    await sql(`SELECT "${schema}".commit_with_records($1::jsonb, NULL, ARRAY['k:old'], ARRAY['{"value":"old"}'])`, [JSON.stringify(tx)]);
    const store = await createPostgresStore({ connectionString, schema, sweepIntervalMs: 0 });
    expect(await sql(`SELECT version FROM "${schema}".migrations ORDER BY version`)).toEqual(migrations(schema).map(({ version }) => ({ version })));
    expect(await store.records.get('k:old')).toBe('old');
    // Four creates at once into the account (limit 3, one taken): the first alone, the others in one batch; two land.
    const create = (id: string) =>
      store.index.commitWithRecords({ claims: [{ key: `name:acme:${id}`, owner: id }], add: [{ set: 'servers:acme', member: id, score: 2 }], limits: [{ set: 'servers:acme', max: 3 }] }, [
        { key: `k:${id}`, value: id },
      ]);
    const answers = await Promise.all(['a', 'b', 'c', 'd'].map(create));
    expect(answers.filter((a) => a.ok)).toHaveLength(2);
    expect(await store.index.count('servers:acme')).toBe(3);
    expect(await store.index.claimOf('name:acme:old')).toMatchObject({ owner: 'srv_old' });
    await store.close();
  });

  it('records: a Keyv over its own table, with expiry on the database clock and a sweep', async () => {
    const schema = schemaFor('records');
    const store = await createPostgresStore({ connectionString, schema, sweepIntervalMs: 0 });
    const { records } = store;
    await records.set('a', { n: 1 });
    await records.set('short', 'x', 80);
    expect(await records.get(['a', 'short', 'none'])).toEqual([{ n: 1 }, 'x', undefined]);
    expect(await records.has('short')).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(await records.get('short')).toBeUndefined();
    expect(await records.has('short')).toBe(false);
    expect(await store.sweep()).toBe(1);
    expect((await sql<{ key: string }>(`SELECT key FROM "${schema}".records`)).map((r) => r.key)).toEqual(['a']);
    expect(await records.delete('a')).toBe(true);
    expect(await records.delete('a')).toBe(false);
    await records.setMany([{ key: 'm1', value: 1 }, { key: 'm2', value: 2 }]);
    expect(await records.getMany(['m1', 'm2'])).toEqual([1, 2]);
    await store.close();
  });

  it('close() leaves a pool it was given open, and ends its own', async () => {
    const schema = schemaFor('pool');
    const pool = rawPool();
    const given = await createPostgresStore({ pool, schema });
    await given.records.set('k', 'v');
    await given.close();
    await given.close();
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await expect(given.records.get('k')).rejects.toThrow(/closed/);
    const own = await createPostgresStore({ connectionString, schema });
    expect(await own.records.get('k')).toBe('v');
    await own.close();
    await pool.end();
  });

  it('every statement has a deadline: a commit stuck behind a lock fails at statementTimeoutMs, on its own pool and on a given one', async () => {
    const schema = schemaFor('timeout');
    const pool = rawPool();
    const stores = [await createPostgresStore({ connectionString, schema, statementTimeoutMs: 300 }), await createPostgresStore({ pool, schema, statementTimeoutMs: 300 })];
    // Another session holds the claim's lock (the same id commit_index takes) inside an open transaction.
    const holder = rawPool();
    const client = await holder.connect();
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`${schema}:claim:stuck`]);
    for (const store of stores) {
      const started = Date.now();
      await expect(store.index.commit({ claims: [{ key: 'stuck', owner: 'a' }] })).rejects.toThrow(/a commit failed/);
      expect(Date.now() - started).toBeLessThan(2000);
    }
    await client.query('ROLLBACK');
    client.release();
    await holder.end();
    for (const store of stores) expect(await store.index.commit({ claims: [{ key: 'stuck', owner: 'a' }] })).toEqual({ ok: true });
    for (const store of stores) await store.close();
    await pool.end();
  });

  it('a fleet over it keeps servers for a fleet on a new pool', async () => {
    const schema = schemaFor('fleet');
    const first = await createPostgresStore({ connectionString, schema });
    const fleet1 = createFleet({ store: first, rateLimit: false, webhooks: false });
    const created = (await fleet1.servers.create('acme', { name: 'weather', type: 'http', endpoint: 'https://weather.example/mcp' }))._unsafeUnwrap();
    await fleet1.close();
    await first.close();
    const again = await createPostgresStore({ connectionString, schema });
    const fleet2 = createFleet({ store: again, rateLimit: false, webhooks: false });
    expect((await fleet2.servers.get('acme', created.id))._unsafeUnwrap().name).toBe('weather');
    expect((await fleet2.servers.create('acme', { name: 'weather', type: 'http', endpoint: 'https://weather.example/mcp' }))._unsafeUnwrapErr().code).toBe('SERVER_NAME_EXISTS');
    await fleet2.close();
    await again.close();
  });
});
