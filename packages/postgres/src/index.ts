import type { FleetStore } from '@mcp-fleet/core';
import Keyv from 'keyv';
import pg from 'pg';
import { checkTimeout, Connection, DEFAULT_TIMEOUT_MS, inspectConnectionString, inspectPool, scrub, sqlStateOf, type Whereabouts } from './connection.js';
import { PostgresIndexStore } from './postgres-index-store.js';
import { PostgresRateLimitStore } from './postgres-rate-limit-store.js';
import { PostgresRecordAdapter } from './postgres-record-adapter.js';
import { checkSchemaName, migrationLockSql, migrations, SCHEMA_VERSION } from './schema.js';

export { migrationSql, SCHEMA_VERSION } from './schema.js';
export { PostgresIndexStore } from './postgres-index-store.js';
export { PostgresRateLimitStore } from './postgres-rate-limit-store.js';

export interface PostgresStoreOptions {
  /**
   * The embedder's own `pg.Pool`. The store uses it and leaves it open on `close()`. It adds an `'error'` listener of
   * its own next to yours (an idle connection's error then crashes nothing, and your listeners still hear every error),
   * and removes it on `close()`. A statement past `statementTimeoutMs` is cancelled on the server by the store
   * (`pg_cancel_backend`, over a connection of the pool's settings).
   * @default a pool the store makes from `connectionString`, and ends on `close()`
   */
  pool?: pg.Pool;
  /** `postgres://user[:password]@host[:port]/database` (or `postgresql://`), when no `pool` is given. */
  connectionString?: string;
  /** The schema holding the store's tables and functions; a plain identifier. @default 'mcp_fleet' */
  schema?: string;
  /**
   * Bring the schema to this version at start (`migrate()`, in one transaction under an advisory lock). `false`: a
   * DBA runs the SQL (`migrationSql()`); the store then only checks the version and refuses one it does not know.
   * @default true
   */
  migrate?: boolean;
  /**
   * Every statement's deadline, in ms: the server cancels the statement then (`statement_timeout` on the store's own
   * pool's connections; `pg_cancel_backend` by the store on a given pool), and the client stops waiting 1 s later
   * (a server that stops answering). The call then fails: `503 STORAGE_UNAVAILABLE`.
   * @default 5000
   */
  statementTimeoutMs?: number;
  /**
   * How long a call waits for a connection of the pool (all busy, or the database slow to accept one), in ms, on the
   * store's own pool and on a given one alike; then it fails (`503 STORAGE_UNAVAILABLE`) and runs nothing later.
   * @default 5000
   */
  connectTimeoutMs?: number;
  /**
   * Name every statement, so that each connection parses and plans it once and then only binds and runs it. Off by
   * default: PgBouncer in transaction mode follows named statements only from 1.21 on, with `max_prepared_statements`
   * set (docs/deployment.md). Turn it on over a direct connection, or such a PgBouncer.
   * @default false
   */
  preparedStatements?: boolean;
  /** Connections of the store's own pool. @default 10 */
  maxConnections?: number;
  /** Time between two sweeps of expired records and counters, in ms; `0` for none. @default 60000 */
  sweepIntervalMs?: number;
  /**
   * Sees the pool's errors (a connection lost while idle, on the store's own pool or a given one) and failed sweeps;
   * calls fail on their own (`503 STORAGE_UNAVAILABLE`, their cause, with what fixes it, goes to the fleet's
   * `onError`), this is for logging. Messages never carry the password. @default ignores them
   */
  onError?: (error: Error) => void;
  /** Clock for the `since` of name claims, for tests. @default the database's clock */
  now?: () => number;
}

/** Everything `createFleet` stores, in one PostgreSQL schema, plus `migrate` and `close`. */
export interface PostgresStore extends FleetStore {
  /** Records in the table `records`, through the store's Keyv adapter, with `throwOnErrors: true`. */
  readonly records: Keyv;
  /** `''`: the table is the store's own, no key of the host's is there. */
  readonly keyPrefix: '';
  readonly index: PostgresIndexStore;
  readonly rateLimits: PostgresRateLimitStore;
  /** The rate-limit counters: a lease is a counter of limit 1, so every process on this schema shares them. */
  readonly leases: PostgresRateLimitStore;
  /** The schema and where the database is (`host:port/database`), for logs: never a credential. */
  readonly label: string;
  /** Brings the schema to this code's version (what `migrate: true` runs at start). Idempotent. */
  migrate(): Promise<void>;
  /** Deletes expired records and counters now (the store also does it every `sweepIntervalMs`); how many. */
  sweep(): Promise<number>;
  /** Stops the sweeps and ends the store's own pool; a pool that was given stays open. Idempotent. */
  close(): Promise<void>;
}

