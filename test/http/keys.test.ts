// Keys over HTTP (contract, "OpenAPI, keys over HTTP, client, CLI"): POST/GET /keys, GET/DELETE /keys/{id} under
// `keys:manage`, never a key with more than its maker holds, `key.created`/`key.revoked` to webhooks, limits.
import { createHash } from 'node:crypto';
import { createMemoryStore, SCOPES, type Scope } from '@mcp-fleet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver } from '../../packages/core/src/webhooks/fixtures/receiver.js';
import { ADAPTERS, serveFleet, type Served } from '../support/adapters.js';
import { api, type ApiClient, expectError, expectInvalid, expectSuccess, freshClient, ISO_MS, serveForSuite } from '../support/http-client.js';

const KEY_FIELDS = ['account', 'created_at', 'description', 'expires_at', 'id', 'last_used_at', 'prompts', 'resources', 'revoked_at', 'scopes', 'tier', 'tools'];
const KEY_ID = /^key_[0-9A-Za-z]{24}$/;
const UNKNOWN_KEY_ID = 'key_000000000000000000000000';
const ALL: Scope[] = [...SCOPES];
/** How the store keeps a secret: its SHA-256, which must never be shown either. */
const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');

/** A client whose key may manage keys (every scope named), with an allowlist or expiry when given. */
async function manager(served: Served, extra: { tools?: string[]; tier?: 'free' | 'pro' | 'enterprise'; scopes?: Scope[]; expires_at?: string } = {}): Promise<ApiClient & { account: string; keyId: string }> {
  const base = await freshClient(served, ['servers:read']);
  const { key, secret } = (await served.fleet.keys.create({ account: base.account, tier: extra.tier ?? 'pro', scopes: extra.scopes ?? ALL, ...(extra.tools && { tools: extra.tools }), ...(extra.expires_at && { expires_at: extra.expires_at }) }))._unsafeUnwrap();
  return Object.assign(api(served, secret), { account: base.account, keyId: key.id });
}

