/**
 * Secrets at rest (docs/security.md): what each real store holds after servers with credentials and env values and a
 * webhook were created, read byte for byte (the memory Map, the SQLite file and its journal, every Redis key under the
 * test's prefix, every row of every table in the test's PostgreSQL schema), never contains a secret; the secrets still work (probes, tool calls, stdio env, webhook signatures);
 * rotation moves everything to a new key; a wrong key fails at start; plaintext from before stays readable.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFleet, createMemoryStore, type Fleet, type FleetOptions, MemoryIndexStore, verify } from '@mcp-fleet/core';
import { createPostgresStore } from '@mcp-fleet/postgres';
import { createRedisStore } from '@mcp-fleet/redis';
import { createSqliteStore } from '@mcp-fleet/sqlite';
import Keyv from 'keyv';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { listen, type Listening, readBody } from '../packages/core/src/mcp/fixtures/listen.js';
import { startAuthServer } from '../packages/core/src/mcp/fixtures/misc-servers.js';
import { startV2ToolServer } from '../packages/core/src/mcp/fixtures/tool-servers.js';
import { DATABASE_URL, dropSchemas, sql, uniqueSchema, withoutPostgres } from './support/postgres.js';
import { deleteKeys, keysStartingWith, rawClient, REDIS_URL, uniquePrefix } from './support/redis.js';

const ACCOUNT = 'acme';
const TOKEN = `bearer-${randomBytes(12).toString('hex')}`;
const CLIENT_SECRET = `client-secret-${randomBytes(12).toString('hex')}`;
const ENV_VALUE = `env-value-${randomBytes(12).toString('hex')}`;
const K1 = randomBytes(32);
const K2 = randomBytes(32).toString('base64');
import { fixture } from '../packages/core/src/stdio/test-helpers.js';

const ECHO_SERVER = fixture('echo-server.mjs');
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

interface Store {
  options: Pick<FleetOptions, 'store'>;
  close(): Promise<void>;
}
interface StoreKind {
  name: string;
  skip: boolean;
  open(): Promise<Store>;
  /** Everything the store holds, as text. */
  dump(): Promise<string>;
  cleanup(): Promise<void>;
}

function memoryStore(): StoreKind {
  const map = new Map<string, unknown>();
  const index = new MemoryIndexStore();
  return {
    name: 'memory',
    skip: false,
    open: async () => ({ options: { store: { ...createMemoryStore({ records: new Keyv({ store: map, throwOnErrors: true }) }), index } }, close: async () => {} }),
    dump: async () => JSON.stringify([...map]),
    cleanup: async () => {},
  };
}