/** The schema is of a version this code does not know: a newer one, or none at all with `migrate: false`. */
export class PostgresSchemaError extends Error {
  override readonly name = 'PostgresSchemaError';
}

/**
 * Opens the store `createFleet` takes over PostgreSQL: records, the index, rate-limit counters and leases, shared by
 * every process that opens the same database and schema. Migrates the schema first (unless `migrate: false`) and
 * rejects when the database cannot be reached (the message names host and port, never the password) or when its
 * schema is newer than this code.
 *
 * ```ts
 * const store = await createPostgresStore({ connectionString: process.env.DATABASE_URL });
 * const fleet = createFleet({ store });
 * // on shutdown: await fleet.close(); await store.close();
 * ```
 */
export async function createPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const schema = checkSchemaName(options.schema ?? 'mcp_fleet');
  const timeoutMs = checkTimeout('statementTimeoutMs', options.statementTimeoutMs ?? DEFAULT_TIMEOUT_MS);
  const connectTimeoutMs = checkTimeout('connectTimeoutMs', options.connectTimeoutMs ?? DEFAULT_TIMEOUT_MS);
  const sweepIntervalMs = options.sweepIntervalMs ?? 60_000;
  const onError = options.onError ?? (() => {});
  let where: Whereabouts;
  let pool: pg.Pool;
  const owned = options.pool === undefined;
  if (options.pool !== undefined) {
    pool = options.pool;
    where = inspectPool(pool);
  } else {
    if (options.connectionString === undefined) throw new TypeError('createPostgresStore: give a pool or a connectionString');
    where = inspectConnectionString(options.connectionString);
    pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.maxConnections ?? 10,
      connectionTimeoutMillis: connectTimeoutMs,
      statement_timeout: timeoutMs,
      application_name: 'mcp-fleet',
    });
  }
  // An idle connection's error event without a listener would crash the process. On a given pool this listener is
  // added next to the embedder's own (which still hear every error) and removed on close().
  const poolError = (error: Error) => onError(new Error(`PostgreSQL ${where.host}:${where.port}/${where.database}: a pooled connection failed: ${scrub(error.message, where.secrets)}`));
  pool.on('error', poolError);
  const maxConnections = owned ? (options.maxConnections ?? 10) : Number((pool.options as { max?: number }).max ?? 10);
  const limits = { statementTimeoutMs: timeoutMs, connectTimeoutMs, owned, maxConnections, prepared: options.preparedStatements === true };
  const connection = new Connection(pool, schema, where, limits, owned ? undefined : (processId) => cancelBackend(pool, connectTimeoutMs, processId));
  const address = `${where.host}:${where.port}`;

  const migrate = () => runMigrations(connection);
  try {
    if (options.migrate !== false) await migrate();
    else await checkVersion(connection);
  } catch (error) {
    if (owned) await pool.end().catch(() => {});
    else pool.removeListener('error', poolError);
    if (error instanceof PostgresSchemaError) throw error;
    const reason = scrub(String((error as { reason?: unknown }).reason ?? (error instanceof Error ? error.message : String(error))), where.secrets);
    // A DatabaseError (an SQLSTATE) came from the server: reached, then refused.
    if (sqlStateOf(error) !== undefined) throw new Error(`PostgreSQL at ${address} (database ${where.database}) refused the store: ${reason}`);
    throw new Error(`Cannot connect to PostgreSQL at ${address} (database ${where.database}): ${reason}`);
  }

  const adapter = new PostgresRecordAdapter(connection);
  const records = new Keyv({ store: adapter, namespace: '', throwOnErrors: true });
  const index = new PostgresIndexStore(connection, options.now, records);
  const rateLimits = new PostgresRateLimitStore(connection);
  const sweep = async () => {
    const [row] = await connection.query<{ n: string }>('a sweep', `SELECT ${connection.s}.sweep(1000) AS n`);
    return Number(row?.n ?? 0);
  };
  const timer = sweepIntervalMs > 0 ? setInterval(() => void sweep().catch((error: Error) => onError(error)), sweepIntervalMs) : undefined;
  timer?.unref();

  let closing: Promise<void> | undefined;
  const close = async () => {
    if (timer !== undefined) clearInterval(timer);
    connection.closed = true;
    if (owned) await pool.end().catch((error: Error) => onError(connection.failure('the close', error)));
    else pool.removeListener('error', poolError);
  };
  return {
    records,
    keyPrefix: '',
    index,
    rateLimits,
    leases: rateLimits,
    label: `postgres ${address}/${where.database} schema ${schema}`,
    migrate,
    sweep,
    close: () => (closing ??= close()),
  };
}

