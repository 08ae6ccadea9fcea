import { createRedisStore, type RedisStore } from '@mcp-fleet/redis';
import { afterAll, describe, expect, it } from 'vitest';
import { ADAPTERS, type Served, serveFleet } from '../support/adapters.js';
import {
  createServer,
  DETAIL_FIELDS,
  expectError,
  expectInvalid,
  expectSuccess,
  freshClient,
  httpServer,
  ISO_MS,
  type Json,
  api,
  createKey,
  SERVER_ID,
  serveForSuite,
  stdioServer,
  SUMMARY_FIELDS,
  total,
  uniqueName,
  UNKNOWN_SERVER_ID,
  wsServer,
} from '../support/http-client.js';
import { deleteKeys, REDIS_URL, uniquePrefix, withoutRedis } from '../support/redis.js';

describe.each(ADAPTERS)('servers CRUD ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { stdio: { commands: ['node'] } });

  describe('create', () => {
    it('answers 201 with exactly the eight fields', async () => {
      const client = await freshClient(suite.served);
      const before = Date.now();
      const res = await client.post(
        '/servers',
        httpServer({
          name: 'alpha',
          endpoint: 'https://mcp.example.com/mcp',
          authentication: { type: 'bearer', token: 'tok-123456' },
          timeout: 5000,
          retry: { enabled: true, max_attempts: 4, backoff: 'exponential' },
        }),
      );
      const data = expectSuccess(res, 201);
      expect(Object.keys(data).sort()).toEqual(SUMMARY_FIELDS);
      expect(data).toMatchObject({
        name: 'alpha',
        type: 'http',
        endpoint: 'https://mcp.example.com/mcp',
        status: 'active',
        health: 'unknown',
      });
      expect(data.id).toMatch(SERVER_ID);
      expect(data.created_at).toMatch(ISO_MS);
      expect(data.updated_at).toBe(data.created_at);
      expect(Date.parse(data.created_at)).toBeGreaterThanOrEqual(before - 5);
      expect(Date.parse(data.created_at)).toBeLessThanOrEqual(Date.now() + 5);
      for (const field of ['authentication', 'timeout', 'retry']) expect(data).not.toHaveProperty(field);
    });

    it('a websocket server keeps its ws endpoint; ids are distinct', async () => {
      const client = await freshClient(suite.served);
      const a = await createServer(client, wsServer({ endpoint: 'ws://mcp.example.com:8080/ws' }));
      const b = await createServer(client, wsServer());
      expect(a.type).toBe('websocket');
      expect(a.endpoint).toBe('ws://mcp.example.com:8080/ws');
      expect(a.id).not.toBe(b.id);
    });

    it('a stdio server without endpoint returns endpoint null', async () => {
      const client = await freshClient(suite.served);
      const data = await createServer(client, stdioServer({ env: { TOKEN: 'abc' }, working_directory: '/srv/app' }));
      expect(Object.keys(data).sort()).toEqual(SUMMARY_FIELDS);
      expect(data.type).toBe('stdio');
      expect(data.endpoint).toBeNull();
      expect(data).not.toHaveProperty('command');
      expect(data).not.toHaveProperty('env');
    });

    it('a stdio server may carry an endpoint', async () => {
      const client = await freshClient(suite.served);
      const data = await createServer(client, stdioServer({ endpoint: 'https://docs.example.com' }));
      expect(data.endpoint).toBe('https://docs.example.com');
    });

    it('list items have exactly the eight fields too', async () => {
      const client = await freshClient(suite.served);
      await createServer(client, httpServer({ authentication: { type: 'bearer', token: 'abc' }, timeout: 100, retry: { enabled: true } }));
      await createServer(client, stdioServer({ env: { A: 'b' } }));
      const res = await client.get('/servers');
      const data = expectSuccess(res, 200);
      expect(data).toHaveLength(2);
      for (const item of data) expect(Object.keys(item).sort()).toEqual(SUMMARY_FIELDS);
    });
  });

  describe('get', () => {
    it('an http server: the eight fields plus the configuration, defaults filled', async () => {
      const client = await freshClient(suite.served);
      const created = await createServer(client, httpServer({ name: 'getme', authentication: { type: 'bearer', token: 'tok-abc' } }));
      const data = expectSuccess(await client.get(`/servers/${created.id}`), 200);
      expect(Object.keys(data).sort()).toEqual(DETAIL_FIELDS);
      expect(data).toEqual({
        ...created,
        timeout: 30000,
        retry: null,
        heartbeat: null,
        command: null,
        args: null,
        working_directory: null,
        authentication: { type: 'bearer' },
        env_keys: null,
      });
    });

    it('a websocket server with oauth2 and heartbeat', async () => {
      const client = await freshClient(suite.served);
      const created = await createServer(
        client,
        wsServer({
          authentication: { type: 'oauth2', client_id: 'client-1', client_secret: 'cs-1' },
          heartbeat: { enabled: true, interval: 15000 },
          retry: { enabled: true, max_attempts: 2 },
          timeout: 1,
        }),
      );
      const data = expectSuccess(await client.get(`/servers/${created.id}`), 200);
      expect(Object.keys(data).sort()).toEqual(DETAIL_FIELDS);
      expect(data.authentication).toEqual({ type: 'oauth2', client_id: 'client-1' });
      expect(data.heartbeat).toEqual({ enabled: true, interval: 15000 });
      expect(data.retry).toEqual({ enabled: true, max_attempts: 2, backoff: 'exponential' });
      expect(data.timeout).toBe(1);
    });

    it('oauth2 token_url and scope are shown, the secret is not', async () => {
      const client = await freshClient(suite.served);
      const created = await createServer(
        client,
        httpServer({
          authentication: { type: 'oauth2', client_id: 'cid', client_secret: 'csec', token_url: 'https://auth.example.com/token', scope: 'mcp' },
        }),
      );
      const data = expectSuccess(await client.get(`/servers/${created.id}`), 200);
      expect(data.authentication).toEqual({ type: 'oauth2', client_id: 'cid', token_url: 'https://auth.example.com/token', scope: 'mcp' });
    });

    it('a stdio server shows command, args, working_directory and sorted env_keys', async () => {
      const client = await freshClient(suite.served);
      const created = await createServer(
        client,
        stdioServer({ args: ['a', 'b'], env: { ZED: '1', ALPHA: '2', MIDDLE: '3' }, working_directory: '/opt/srv' }),
      );
      const data = expectSuccess(await client.get(`/servers/${created.id}`), 200);
      expect(Object.keys(data).sort()).toEqual(DETAIL_FIELDS);
      expect(data).toMatchObject({
        endpoint: null,
        command: 'node',
        args: ['a', 'b'],
        working_directory: '/opt/srv',
        env_keys: ['ALPHA', 'MIDDLE', 'ZED'],
        authentication: null,
        heartbeat: null,
        timeout: 30000,
      });
    });

    it('an unknown id is 404 SERVER_NOT_FOUND with details.server_id', async () => {
      const client = await freshClient(suite.served);
      expectError(await client.get(`/servers/${UNKNOWN_SERVER_ID}`), 404, 'SERVER_NOT_FOUND', { server_id: UNKNOWN_SERVER_ID });
    });
  });

  describe('update', () => {
    async function setup(body: Record<string, unknown> = httpServer()) {
      const client = await freshClient(suite.served);
      const created = await createServer(client, body);
      const get = async (): Promise<Json> => expectSuccess(await client.get(`/servers/${created.id}`), 200);
      const put = (patch: unknown) => client.put(`/servers/${created.id}`, patch);
      return { client, created, get, put };
    }

    it('changes only the fields given and answers the get shape', async () => {
      const { created, get, put } = await setup(httpServer({ timeout: 1234, authentication: { type: 'bearer', token: 'x' } }));
      const before = await get();
      const res = await put({ timeout: 4321 });
      const data = expectSuccess(res, 200);
      expect(Object.keys(data).sort()).toEqual(DETAIL_FIELDS);
      expect(data).toEqual({ ...before, timeout: 4321, updated_at: data.updated_at });
      expect(data.name).toBe(created.name);
      expect(data.authentication).toEqual({ type: 'bearer' });
      expect(await get()).toEqual(data);
    });

    it('updated_at strictly moves on every update; created_at never does', async () => {
      const { created, put } = await setup();
      const first = expectSuccess(await put({ timeout: 100 }), 200);
      const second = expectSuccess(await put({ timeout: 200 }), 200);
      const third = expectSuccess(await put({ timeout: 300 }), 200);
      for (const d of [first, second, third]) {
        expect(d.created_at).toBe(created.created_at);
        expect(d.updated_at).toMatch(ISO_MS);
      }
      expect(Date.parse(first.updated_at)).toBeGreaterThan(Date.parse(created.updated_at));
      expect(Date.parse(second.updated_at)).toBeGreaterThan(Date.parse(first.updated_at));
      expect(Date.parse(third.updated_at)).toBeGreaterThan(Date.parse(second.updated_at));
    });

    it('replaces nested objects whole: retry {enabled:true,max_attempts:5} then {enabled:false} → max_attempts 3', async () => {
      const { put, get } = await setup();
      expect(expectSuccess(await put({ retry: { enabled: true, max_attempts: 5 } }), 200).retry).toEqual({
        enabled: true,
        max_attempts: 5,
        backoff: 'exponential',
      });
      expect(expectSuccess(await put({ retry: { enabled: false } }), 200).retry).toEqual({
        enabled: false,
        max_attempts: 3,
        backoff: 'exponential',
      });
      expect((await get()).retry).toEqual({ enabled: false, max_attempts: 3, backoff: 'exponential' });
    });

    it('replaces authentication whole (bearer → oauth2)', async () => {
      const { put } = await setup(httpServer({ authentication: { type: 'bearer', token: 'abc' } }));
      const data = expectSuccess(await put({ authentication: { type: 'oauth2', client_id: 'c', client_secret: 's' } }), 200);
      expect(data.authentication).toEqual({ type: 'oauth2', client_id: 'c' });
      // a partial authentication object is not merged with the stored one
      expectInvalid(await put({ authentication: { type: 'oauth2', client_id: 'other' } }), 'authentication.client_secret');
    });

    it('replaces heartbeat and env whole', async () => {
      const ws = await setup(wsServer({ heartbeat: { enabled: true, interval: 5000 } }));
      expect(expectSuccess(await ws.put({ heartbeat: { enabled: false } }), 200).heartbeat).toEqual({ enabled: false, interval: 30000 });
      const stdio = await setup(stdioServer({ env: { A: '1', B: '2' } }));
      expect(expectSuccess(await stdio.put({ env: { C: '3' } }), 200).env_keys).toEqual(['C']);
    });

    it('null clears an optional field: timeout → 30000, authentication → null, retry → null', async () => {
      const { put, get } = await setup(
        httpServer({ timeout: 999, authentication: { type: 'bearer', token: 'abc' }, retry: { enabled: true, max_attempts: 7 } }),
      );
      expect(expectSuccess(await put({ timeout: null }), 200).timeout).toBe(30000);
      expect(expectSuccess(await put({ authentication: null }), 200).authentication).toBeNull();
      expect(expectSuccess(await put({ retry: null }), 200).retry).toBeNull();
      const now = await get();
      expect(now).toMatchObject({ timeout: 30000, authentication: null, retry: null });
    });

    it('null on a stdio server clears env, args and working_directory', async () => {
      const { put } = await setup(stdioServer({ env: { A: '1' }, working_directory: '/tmp', endpoint: 'https://docs.example.com' }));
      const data = expectSuccess(await put({ env: null, args: null, working_directory: null, endpoint: null }), 200);
      expect(data).toMatchObject({ env_keys: null, args: null, working_directory: null, endpoint: null, command: 'node' });
    });

    it('null on a required field is 400 and nothing changes', async () => {
      const { put, get } = await setup();
      const before = await get();
      expectInvalid(await put({ name: null }), 'name');
      expectInvalid(await put({ endpoint: null }), 'endpoint');
      expect(await get()).toEqual(before);
    });

    it('an invalid result is 400 and nothing changes', async () => {
      const { put, get } = await setup(httpServer({ timeout: 777 }));
      const before = await get();
      expectInvalid(await put({ timeout: 0 }), 'timeout');
      expectInvalid(await put({ name: 'ok-name', timeout: 300001 }), 'timeout');
      expectInvalid(await put({ endpoint: 'wss://wrong.example.com' }), 'endpoint');
      expectInvalid(await put({ heartbeat: { enabled: true } }), 'heartbeat');
      expectInvalid(await put({ command: 'node' }), 'command');
      expectInvalid(await put({ id: UNKNOWN_SERVER_ID }), 'id');
      expectInvalid(await put({ status: 'active' }), 'status');
      expectInvalid(await put({ bogus: 1 }), 'bogus');
      expect(await get()).toEqual(before);
    });

    it('changing the type must give a valid configuration of the new type', async () => {
      const { put, get } = await setup(httpServer({ endpoint: 'https://a.example.com' }));
      const before = await get();
      expectInvalid(await put({ type: 'websocket' }), 'endpoint');
      expect(await get()).toEqual(before);
      const data = expectSuccess(await put({ type: 'websocket', endpoint: 'wss://a.example.com' }), 200);
      expect(data).toMatchObject({ type: 'websocket', endpoint: 'wss://a.example.com', heartbeat: null });
    });

    it('an empty body {} is 400', async () => {
      const { put, get } = await setup();
      const before = await get();
      expectInvalid(await put({}), 'body');
      expect(await get()).toEqual(before);
    });

    it('renaming to an existing name is 409 SERVER_NAME_EXISTS and nothing changes', async () => {
      const { client, put, get } = await setup();
      const other = await createServer(client, httpServer({ name: 'taken' }));
      const before = await get();
      expectError(await put({ name: 'taken', timeout: 5 }), 409, 'SERVER_NAME_EXISTS', { name: 'taken' });
      expect(await get()).toEqual(before);
      expect(expectSuccess(await client.get(`/servers/${other.id}`), 200).name).toBe('taken');
    });

    it('renaming to its own name is fine', async () => {
      const { created, put } = await setup();
      expect(expectSuccess(await put({ name: created.name }), 200).name).toBe(created.name);
    });

    it('renaming frees the old name for a new server', async () => {
      const { client, created, put } = await setup(httpServer({ name: 'old-name' }));
      expect(expectSuccess(await put({ name: 'new-name' }), 200).name).toBe('new-name');
      const again = await createServer(client, httpServer({ name: 'old-name' }));
      expect(again.id).not.toBe(created.id);
      expectError(await client.post('/servers', httpServer({ name: 'new-name' })), 409, 'SERVER_NAME_EXISTS', { name: 'new-name' });
      expect(await total(client)).toBe(2);
    });

    it('a renamed server is listed under its new name', async () => {
      const { client, created, put } = await setup();
      expectSuccess(await put({ name: 'renamed' }), 200);
      const list = expectSuccess(await client.get('/servers'), 200);
      expect(list).toEqual([expect.objectContaining({ id: created.id, name: 'renamed' })]);
    });

    it('an unknown id is 404 SERVER_NOT_FOUND', async () => {
      const client = await freshClient(suite.served);
      expectError(await client.put(`/servers/${UNKNOWN_SERVER_ID}`, { timeout: 5 }), 404, 'SERVER_NOT_FOUND', {
        server_id: UNKNOWN_SERVER_ID,
      });
      expectError(await client.put('/servers/nope', { timeout: 5 }), 404, 'SERVER_NOT_FOUND', { server_id: 'nope' });
    });
  });

  describe('delete', () => {
    it('answers 200 {id, deleted:true}; then GET is 404, the name is free, a second delete is 404', async () => {
      const client = await freshClient(suite.served);
      const created = await createServer(client, httpServer({ name: 'doomed' }));
      const res = await client.delete(`/servers/${created.id}`);
      expect(expectSuccess(res, 200)).toEqual({ id: created.id, deleted: true });
      expectError(await client.get(`/servers/${created.id}`), 404, 'SERVER_NOT_FOUND', { server_id: created.id });
      expectError(await client.put(`/servers/${created.id}`, { timeout: 5 }), 404, 'SERVER_NOT_FOUND', { server_id: created.id });
      expect(await total(client)).toBe(0);
      const again = await createServer(client, httpServer({ name: 'doomed' }));
      expect(again.id).not.toBe(created.id);
      expectError(await client.delete(`/servers/${created.id}`), 404, 'SERVER_NOT_FOUND', { server_id: created.id });
      expect(await total(client)).toBe(1);
    });

    it('an unknown id is 404', async () => {
      const client = await freshClient(suite.served);
      expectError(await client.delete(`/servers/${UNKNOWN_SERVER_ID}`), 404, 'SERVER_NOT_FOUND', { server_id: UNKNOWN_SERVER_ID });
    });
  });

  describe('names', () => {
    it('are unique per account: the same name again is 409 SERVER_NAME_EXISTS, nothing created', async () => {
      const client = await freshClient(suite.served);
      await createServer(client, httpServer({ name: 'dup' }));
      expectError(await client.post('/servers', wsServer({ name: 'dup' })), 409, 'SERVER_NAME_EXISTS', { name: 'dup' });
      expect(await total(client)).toBe(1);
    });

    it('are compared case-sensitively and exactly', async () => {
      const client = await freshClient(suite.served);
      await createServer(client, httpServer({ name: 'A' }));
      await createServer(client, httpServer({ name: 'a' }));
      await createServer(client, httpServer({ name: 'a ' }));
      expect(await total(client)).toBe(3);
    });

    it('the same name in two accounts is allowed', async () => {
      const a = await freshClient(suite.served);
      const b = await freshClient(suite.served);
      const name = uniqueName('shared');
      const sa = await createServer(a, httpServer({ name }));
      const sb = await createServer(b, httpServer({ name }));
      expect(sa.id).not.toBe(sb.id);
      expect(sb.name).toBe(name);
    });
  });

  describe('names and the tool namespace ({prefix}__{tool})', () => {
    it('a name that begins with another server’s name and "__", or is such a beginning, is 409 naming that server', async () => {
      const client = await freshClient(suite.served);
      const a = await createServer(client, httpServer({ name: 'a' }));
      const clash = await client.post('/servers', httpServer({ name: 'a__b' }));
      expectError(clash, 409, 'SERVER_NAME_EXISTS', { name: 'a__b', clashes_with: { id: a.id, name: 'a' } });
      expect(clash.body.error.message).toContain('ambiguous');
      const cd = await createServer(client, httpServer({ name: 'c__d' }));
      expectError(await client.post('/servers', httpServer({ name: 'c' })), 409, 'SERVER_NAME_EXISTS', { name: 'c', clashes_with: { id: cd.id, name: 'c__d' } });
      const e = await createServer(client, httpServer({ name: 'e' }));
      expectError(await client.put(`/servers/${e.id}`, { name: 'c__d__e' }), 409, 'SERVER_NAME_EXISTS', { name: 'c__d__e', clashes_with: { id: cd.id, name: 'c__d' } });
      expectError(await client.put(`/servers/${e.id}`, { name: 'a' }), 409, 'SERVER_NAME_EXISTS', { name: 'a' });
      expect(expectSuccess(await client.get(`/servers/${e.id}`), 200).name).toBe('e');
      expect(await total(client)).toBe(3);
      // Moving below its own name is no clash; siblings are none either.
      expect(expectSuccess(await client.put(`/servers/${e.id}`, { name: 'e__f' }), 200).name).toBe('e__f');
      await createServer(client, httpServer({ name: 'c__x' }));
    });

    it('concurrent creates of clashing names: the ones created never clash', async () => {
      const client = await freshClient(suite.served);
      const names = ['k', 'k__l', 'k__m', 'k__l__n', 'k', 'k__l'];
      const results = await Promise.all(names.map((name) => client.post('/servers', httpServer({ name }))));
      for (const res of results) if (res.status !== 201) expectError(res, 409, 'SERVER_NAME_EXISTS');
      const kept: string[] = expectSuccess(await client.get('/servers'), 200).map((s: Json) => s.name);
      expect(kept.length).toBeGreaterThan(0);
      expect(kept.some((a) => kept.some((b) => a !== b && b.startsWith(`${a}__`))), kept.join(' ')).toBe(false);
    });
  });

  describe('concurrency', () => {
    it('20 concurrent creates with one name: exactly one 201, the rest 409, list total 1', async () => {
      const client = await freshClient(suite.served);
      const results = await Promise.all(Array.from({ length: 20 }, () => client.post('/servers', httpServer({ name: 'race' }))));
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 201)).toHaveLength(1);
      expect(statuses.filter((s) => s === 409)).toHaveLength(19);
      for (const res of results) if (res.status === 409) expectError(res, 409, 'SERVER_NAME_EXISTS', { name: 'race' });
      const list = await client.get('/servers');
      expect(expectSuccess(list, 200)).toHaveLength(1);
      expect(list.body.pagination.total).toBe(1);
      const winner = results.find((r) => r.status === 201);
      expect(list.body.data[0].id).toBe(winner?.body.data.id);
    });

    it('concurrent renames of two servers to one name: at most one succeeds', async () => {
      const client = await freshClient(suite.served);
      const one = await createServer(client, httpServer({ name: 'one' }));
      const two = await createServer(client, httpServer({ name: 'two' }));
      const results = await Promise.all([
        client.put(`/servers/${one.id}`, { name: 'target' }),
        client.put(`/servers/${two.id}`, { name: 'target' }),
      ]);
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 409]);
      const names = expectSuccess(await client.get('/servers'), 200).map((s: Json) => s.name).sort();
      expect(names.filter((n: string) => n === 'target')).toHaveLength(1);
      expect(names).toHaveLength(2);
      // The loser kept its old name, and that name is still taken.
      const loser = results[0]?.status === 409 ? one : two;
      expect(expectSuccess(await client.get(`/servers/${loser.id}`), 200).name).toBe(loser.name);
      expectError(await client.post('/servers', httpServer({ name: loser.name })), 409, 'SERVER_NAME_EXISTS');
    });

    it('a create and a rename racing for one name: exactly one gets it', async () => {
      const client = await freshClient(suite.served);
      const other = await createServer(client, httpServer({ name: 'other' }));
      const [created, renamed] = await Promise.all([
        client.post('/servers', httpServer({ name: 'contested' })),
        client.put(`/servers/${other.id}`, { name: 'contested' }),
      ]);
      expect([created!.status, renamed!.status].sort()).toEqual(created!.status === 201 ? [201, 409] : [200, 409]);
      const names = expectSuccess(await client.get('/servers'), 200).map((s: Json) => s.name);
      expect(names.filter((n: string) => n === 'contested')).toHaveLength(1);
    });

    it('concurrent updates of one server both apply (none is lost)', async () => {
      const client = await freshClient(suite.served);
      const server = await createServer(client);
      const [a, b] = await Promise.all([
        client.put(`/servers/${server.id}`, { timeout: 1111 }),
        client.put(`/servers/${server.id}`, { retry: { enabled: true, max_attempts: 9 } }),
      ]);
      expectSuccess(a!, 200);
      expectSuccess(b!, 200);
      const data = expectSuccess(await client.get(`/servers/${server.id}`), 200);
      expect(data.timeout).toBe(1111);
      expect(data.retry).toEqual({ enabled: true, max_attempts: 9, backoff: 'exponential' });
    });
  });
});

