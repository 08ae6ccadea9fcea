/**
 * The reference server on PostgreSQL (`MCP_FLEET_STORE=postgres://…`, DATABASE_URL), as a real process: the start
 * line names host, port and database and never the password, and the API works through HTTP over the store. Each
 * run works in a schema of its own (`MCP_FLEET_POSTGRES_SCHEMA`), dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropSchemas, sql, uniqueSchema, withoutPostgres } from './support/postgres.js';
import { expectReadyzFollows, startRelay } from './support/relay.js';
import { api, killLeftovers, removeTempDirs, startServer, tempDir } from './support/reference-server.js';

const skip = withoutPostgres('MCP_FLEET_STORE=postgres://');
const schema = uniqueSchema('reference');

afterEach(async () => {
  await killLeftovers();
  await removeTempDirs();
});

afterAll(async () => {
  if (!skip) await dropSchemas(schema);
});

/** DATABASE_URL with a password (a trusting local server ignores it) and the given scheme. */
function storeUrl(password: string, scheme: 'postgres' | 'postgresql'): string {
  const url = new URL(DATABASE_URL as string);
  url.password = password;
  return `${scheme}://${url.href.slice(url.protocol.length + 2)}`;
}

describe.skipIf(skip)('the reference server on PostgreSQL', () => {
  it.each(['postgres', 'postgresql'] as const)('%s:// — the banner names host, port and database, never the password; servers are created, listed and deleted through HTTP', async (scheme) => {
    const password = `pw-${randomBytes(8).toString('hex')}`;
    const key = `key-${randomBytes(12).toString('hex')}`;
    const account = `acme${randomBytes(3).toString('hex')}`;
    const target = new URL(DATABASE_URL as string);
    const env = { MCP_FLEET_STORE: storeUrl(password, scheme), MCP_FLEET_POSTGRES_SCHEMA: schema, MCP_FLEET_API_KEYS: `${account}:pro:${key}` };
    const server = await startServer({ cwd: await tempDir(), env });
    expect(server.storeLabel).toBe(`postgres ${target.hostname}:${target.port || '5432'}${target.pathname} schema ${schema}`);

    const created = await api(server.url, key, 'POST', '/servers', { name: `weather-${scheme}`, type: 'http', endpoint: 'https://mcp.example.com/mcp' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const listed = await api(server.url, key, 'GET', '/servers?limit=100');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((s: { name: string }) => s.name)).toEqual([`weather-${scheme}`]);
    expect(listed.body.pagination.total).toBe(1);
    // The row is in the schema's own table.
    expect(await sql(`SELECT count(*)::int AS n FROM "${schema}".records WHERE key LIKE $1`, [`%server:${created.body.data.id}`])).toEqual([{ n: 1 }]);
    const deleted = await api(server.url, key, 'DELETE', `/servers/${created.body.data.id}`);
    expect(deleted.status).toBe(200);
    expect((await api(server.url, key, 'GET', '/servers')).body.data).toEqual([]);
    expect((await api(server.url, key, 'GET', `/servers/${created.body.data.id}`)).status).toBe(404);

    const exit = await server.stop();
    expect(exit.code, exit.stderr).toBe(0);
    expect(exit.stdout + exit.stderr).not.toContain(password);
  });

  it('GET /readyz answers 503 while the database cannot be reached, and 200 again once it can', async () => {
    const relay = await startRelay(DATABASE_URL as string, 5432);
    const env = { MCP_FLEET_STORE: relay.url, MCP_FLEET_POSTGRES_SCHEMA: schema, MCP_FLEET_API_KEYS: `ready${randomBytes(3).toString('hex')}:pro:key-${randomBytes(12).toString('hex')}` };
    const server = await startServer({ cwd: await tempDir(), env });
    try {
      await expectReadyzFollows(server.origin, relay);
    } finally {
      await server.stop();
      relay.close();
    }
  });
});