describe.each(ADAPTERS)('keys over HTTP ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { webhooks: { worker: false } });

  it('POST /keys answers 201 with the key and its secret once; list and get never show the secret', async () => {
    const admin = await manager(suite.served);
    const created = expectSuccess(await admin.post('/keys', { scopes: ['servers:read', 'servers:write'], description: 'ci' }), 201);
    expect(Object.keys(created).sort()).toEqual([...KEY_FIELDS, 'secret'].sort());
    expect(created).toMatchObject({ account: admin.account, tier: 'pro', scopes: ['servers:read', 'servers:write'], tools: null, prompts: null, resources: null, description: 'ci', expires_at: null, last_used_at: null, revoked_at: null });
    expect(created.id).toMatch(KEY_ID);
    expect(created.secret).toMatch(/^mcpf_[0-9A-Za-z]{40}$/);
    expect(created.created_at).toMatch(ISO_MS);

    // The new key works, within its scopes.
    const made = api(suite.served, created.secret);
    expectSuccess(await made.get('/servers'), 200);
    expectError(await made.get('/webhooks'), 403, 'FORBIDDEN', { required_scope: 'webhooks:manage' });
    expectError(await made.get('/keys'), 403, 'FORBIDDEN', { required_scope: 'keys:manage' });

    const listed = await admin.get('/keys?limit=100');
    const keys = expectSuccess(listed, 200);
    expect(listed.body.pagination).toEqual({ page: 1, limit: 100, total: 3, pages: 1 });
    expect(keys.map((key: { id: string }) => key.id)).toContain(created.id);
    for (const key of keys) expect(Object.keys(key).sort()).toEqual(KEY_FIELDS);
    const got = await admin.get(`/keys/${created.id}`);
    const { secret, ...shown } = created;
    // The key was used a moment ago: its last use shows, to the minute.
    expect(expectSuccess(got, 200)).toEqual({ ...shown, last_used_at: expect.stringMatching(/:00\.000Z$/) });
    for (const text of [listed.text, got.text]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(hashSecret(secret));
    }
  });

  it('lists pages of the caller’s account only, oldest first', async () => {
    const admin = await manager(suite.served);
    const other = await manager(suite.served);
    for (let i = 0; i < 3; i++) expectSuccess(await admin.post('/keys', { scopes: ['servers:read'], description: `k${i}` }), 201);
    const page = await admin.get('/keys?page=2&limit=2');
    expect(page.body.pagination).toEqual({ page: 2, limit: 2, total: 5, pages: 3 });
    expect(expectSuccess(page, 200).map((key: { description: string }) => key.description)).toEqual(['k0', 'k1']);
    const theirs = expectSuccess(await other.get('/keys'), 200);
    expect(theirs.every((key: { account: string }) => key.account === other.account)).toBe(true);
    expectInvalid(await admin.get('/keys?limit=101'), 'limit');
  });

  it('DELETE /keys/{id} revokes: 200 { id, revoked: true }, refused on the next request, listed with revoked_at; again is the same answer', async () => {
    const admin = await manager(suite.served);
    const created = expectSuccess(await admin.post('/keys', { scopes: ['servers:read'] }), 201);
    const made = api(suite.served, created.secret);
    expectSuccess(await made.get('/servers'), 200);
    expect(expectSuccess(await admin.delete(`/keys/${created.id}`), 200)).toEqual({ id: created.id, revoked: true });
    expectError(await made.get('/servers'), 401, 'UNAUTHORIZED');
    const got = expectSuccess(await admin.get(`/keys/${created.id}`), 200);
    expect(got.revoked_at).toMatch(ISO_MS);
    expect(expectSuccess(await admin.delete(`/keys/${created.id}`), 200)).toEqual({ id: created.id, revoked: true });
    expect(expectSuccess(await admin.get(`/keys/${created.id}`), 200).revoked_at).toBe(got.revoked_at);
  });

  it('a key may revoke itself: the answer is 200, its next request 401', async () => {
    const admin = await manager(suite.served);
    expect(expectSuccess(await admin.delete(`/keys/${admin.keyId}`), 200)).toEqual({ id: admin.keyId, revoked: true });
    expectError(await admin.get('/keys'), 401, 'UNAUTHORIZED');
  });

  it('another account’s key is 404 exactly as a missing one, on get and delete, and stays working', async () => {
    const owner = await manager(suite.served);
    const attacker = await manager(suite.served);
    const victim = expectSuccess(await owner.post('/keys', { scopes: ['servers:read'] }), 201);
    for (const method of ['GET', 'DELETE'] as const) {
      const theirs = await attacker.request(method, `/keys/${victim.id}`);
      const missing = await attacker.request(method, `/keys/${UNKNOWN_KEY_ID}`);
      expectError(theirs, 404, 'NOT_FOUND', { id: victim.id });
      expectError(missing, 404, 'NOT_FOUND', { id: UNKNOWN_KEY_ID });
      expect(theirs.body.error.message).toBe(missing.body.error.message);
    }
    expectError(await attacker.get('/keys/not-a-key-id'), 404, 'NOT_FOUND', { id: 'not-a-key-id' });
    expect(expectSuccess(await attacker.get('/keys'), 200).map((key: { id: string }) => key.id)).not.toContain(victim.id);
    expectSuccess(await api(suite.served, victim.secret).get('/servers'), 200);
    expect(expectSuccess(await owner.get(`/keys/${victim.id}`), 200).revoked_at).toBeNull();
  });

  it('a key without keys:manage cannot reach /keys: no scope list holds every scope but that one', async () => {
    const everything = await freshClient(suite.served);
    for (const [method, path] of [['GET', '/keys'], ['POST', '/keys'], ['GET', `/keys/${UNKNOWN_KEY_ID}`], ['DELETE', `/keys/${UNKNOWN_KEY_ID}`]] as const) {
      expectError(await everything.request(method, path, method === 'POST' ? { body: {} } : {}), 403, 'FORBIDDEN', { required_scope: 'keys:manage' });
    }
  });

  describe('never a key with more than its maker holds (403 FORBIDDEN, nothing made)', () => {
    it.each([
      ['a scope it lacks', { scopes: ['keys:manage', 'servers:read'] as Scope[] }, { scopes: ['servers:read', 'webhooks:manage'] }, { scopes: ['webhooks:manage'] }, '"webhooks:manage"'],
      ['keys:manage it lacks', { scopes: ['keys:manage', 'servers:read'] as Scope[] }, { scopes: ['keys:manage', 'servers:write'] }, { scopes: ['servers:write'] }, '"servers:write"'],
      ['a higher tier', { tier: 'pro' as const }, { tier: 'enterprise' }, { tier: 'enterprise' }, 'tier "enterprise"'],
      ['a tool pattern outside its allowlist', { tools: ['search__*'] }, { tools: ['search__web', 'files__*'] }, { tools: ['files__*'] }, '"files__*"'],
      ['every tool, from a key with an allowlist', { tools: ['search__*'] }, { tools: null }, { tools: ['*'] }, 'every tool'],
    ])('refuses %s', async (_label, maker, body, details, named) => {
      const admin = await manager(suite.served, maker);
      const before = (await admin.get('/keys')).body.pagination.total;
      const res = await admin.post('/keys', body);
      expectError(res, 403, 'FORBIDDEN', details);
      expect(res.body.error.message).toContain(named);
      expect((await admin.get('/keys')).body.pagination.total).toBe(before);
    });

    it('refuses an expiry after its own, and fills its own in when none is asked for', async () => {
      const own = new Date(Date.now() + 3_600_000).toISOString();
      const admin = await manager(suite.served, { expires_at: own });
      expectError(await admin.post('/keys', { expires_at: new Date(Date.now() + 7_200_000).toISOString() }), 403, 'FORBIDDEN', { expires_at: own });
      expect(expectSuccess(await admin.post('/keys', {}), 201).expires_at).toBe(own);
      const sooner = new Date(Date.now() + 1_800_000).toISOString();
      expect(expectSuccess(await admin.post('/keys', { expires_at: sooner }), 201).expires_at).toBe(sooner);
    });

    it('passes on what it holds: its tier, its tools and scopes but keys:manage when none are named; narrower ones when asked', async () => {
      const admin = await manager(suite.served, { tier: 'enterprise', tools: ['search__*', 'files__read_*'] });
      expect(expectSuccess(await admin.post('/keys', {}), 201)).toMatchObject({ tier: 'enterprise', tools: ['search__*', 'files__read_*'], scopes: ALL.filter((scope) => scope !== 'keys:manage') });
      const narrow = expectSuccess(await admin.post('/keys', { tier: 'free', tools: ['files__read_text*'], scopes: ['keys:manage', 'tool_calls:read'] }), 201);
      expect(narrow).toMatchObject({ tier: 'free', tools: ['files__read_text*'], scopes: ['keys:manage', 'tool_calls:read'] });
      // And that key in turn: never past its own.
      const child = api(suite.served, narrow.secret);
      expectError(await child.post('/keys', { tools: ['files__*'], scopes: ['tool_calls:read'] }), 403, 'FORBIDDEN', { tools: ['files__*'] });
      expectError(await child.post('/keys', { tier: 'pro', scopes: ['tool_calls:read'] }), 403, 'FORBIDDEN', { tier: 'pro' });
      expectSuccess(await child.post('/keys', { scopes: ['tool_calls:read'] }), 201);
    });
  });

  it('refuses bad bodies with 400: expires_at in the past, unreadable or too far; unknown and read-only fields', async () => {
    const admin = await manager(suite.served);
    const past = expectInvalid(await admin.post('/keys', { expires_at: '2020-01-01T00:00:00Z' }), 'expires_at');
    expect(past.issue).toMatch(/^must be in the future/);
    expectInvalid(await admin.post('/keys', { expires_at: 'next week' }), 'expires_at');
    expect(expectInvalid(await admin.post('/keys', { expires_at: new Date(Date.now() + 11 * 365 * 86_400_000).toISOString() }), 'expires_at').issue).toMatch(/10 years/);
    expectInvalid(await admin.post('/keys', { scopes: ['servers:read', 'root'] }), 'scopes[1]');
    expectInvalid(await admin.post('/keys', { scopes: [] }), 'scopes');
    expectInvalid(await admin.post('/keys', { tools: ['a b'] }), 'tools[0]');
    expectInvalid(await admin.post('/keys', { name: 'x' }), 'name');
    expect(expectInvalid(await admin.post('/keys', { secret: 'mcpf_mine' }), 'secret').issue).toBe('is read-only');
    expect(expectInvalid(await admin.post('/keys', { account: 'someone-else' }), 'account').issue).toBe('is read-only');
    // The account's two keys (`manager`'s), nothing more.
    expect((await admin.get('/keys')).body.pagination.total).toBe(2);
  });
});