function sqliteStore(): StoreKind {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-secrets-'));
  return {
    name: 'sqlite',
    skip: false,
    open: async () => {
      const sqlite = await createSqliteStore({ path: join(dir, 'fleet.sqlite') });
      return { options: { store: sqlite }, close: sqlite.close };
    },
    // The file and whatever journal or WAL lies beside it, as bytes.
    dump: async () => readdirSync(dir).map((file) => readFileSync(join(dir, file)).toString('latin1')).join('\n'),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

function redisStore(): StoreKind {
  const prefix = uniquePrefix('secrets');
  return {
    name: 'redis',
    skip: REDIS_URL === undefined,
    open: async () => {
      const redis = await createRedisStore({ url: REDIS_URL as string, keyPrefix: prefix });
      return { options: { store: redis }, close: redis.close };
    },
    dump: async () => {
      const client = await rawClient();
      try {
        const parts: string[] = [];
        for (const key of await keysStartingWith(prefix)) {
          const type = await client.type(key);
          if (type === 'string') parts.push(key, String(await client.get(key)));
          else if (type === 'hash') parts.push(key, JSON.stringify(await client.hGetAll(key)));
          else if (type === 'zset') parts.push(key, JSON.stringify(await client.zRange(key, 0, -1)));
          else if (type === 'set') parts.push(key, JSON.stringify(await client.sMembers(key)));
          else if (type === 'list') parts.push(key, JSON.stringify(await client.lRange(key, 0, -1)));
          else throw new Error(`unexpected Redis type ${type} at ${key}`);
        }
        return parts.join('\n');
      } finally {
        await client.close();
      }
    },
    cleanup: async () => {
      if (REDIS_URL !== undefined) await deleteKeys(prefix);
    },
  };
}

function postgresStore(): StoreKind {
  const schema = uniqueSchema('secrets');
  return {
    name: 'postgres',
    skip: withoutPostgres('secrets at rest on PostgreSQL'),
    open: async () => {
      const postgres = await createPostgresStore({ connectionString: DATABASE_URL as string, schema });
      return { options: { store: postgres }, close: postgres.close };
    },
    // Every row of every table of the schema, as the database renders it: whatever the store wrote, wherever.
    dump: async () => {
      const tables = await sql<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1", [schema]);
      expect(tables.map((table) => table.name)).toContain('records');
      const parts: string[] = [];
      for (const { name } of tables) {
        const rows = await sql<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM "${schema}"."${name}" t`);
        parts.push(name, ...rows.map((row) => row.row));
      }
      return parts.join('\n');
    },
    cleanup: async () => {
      if (DATABASE_URL !== undefined) await dropSchemas(schema);
    },
  };
}

const STORES = [memoryStore(), sqliteStore(), redisStore(), postgresStore()];
afterAll(async () => {
  for (const store of STORES) await store.cleanup();
});

/** A webhook receiver that keeps every delivery. */
async function receiver(): Promise<Listening & { deliveries: { headers: IncomingHttpHeaders; body: string }[] }> {
  const deliveries: { headers: IncomingHttpHeaders; body: string }[] = [];
  const listening = await listen(async (req, res) => {
    deliveries.push({ headers: req.headers, body: await readBody(req) });
    res.writeHead(204).end();
  });
  return { ...listening, deliveries };
}

const upstreams = await (async () => {
  const bearer = await startV2ToolServer({ authorize: (header) => header === `Bearer ${TOKEN}` });
  const auth = await startAuthServer({ clientId: 'fleet-client', clientSecret: CLIENT_SECRET });
  const oauth = await startV2ToolServer({ authorize: (header) => auth.accepts(header) });
  const hooks = await receiver();
  return { bearer, auth, oauth, hooks };
})();
afterAll(async () => {
  for (const server of Object.values(upstreams)) await server.close();
});

const fleetOptions = (store: Store, keys: Pick<FleetOptions, 'encryptionKey' | 'previousKeys'>): FleetOptions => ({
  ...store.options,
  ...keys,
  allowPrivateNetworks: true,
  stdio: { commands: ['node'] },
  rateLimit: false,
  logger: quiet,
  webhooks: { pollIntervalMs: 20 },
});

/** A fleet over the store, closed (fleet, then store) by `close`. */
async function start(kind: StoreKind, keys: Pick<FleetOptions, 'encryptionKey' | 'previousKeys'>) {
  const store = await kind.open();
  const fleet = createFleet(fleetOptions(store, keys));
  return {
    fleet,
    close: async () => {
      await fleet.close();
      await store.close();
    },
  };
}

async function createServers(fleet: Fleet) {
  const bearer = (await fleet.servers.create(ACCOUNT, { name: 'bearer', type: 'http', endpoint: upstreams.bearer.url, authentication: { type: 'bearer', token: TOKEN } }))._unsafeUnwrap();
  const oauth = (
    await fleet.servers.create(ACCOUNT, {
      name: 'oauth',
      type: 'http',
      endpoint: upstreams.oauth.url,
      authentication: { type: 'oauth2', client_id: 'fleet-client', client_secret: CLIENT_SECRET, token_url: upstreams.auth.tokenUrl },
    })
  )._unsafeUnwrap();
  const stdio = (await fleet.servers.create(ACCOUNT, { name: 'stdio', type: 'stdio', command: 'node', args: [ECHO_SERVER], env: { FIXTURE_SECRET: ENV_VALUE } }))._unsafeUnwrap();
  return { bearer: bearer.id, oauth: oauth.id, stdio: stdio.id };
}

/** Every secret is used for real: both HTTP servers answer probes and calls with their credentials, stdio gets its env. */
async function expectSecretsWork(fleet: Fleet, ids: { bearer: string; oauth: string; stdio: string }) {
  for (const id of [ids.bearer, ids.oauth, ids.stdio]) {
    expect((await fleet.servers.health(ACCOUNT, id))._unsafeUnwrap()).toMatchObject({ status: 'healthy', error: null });
  }
  for (const id of [ids.bearer, ids.oauth]) {
    const call = (await fleet.tools.call(ACCOUNT, id, 'echo', { text: 'hi' }))._unsafeUnwrap();
    expect(call.status).toBe('success');
    expect(call.result?.content).toEqual([{ type: 'text', text: 'hi' }]);
  }
  const env = (await fleet.tools.call(ACCOUNT, ids.stdio, 'echo', { env: 'FIXTURE_SECRET' }))._unsafeUnwrap();
  expect(env.result?.content).toEqual([{ type: 'text', text: ENV_VALUE }]);
}

/** Waits for a delivery of an event of the server `id` (of type `type`), and checks its signature with `secret`. */
async function expectSignedDelivery(id: string, secret: string, type = 'server.created') {
  const ours = (d: { body: string }) => d.body.includes(`"id":"${id}"`) && d.body.includes(`"type":"${type}"`);
  await vi.waitFor(() => expect(upstreams.hooks.deliveries.some(ours)).toBe(true), { timeout: 10_000 });
  const delivery = upstreams.hooks.deliveries.find(ours);
  expect(verify(secret, delivery?.body ?? '', delivery?.headers ?? {}).isOk()).toBe(true);
}

function expectNoSecrets(dump: string, secrets: readonly string[]) {
  for (const secret of secrets) {
    for (const form of [secret, Buffer.from(secret).toString('base64'), Buffer.from(secret).toString('hex')]) expect(dump).not.toContain(form);
  }
}

describe.each(STORES)('secrets at rest ($name store)', (kind) => {
  it.skipIf(kind.skip)('are encrypted, still work, rotate to a new key; a wrong key or none fails at start', { timeout: 60_000 }, async () => {
    // Under K1: a webhook, then three servers whose creation it is told of.
    const first = await start(kind, { encryptionKey: K1 });
    await first.fleet.ready();
    const webhook = (await first.fleet.webhooks!.create(ACCOUNT, { url: `${upstreams.hooks.origin}/hook`, events: ['server.created'] }))._unsafeUnwrap();
    const ids = await createServers(first.fleet);
    await expectSecretsWork(first.fleet, ids);
    await expectSignedDelivery(ids.stdio, webhook.secret);
    // A change of an unrelated field keeps the secrets working (the update opened and sealed them again).
    (await first.fleet.servers.update(ACCOUNT, ids.bearer, { timeout: 20_000 }))._unsafeUnwrap();
    await first.close();

    const secrets = [TOKEN, CLIENT_SECRET, ENV_VALUE, webhook.secret];
    const sealed = await kind.dump();
    expect(sealed).toContain('enc:v1:');
    expectNoSecrets(sealed, secrets);

    // Rotation: K2 seals, K1 still opens; everything moves to K2, once.
    const rotating = await start(kind, { encryptionKey: K2, previousKeys: [K1] });
    await rotating.fleet.ready();
    expect((await rotating.fleet.secrets.rotate())._unsafeUnwrap()).toEqual({ servers: 3, webhooks: 1 });
    expect((await rotating.fleet.secrets.rotate())._unsafeUnwrap()).toEqual({ servers: 0, webhooks: 0 });
    await rotating.close();

    // The old key alone, or no key, no longer opens the store: the start fails and says what to set.
    for (const keys of [{ encryptionKey: K1 }, {}]) {
      const wrong = await start(kind, keys);
      const failure = await wrong.fleet.ready().then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(failure?.message).toMatch(/encryptionKey/);
      expect(failure?.message).toMatch(/MCP_FLEET_ENCRYPTION_KEY/);
      if ('encryptionKey' in keys) expect(failure?.message).toMatch(/previousKeys/);
      // Listings never open a secret; what uses one fails with the start's error instead of sealing under a wrong key.
      expect((await wrong.fleet.servers.list(ACCOUNT))._unsafeUnwrap().data).toHaveLength(3);
      expect((await wrong.fleet.servers.health(ACCOUNT, ids.bearer))._unsafeUnwrapErr().message).toBe(failure?.message);
      await wrong.close();
    }

    // K2 alone opens everything; the secrets still work, and a new delivery is signed with the same secret.
    const rotated = await start(kind, { encryptionKey: K2 });
    await rotated.fleet.ready();
    await expectSecretsWork(rotated.fleet, ids);
    const later = (await rotated.fleet.servers.create(ACCOUNT, { name: 'after-rotation', type: 'http', endpoint: upstreams.bearer.url }))._unsafeUnwrap();
    await expectSignedDelivery(later.id, webhook.secret);
    await rotated.close();
    expectNoSecrets(await kind.dump(), secrets);
  });

  it.skipIf(kind.skip)("an oauth2 private_key (private_key_jwt) is sealed like a client secret", { timeout: 30_000 }, async () => {
    const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    // K2: the key the test above leaves the store under.
    const sealed = await start(kind, { encryptionKey: K2 });
    await sealed.fleet.ready();
    const authentication = { type: 'oauth2' as const, client_id: 'jwt-client', private_key: pem, token_url: upstreams.auth.tokenUrl };
    const server = (await sealed.fleet.servers.create(ACCOUNT, { name: `jwt-${randomBytes(3).toString('hex')}`, type: 'http', endpoint: upstreams.oauth.url, authentication }))._unsafeUnwrap();
    await sealed.close();
    const dump = await kind.dump();
    // Every line of the key's body, as stored text may escape the line breaks.
    for (const line of pem.split('\n').filter((text) => text !== '' && !text.startsWith('-----'))) expect(dump).not.toContain(line);
    const again = await start(kind, { encryptionKey: K2 });
    expect((await again.fleet.servers.get(ACCOUNT, server.id))._unsafeUnwrap().authentication).toMatchObject({ type: 'oauth2', client_id: 'jwt-client' });
    await again.close();
  });
});

describe('secrets written before encryption was turned on', () => {
  it('stay readable with a key, and rotate() encrypts them', { timeout: 30_000 }, async () => {
    const kind = memoryStore();
    const plain = await start(kind, {});
    await plain.fleet.ready();
    const webhook = (await plain.fleet.webhooks!.create(ACCOUNT, { url: `${upstreams.hooks.origin}/hook`, events: ['server.deleted'] }))._unsafeUnwrap();
    const ids = await createServers(plain.fleet);
    await plain.close();
    // Without a key the store holds them as they are: what the encrypted case above asserts is not vacuous.
    const before = await kind.dump();
    for (const secret of [TOKEN, CLIENT_SECRET, ENV_VALUE, webhook.secret]) expect(before).toContain(secret);

    const keyed = await start(kind, { encryptionKey: K1 });
    await keyed.fleet.ready();
    await expectSecretsWork(keyed.fleet, ids);
    expect((await keyed.fleet.secrets.rotate())._unsafeUnwrap()).toEqual({ servers: 3, webhooks: 1 });
    await keyed.close();
    expectNoSecrets(await kind.dump(), [TOKEN, CLIENT_SECRET, ENV_VALUE, webhook.secret]);

    const after = await start(kind, { encryptionKey: K1 });
    await after.fleet.ready();
    await expectSecretsWork(after.fleet, ids);
    (await after.fleet.servers.delete(ACCOUNT, ids.stdio))._unsafeUnwrap();
    await expectSignedDelivery(ids.stdio, webhook.secret, 'server.deleted');
    await after.close();
  });
});

describe('encryption options', () => {
  it('without a key, one warning at start names the option; with one, none', async () => {
    const warn = vi.fn();
    const logger = { info: () => {}, warn, error: () => {} };
    const plain = createFleet({ logger, rateLimit: false });
    await plain.ready();
    await plain.close();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]?.[1]).toMatch(/plaintext.*encryptionKey.*MCP_FLEET_ENCRYPTION_KEY/);

    warn.mockClear();
    const keyed = createFleet({ logger, rateLimit: false, encryptionKey: K1 });
    await keyed.ready();
    await keyed.close();
    expect(warn).not.toHaveBeenCalled();
  });

  it('a key that is not 32 bytes is refused at createFleet, naming the option and not the value', () => {
    expect(() => createFleet({ encryptionKey: 'c2hvcnQ=' })).toThrow(/encryptionKey must be 32 bytes/);
    expect(() => createFleet({ encryptionKey: randomBytes(16) })).toThrow(/encryptionKey must be 32 bytes/);
    expect(() => createFleet({ encryptionKey: K1, previousKeys: [K2, 'not base64!'] })).toThrow(/previousKeys\[1\] must be 32 bytes/);
    expect(() => createFleet({ encryptionKey: K1, previousKeys: [K2, 'not base64!'] })).not.toThrow(/not base64/);
  });

  it('a ciphertext copied into another record does not open there', async () => {
    const kind = memoryStore();
    const opened = await start(kind, { encryptionKey: K1 });
    const a = (await opened.fleet.servers.create(ACCOUNT, { name: 'a', type: 'http', endpoint: upstreams.bearer.url, authentication: { type: 'bearer', token: TOKEN } }))._unsafeUnwrap();
    const b = (await opened.fleet.servers.create('other', { name: 'b', type: 'http', endpoint: upstreams.bearer.url, authentication: { type: 'bearer', token: 'mine' } }))._unsafeUnwrap();
    const keyv = (await kind.open()).options.store?.records as Keyv;
    const stolen = (await keyv.get<{ config: { authentication: { token: string } } }>(`mcp-fleet:server:${a.id}`))?.config.authentication.token;
    const target = await keyv.get<{ config: { authentication: { token: string } } }>(`mcp-fleet:server:${b.id}`);
    expect(stolen).toMatch(/^enc:v1:/);
    if (target === undefined || stolen === undefined) throw new Error('records missing');
    target.config.authentication.token = stolen;
    await keyv.set(`mcp-fleet:server:${b.id}`, target);
    // The ciphertext is bound to server a's token: under b it does not open, so b's probe never sends a's token.
    expect((await opened.fleet.servers.health('other', b.id))._unsafeUnwrapErr().code).toBe('INTERNAL_ERROR');
    await opened.close();
  });
});