/** Asks the server to cancel what backend `processId` of a given pool runs, over a connection of the pool's settings. */
async function cancelBackend(pool: pg.Pool, connectTimeoutMs: number, processId: number): Promise<void> {
  const client = new pg.Client({ ...(pool.options as pg.ClientConfig), connectionTimeoutMillis: connectTimeoutMs });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query({ text: 'SELECT pg_cancel_backend($1)', values: [processId], query_timeout: connectTimeoutMs } as pg.QueryConfig);
  } finally {
    await client.end().catch(() => {});
  }
}

function newerMessage(schema: string, found: number): string {
  return `The PostgreSQL schema "${schema}" is at version ${found}, newer than this @mcp-fleet/postgres knows (${SCHEMA_VERSION}): a newer version of the code migrated it. Refusing to start; upgrade @mcp-fleet/postgres.`;
}

/** Checks, without changing anything, that the schema is at this code's version. */
async function checkVersion(connection: Connection): Promise<void> {
  const [table] = await connection.query<{ exists: boolean }>('the version check', `SELECT to_regclass($1) IS NOT NULL AS exists`, [`${connection.s}.migrations`]);
  const [row] = table?.exists === true ? await connection.query<{ version: number | null }>('the version check', `SELECT max(version) AS version FROM ${connection.s}.migrations`) : [];
  const found = row?.version ?? 0;
  if (found > SCHEMA_VERSION) throw new PostgresSchemaError(newerMessage(connection.schema, found));
  if (found < SCHEMA_VERSION) {
    throw new PostgresSchemaError(
      `The PostgreSQL schema "${connection.schema}" is at version ${found}, this @mcp-fleet/postgres needs ${SCHEMA_VERSION}: run its migrations (open the store with migrate: true, or run migrationSql()).`,
    );
  }
}

/**
 * Brings the schema to `SCHEMA_VERSION` in one transaction, under an advisory lock of its own: processes starting at
 * once run it one after another, and the later ones find nothing to do. A schema newer than the code is refused.
 */
async function runMigrations(connection: Connection): Promise<void> {
  if (connection.closed) throw new Error('the PostgreSQL store is closed (migrate)');
  const { s, schema } = connection;
  const client = await connection.acquire('connecting');
  const run = (what: string, text: string, values: unknown[] = []): Promise<pg.QueryResult> =>
    client.query({ text, values, query_timeout: connection.timeoutMs } as pg.QueryConfig).catch((error: unknown) => {
      throw connection.failure(what, error);
    });
  let failed = false;
  try {
    await run('the migration', 'BEGIN');
    await run('the migration lock', migrationLockSql(schema));
    await run('the migration', `CREATE SCHEMA IF NOT EXISTS ${s}`);
    await run(
      'the migration',
      `CREATE TABLE IF NOT EXISTS ${s}.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const found = Number((await run('the migration', `SELECT coalesce(max(version), 0) AS version FROM ${s}.migrations`)).rows[0]?.version ?? 0);
    if (found > SCHEMA_VERSION) throw new PostgresSchemaError(newerMessage(schema, found));
    for (const migration of migrations(schema)) {
      if (migration.version <= found) continue;
      await run(`migration ${migration.version}`, migration.sql);
      await run('the migration', `INSERT INTO ${s}.migrations (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
    }
    await run('the migration', 'COMMIT');
  } catch (error) {
    failed = true;
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    // A connection whose transaction may be in doubt is not handed back to the pool.
    client.release(failed ? true : undefined);
  }
}