describe.each(ADAPTERS)('keys over HTTP: time, limits and other processes ($name)', (adapter) => {
  // A fake clock from the real time, only ever moved ahead: a PostgreSQL store ends a rate-limit window on the
  // database's clock, which must not be past the fake one.
  let clock = Math.floor(Date.now() / 60_000) * 60_000 + 5_000;
  const suite = serveForSuite(adapter, { now: () => clock, rateLimit: {}, webhooks: { worker: false } });

  it('an expired key is refused at once', async () => {
    const admin = await manager(suite.served);
    const created = expectSuccess(await admin.post('/keys', { scopes: ['servers:read'], expires_at: new Date(clock + 60_000).toISOString() }), 201);
    const made = api(suite.served, created.secret);
    expectSuccess(await made.get('/servers'), 200);
    clock += 60_000;
    expectError(await made.get('/servers'), 401, 'UNAUTHORIZED');
    expect(expectSuccess(await admin.get(`/keys/${created.id}`), 200).revoked_at).toBeNull();
  });

  it('create and revoke: 10 a minute per account (429 past it); get and list 100', async () => {
    clock = (Math.floor(clock / 60_000) + 1) * 60_000 + 1000;
    const admin = await manager(suite.served);
    const made: string[] = [];
    for (let i = 0; i < 10; i++) made.push(expectSuccess(await admin.post('/keys', { scopes: ['servers:read'] }), 201).id);
    const refused = await admin.post('/keys', { scopes: ['servers:read'] });
    expectError(refused, 429, 'RATE_LIMITED');
    expect(refused.body.error.details).toMatchObject({ limit: 10, scope: 'operation' });
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    for (const id of made) expectSuccess(await admin.delete(`/keys/${id}`), 200);
    expectError(await admin.delete(`/keys/${made[0]}`), 429, 'RATE_LIMITED');
    const listed = await admin.get('/keys');
    expect(listed.headers.get('x-ratelimit-limit')).toBe('100');
    expect((await admin.get(`/keys/${made[0]}`)).headers.get('x-ratelimit-limit')).toBe('100');
    clock += 60_000;
    expectSuccess(await admin.post('/keys', { scopes: ['servers:read'] }), 201);
  });
});

