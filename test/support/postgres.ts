/**
 * For the suites that talk to a real PostgreSQL (`DATABASE_URL`). Without `DATABASE_URL` they skip, and say so once;
 * with it they run, and an unreachable server fails them. Every test file works in a schema of its own (or one per
 * case), dropped afterwards: never another schema.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const DATABASE_URL: string | undefined = process.env.DATABASE_URL || undefined;

/** True when the PostgreSQL suites must skip; prints why, once per test file. */
export function withoutPostgres(suite: string): boolean {
  if (DATABASE_URL !== undefined) return false;
  console.warn(`${suite}: skipped, DATABASE_URL is not set (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx vitest run)`);
  return true;
}

/** A schema name no other run uses. */
export function uniqueSchema(label: string): string {
  return `mcp_fleet_test_${label}_${randomBytes(5).toString('hex')}`;
}

/** A pool of the test's own, to look at what the stores wrote. End it with `end()`. */
export function rawPool(url = DATABASE_URL as string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 2000 });
  pool.on('error', () => {});
  return pool;
}

/** A pool (of 4) whose connections note the text of every statement they send in `sent`, for counting them. End it with `end()`. */
export function notingPool(sent: string[]): pg.Pool {
  const pool = new pg.Pool({ connectionString: DATABASE_URL as string, max: 4 });
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (config: unknown, ...rest: unknown[]) => {
      sent.push(typeof config === 'string' ? config : (config as { text: string }).text);
      return query(config, ...rest);
    };
  });
  return pool;
}

/** Runs one statement on a connection of its own. */
export async function sql<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: DATABASE_URL as string, connectionTimeoutMillis: 2000 });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** Drops the schemas, and only those. */
export async function dropSchemas(...schemas: string[]): Promise<void> {
  for (const schema of schemas) await sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}