/** Two fleets, each with its own connection to one Redis, as two processes sharing storage are. */
describe.skipIf(withoutRedis('ambiguous names across fleets'))('names across fleets sharing one Redis', () => {
  const opened: { close(): Promise<void> }[] = [];
  afterAll(async () => {
    for (const c of opened.splice(0).reverse()) await c.close();
  });

  it.each(ADAPTERS)('creates of clashing names racing through both fleets: the ones created never clash ($name)', async (adapter) => {
    const keyPrefix = uniquePrefix('prefixes');
    opened.push({ close: () => deleteKeys(keyPrefix) });
    const stores: RedisStore[] = [];
    for (let i = 0; i < 2; i++) {
      const store = await createRedisStore({ url: REDIS_URL as string, keyPrefix });
      opened.push(store);
      stores.push(store);
    }
    const served: Served[] = [];
    for (const store of stores) {
      const s = await serveFleet(adapter, { store });
      opened.push(s);
      served.push(s);
    }
    for (let round = 0; round < 3; round++) {
      const account = `acct-prefix-${round}-${Math.random().toString(36).slice(2, 8)}`;
      const clients = await Promise.all(served.map(async (s) => api(s, await createKey(s, { account }))));
      const names = ['k', 'k__l', 'k__m', 'k__l__n', 'k', 'k__l__n', 'k__m__o', 'k__l'];
      const results = await Promise.all(names.map((name, i) => clients[i % 2]!.post('/servers', httpServer({ name }))));
      for (const res of results) if (res.status !== 201) expectError(res, 409, 'SERVER_NAME_EXISTS');
      const kept: string[] = expectSuccess(await clients[0]!.get('/servers'), 200).map((s: Json) => s.name);
      expect(kept.length).toBeGreaterThan(0);
      expect(kept.some((a) => kept.some((b) => a !== b && b.startsWith(`${a}__`))), kept.join(' ')).toBe(false);
    }
  });
});