describe('keys over HTTP across fleets on one store', () => {
  const store = createMemoryStore();
  let a: Served;
  let b: Served;
  beforeAll(async () => {
    a = await serveFleet(ADAPTERS[0]!, { store, webhooks: { worker: false } });
    b = await serveFleet(ADAPTERS[1]!, { store, webhooks: { worker: false } });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await store.close();
  });

  it('a key made through one fleet works through the other, and is refused there on the next request once revoked', async () => {
    const admin = await manager(a);
    const created = expectSuccess(await admin.post('/keys', { scopes: ['servers:read'] }), 201);
    const onB = api(b, created.secret);
    for (let i = 0; i < 3; i++) expectSuccess(await onB.get('/servers'), 200);
    expectSuccess(await admin.delete(`/keys/${created.id}`), 200);
    expectError(await onB.get('/servers'), 401, 'UNAUTHORIZED');
    expect(expectSuccess(await api(b, admin.key).get(`/keys/${created.id}`), 200).revoked_at).toMatch(ISO_MS);
  });
});

describe('key.created and key.revoked reach webhooks, without the secret or its hash', () => {
  let served: Served;
  beforeAll(async () => {
    served = await serveFleet(ADAPTERS[0]!, { allowPrivateNetworks: true, webhooks: { retry: { baseMs: 50, factor: 2, jitter: 0 }, pollIntervalMs: 20 } });
  });
  afterAll(async () => {
    await served.close();
  });

  it('delivers both events with the key view', async () => {
    const receiver = await startReceiver();
    try {
      const admin = await manager(served);
      expectSuccess(await admin.post('/webhooks', { url: receiver.url, events: ['key.created', 'key.revoked'] }), 201);
      const created = expectSuccess(await admin.post('/keys', { scopes: ['servers:read'], description: 'deploy bot' }), 201);
      expectSuccess(await admin.delete(`/keys/${created.id}`), 200);
      const requests = await receiver.waitFor(2);
      const payloads = requests.map((request) => JSON.parse(request.body.toString('utf8')));
      const { secret, ...view } = created;
      expect(payloads.map((p) => p.type).sort()).toEqual(['key.created', 'key.revoked']);
      const made = payloads.find((p) => p.type === 'key.created');
      const revoked = payloads.find((p) => p.type === 'key.revoked');
      expect(made.data).toEqual({ key: view });
      expect(revoked.data.key).toMatchObject({ ...view, revoked_at: expect.stringMatching(ISO_MS) });
      expect(Object.keys(revoked.data.key).sort()).toEqual(KEY_FIELDS);
      for (const request of requests) {
        const body = request.body.toString('utf8');
        expect(body).not.toContain(secret);
        expect(body).not.toContain(hashSecret(secret));
        expect(body).not.toContain(admin.key as string);
      }
    } finally {
      await receiver.close();
    }
  });
});
