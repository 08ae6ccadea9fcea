import Keyv from 'keyv';
import { createRedisStore, type RedisStore } from '@mcp-fleet/redis';
import { createMemoryStore } from '@mcp-fleet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../packages/core/src/auth/api-keys.js';
import { startV2ToolServer, type ToolServer } from '../../packages/core/src/mcp/fixtures/tool-servers.js';
import { ADAPTERS, serveFleet, type Served } from '../support/adapters.js';
import { api, type ApiClient, createServer, expectError, expectSuccess, serveForSuite, uniqueName } from '../support/http-client.js';
import { deleteKeys, REDIS_URL, uniquePrefix, withoutRedis } from '../support/redis.js';

// CONTRACT "The MCP endpoint", "Tool allowlists per key": on the REST call a tool outside the key's `tools` globs
// (over `{prefix}__{tool}`) is 403 FORBIDDEN with details.tool, before anything is sent or recorded.

let upstream: ToolServer;
beforeAll(async () => {
  upstream = await startV2ToolServer();
});
afterAll(async () => {
  await upstream.close();
});

let accounts = 0;
async function keyClient(served: Served, tools?: string[] | null): Promise<ApiClient & { account: string }> {
  accounts += 1;
  const account = `allow-${accounts}-${Math.random().toString(36).slice(2, 8)}`;
  const created = (await served.fleet.keys.create({ account, tier: 'pro', ...(tools !== undefined && { tools }) }))._unsafeUnwrap();
  return Object.assign(api(served, created.secret), { account });
}

/** A key of the same account without a list, to set up servers and read the log. */
async function adminOf(served: Served, account: string): Promise<ApiClient> {
  return api(served, (await served.fleet.keys.create({ account, tier: 'pro' }))._unsafeUnwrap().secret);
}

/** `pagination.total` of the account's tool-call log (`GET /tool-calls`). */
async function calls(client: ApiClient, query = ''): Promise<number> {
  const res = await client.get(`/tool-calls${query}`);
  expectSuccess(res, 200);
  return res.body.pagination.total;
}

const callBody = (name: string) => ({ name, arguments: name === 'echo' ? { text: 'allowed' } : {} });

describe.each(ADAPTERS)('tool allowlists on POST /servers/{id}/tools/call ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { allowPrivateNetworks: true, onError: () => {} });

  it('a tool outside the list is 403 FORBIDDEN with details.tool: nothing recorded, nothing sent upstream', async () => {
    const name = uniqueName('search');
    const client = await keyClient(suite.served, [`${name}__echo`, 'other__*']);
    const admin = await adminOf(suite.served, client.account);
    const { id } = await createServer(admin, { name, type: 'http', endpoint: upstream.url });
    const seen = upstream.methods.length;

    for (const tool of ['fail', 'slow', 'echo2', 'nonexistent']) {
      const denied = await client.post(`/servers/${id}/tools/call`, callBody(tool));
      expectError(denied, 403, 'FORBIDDEN', { tool });
      expect(denied.body.error.message).toContain('`tools`');
    }
    expect(upstream.methods.length).toBe(seen);
    expect(await calls(admin)).toBe(0);
    expect(await calls(admin, `?server_id=${id}`)).toBe(0);

    const allowed = expectSuccess(await client.post(`/servers/${id}/tools/call`, callBody('echo')), 200);
    expect(allowed).toMatchObject({ tool: 'echo', status: 'success', via: 'http' });
    expect(allowed.result.content[0].text).toBe('allowed');
    expect(upstream.methods).toContain('tools/call');
    expect(await calls(admin)).toBe(1);
  });

  it('globs match the namespaced name: a name prefix when the server name is an identifier, else the id', async () => {
    const named = uniqueName('files');
    const probe = await keyClient(suite.served);
    const admin = await adminOf(suite.served, probe.account);
    const byName = await createServer(admin, { name: named, type: 'http', endpoint: upstream.url });
    // Not an identifier (a space): its tools are `{id}__{tool}`.
    const spaced = await createServer(admin, { name: `${uniqueName('weather')} eu`, type: 'http', endpoint: upstream.url });

    const keyFor = async (tools: string[]) =>
      api(suite.served, (await suite.served.fleet.keys.create({ account: probe.account, tools }))._unsafeUnwrap().secret);
    const call = async (client: ApiClient, id: string) => (await client.post(`/servers/${id}/tools/call`, callBody('echo'))).status;

    const byNameKey = await keyFor([`${named}__*`]);
    expect(await call(byNameKey, byName.id)).toBe(200);
    expect(await call(byNameKey, spaced.id)).toBe(403);

    const byIdKey = await keyFor([`${spaced.id}__echo`, `${byName.id}__*`]);
    expect(await call(byIdKey, spaced.id)).toBe(200);
    // The server with an identifier name is known by its name, not its id.
    expect(await call(byIdKey, byName.id)).toBe(403);

    const everything = await keyFor(['*']);
    expect(await call(everything, byName.id)).toBe(200);
    expect(await call(everything, spaced.id)).toBe(200);
    // `*` spans the separator; other characters stand for themselves.
    const crossing = await keyFor(['*echo']);
    expect(await call(crossing, spaced.id)).toBe(200);
  });

  it('another account’s server is still 404, whatever the list (existence is never revealed)', async () => {
    const owner = await keyClient(suite.served);
    const { id } = await createServer(owner, { name: uniqueName('theirs'), type: 'http', endpoint: upstream.url });
    const stranger = await keyClient(suite.served, ['nothing__*']);
    expectError(await stranger.post(`/servers/${id}/tools/call`, callBody('echo')), 404, 'SERVER_NOT_FOUND');
  });

  it('a key without a list (null) calls every tool', async () => {
    const client = await keyClient(suite.served, null);
    const { id } = await createServer(client, { name: uniqueName('open'), type: 'http', endpoint: upstream.url });
    expectSuccess(await client.post(`/servers/${id}/tools/call`, callBody('echo')), 200);
    expect(expectSuccess(await client.post(`/servers/${id}/tools/call`, callBody('fail')), 200)).toMatchObject({ status: 'error' });
  });
});

describe.each(ADAPTERS)('tool allowlists from a custom authenticate ($name)', (adapter) => {
  let served: Served;
  beforeAll(async () => {
    served = await serveFleet(adapter, {
      allowPrivateNetworks: true,
      onError: () => {},
      authenticate: (request) => {
        const token = request.headers.get('authorization');
        if (token === 'Bearer limited') return { account: 'custom-auth', tier: 'pro', scopes: null, tools: ['*__echo'] };
        if (token === 'Bearer open') return { account: 'custom-auth', tier: 'pro', scopes: null };
        if (token === 'Bearer broken') return { account: 'custom-auth', tier: 'pro', scopes: null, tools: 'x__*' as never };
        return null;
      },
    });
  });
  afterAll(async () => {
    await served.close();
  });

  it('the principal’s tools are enforced; a principal without tools calls every tool; a malformed list is refused', async () => {
    const open = api(served, 'open');
    const { id } = await createServer(open, { name: uniqueName('custom'), type: 'http', endpoint: upstream.url });
    const limited = api(served, 'limited');
    expectSuccess(await limited.post(`/servers/${id}/tools/call`, callBody('echo')), 200);
    expectError(await limited.post(`/servers/${id}/tools/call`, callBody('fail')), 403, 'FORBIDDEN', { tool: 'fail' });
    expectSuccess(await open.post(`/servers/${id}/tools/call`, callBody('fail')), 200);
    expect((await api(served, 'broken').post(`/servers/${id}/tools/call`, callBody('echo'))).status).toBe(500);
    expect(await calls(open)).toBe(2);
  });
});

describe('tool allowlists on stored keys', () => {
  async function stripTools(storage: Keyv, name: string): Promise<void> {
    const { tools: _tools, ...old } = (await storage.get(name)) as Record<string, unknown>;
    await storage.set(name, old);
  }

  it('a key stored before allowlists existed (no `tools` in its records) still works, for every tool', async () => {
    const storage = new Keyv({ store: new Map(), throwOnErrors: true });
    const served = await serveFleet(ADAPTERS[0] as (typeof ADAPTERS)[number], { store: createMemoryStore({ records: storage }), allowPrivateNetworks: true });
    try {
      const client = await keyClient(served, ['none__*']);
      // A key with a list holds no servers:write unless it says so: a key of the same account without one creates.
      const { id } = await createServer(await adminOf(served, client.account), { name: uniqueName('old'), type: 'http', endpoint: upstream.url });
      expectError(await client.post(`/servers/${id}/tools/call`, callBody('echo')), 403, 'FORBIDDEN');
      const [key] = (await served.fleet.keys.list(client.account))._unsafeUnwrap().data;
      await stripTools(storage, `mcp-fleet:apikey:${key?.id}`);
      await stripTools(storage, `mcp-fleet:apikey-hash:${hashSecret(client.key as string)}`);
      expect((await served.fleet.keys.list(client.account))._unsafeUnwrap().data[0]?.tools).toBeNull();
      expectSuccess(await client.post(`/servers/${id}/tools/call`, callBody('echo')), 200);
    } finally {
      await served.close();
    }
  });
});

describe.skipIf(withoutRedis('tool allowlists on Redis'))('tool allowlists on Redis', () => {
  const keyPrefix = uniquePrefix('allowlists');
  let redis: RedisStore;
  beforeAll(async () => {
    redis = await createRedisStore({ url: REDIS_URL as string, keyPrefix });
  });
  afterAll(async () => {
    await redis?.close();
    await deleteKeys(keyPrefix);
  });

  it.each(ADAPTERS)('keys on Redis carry their list to verification, and old entries read as every tool ($name)', async (adapter) => {
    const served = await serveFleet(adapter, { store: redis, allowPrivateNetworks: true });
    try {
      const name = uniqueName('redis');
      const client = await keyClient(served, [`${name}__echo`]);
      const { id } = await createServer(await adminOf(served, client.account), { name, type: 'http', endpoint: upstream.url });
      expectSuccess(await client.post(`/servers/${id}/tools/call`, callBody('echo')), 200);
      expectError(await client.post(`/servers/${id}/tools/call`, callBody('fail')), 403, 'FORBIDDEN', { tool: 'fail' });
      expect(await calls(client)).toBe(1);
      expect((await served.fleet.keys.list(client.account))._unsafeUnwrap().data[0]?.tools).toEqual([`${name}__echo`]);

      // The same key as an earlier version stored it: the Redis records without `tools`.
      const [key] = (await served.fleet.keys.list(client.account))._unsafeUnwrap().data;
      const hashEntry = `apikey-hash:${hashSecret(client.key as string)}`;
      for (const record of [`apikey:${key?.id}`, hashEntry]) {
        const { tools: _tools, ...old } = (await redis.records.get(record)) as Record<string, unknown>;
        await redis.records.set(record, old);
      }
      expect(JSON.stringify(await redis.records.get(hashEntry))).not.toContain('tools');
      expectSuccess(await client.post(`/servers/${id}/tools/call`, callBody('fail')), 200);
      expect((await served.fleet.keys.list(client.account))._unsafeUnwrap().data[0]?.tools).toBeNull();
    } finally {
      await served.close();
    }
  });
});
