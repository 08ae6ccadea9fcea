import { createHash } from 'node:crypto';
import Keyv from 'keyv';
import { describe, expect, it } from 'vitest';
import { createFleet } from '../fleet.js';
import { createMemoryStore } from '../store.js';
import { isId } from '../util/ids.js';
import { hashSecret } from './api-keys.js';
import type { Result } from 'neverthrow';
import type { FleetError } from '../errors/fleet-error.js';
import type { Ran } from '../util/result.js';
import { hasScope, isLimited, type Principal, SCOPES } from './scopes.js';

const T0 = Date.parse('2026-11-22T10:00:00.000Z');

function setup() {
  let clock = T0;
  const map = new Map<string, unknown>();
  const storage = new Keyv({ store: map, throwOnErrors: true });
  const fleet = createFleet({ store: createMemoryStore({ records: storage, now: () => clock }), now: () => clock });
  return {
    keys: fleet.keys,
    storage,
    map,
    advance: (ms: number) => {
      clock += ms;
    },
    /** Everything the storage holds, keys and values, as one string. */
    dump: () => [...map.entries()].map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join('\n'),
  };
}

const API_KEY_FIELDS = ['account', 'created_at', 'expires_at', 'id', 'last_used_at', 'name', 'prompts', 'resources', 'revoked_at', 'scopes', 'tier', 'tools'];

describe('ApiKeys', () => {
  describe('create', () => {
    it('returns mcpf_ and 40 characters once, and a key_ id', async () => {
      const { keys } = setup();
      const created = (await keys.create({ account: 'acme', tier: 'pro', name: 'ci' }))._unsafeUnwrap();
      expect(created.secret).toMatch(/^mcpf_[0-9A-Za-z]{40}$/);
      expect(isId('apiKey', created.key.id)).toBe(true);
      expect(created.key).toEqual({
        id: created.key.id,
        account: 'acme',
        tier: 'pro',
        scopes: null,
        tools: null,
        prompts: null,
        resources: null,
        name: 'ci',
        created_at: '2026-11-22T10:00:00.000Z',
        revoked_at: null,
        expires_at: null,
        last_used_at: null,
      });
      const again = (await keys.get(created.key.id))._unsafeUnwrap();
      expect(again).toEqual(created.key);
      expect(JSON.stringify(again)).not.toContain(created.secret);
    });

    it('gives every key its own secret', async () => {
      const { keys } = setup();
      const all = await Promise.all(Array.from({ length: 20 }, () => keys.create({ account: 'acme' })));
      expect(new Set(all.map((r) => r._unsafeUnwrap().secret)).size).toBe(20);
    });

    it('defaults to the free tier, no name and every scope', async () => {
      const { keys } = setup();
      const { key } = (await keys.create({ account: 'acme' }))._unsafeUnwrap();
      expect(key).toMatchObject({ tier: 'free', name: null, scopes: null, tools: null });
    });

    it('stores only the SHA-256 of the secret, never the secret', async () => {
      const { keys, dump } = setup();
      const { secret } = (await keys.create({ account: 'acme' }))._unsafeUnwrap();
      const stored = dump();
      expect(stored).not.toContain(secret);
      expect(stored).not.toContain(secret.slice(5));
      const sha256 = createHash('sha256').update(secret).digest('hex');
      expect(hashSecret(secret)).toBe(sha256);
      expect(stored).toContain(sha256);
    });
  });

  describe('verify', () => {
    it('maps a secret to its account, tier, scopes and key id', async () => {
      const { keys } = setup();
      const { key, secret } = (await keys.create({ account: 'acme', tier: 'enterprise', scopes: ['servers:read', 'tool_calls:read'] }))._unsafeUnwrap();
      expect((await keys.verify(secret))._unsafeUnwrap()).toEqual({
        account: 'acme',
        tier: 'enterprise',
        scopes: ['servers:read', 'tool_calls:read'],
        tools: null,
        prompts: null,
        resources: null,
        keyId: key.id,
        expiresAt: null,
      });
    });

    it('is null for an unknown secret, a near miss and the hash itself', async () => {
      const { keys } = setup();
      const { secret } = (await keys.create({ account: 'acme' }))._unsafeUnwrap();
      for (const wrong of ['mcpf_' + 'a'.repeat(40), secret.slice(0, -1), `${secret}x`, secret.toUpperCase(), hashSecret(secret), '']) {
        expect((await keys.verify(wrong))._unsafeUnwrap()).toBeNull();
      }
    });

    it('scopes null means every scope but keys:manage; a scope list means only those', async () => {
      const { keys } = setup();
      const all = (await keys.verify((await keys.create({ account: 'acme' }))._unsafeUnwrap().secret))._unsafeUnwrap();
      const some = (await keys.verify((await keys.create({ account: 'acme', scopes: ['servers:read'] }))._unsafeUnwrap().secret))._unsafeUnwrap();
      if (all === null || some === null) throw new Error('keys did not verify');
      expect(all.scopes).toBeNull();
      for (const scope of SCOPES) expect(hasScope(all, scope)).toBe(scope !== 'keys:manage');
      expect(hasScope(some, 'servers:read')).toBe(true);
      expect(SCOPES.filter((scope) => hasScope(some, scope))).toEqual(['servers:read']);
    });
  });

  describe('revoke', () => {
    it('makes verify null at once and keeps the key listed with revoked_at', async () => {
      const { keys, advance } = setup();
      const { key, secret } = (await keys.create({ account: 'acme' }))._unsafeUnwrap();
      advance(1000);
      const revoked = (await keys.revoke(key.id))._unsafeUnwrap();
      expect(revoked).toEqual({ ...key, revoked_at: '2026-11-22T10:00:01.000Z' });
      expect((await keys.verify(secret))._unsafeUnwrap()).toBeNull();
      expect((await keys.list('acme'))._unsafeUnwrap().data).toEqual([revoked]);
    });

    it('is idempotent: revoking again keeps the first revoked_at', async () => {
      const { keys, advance } = setup();
      const { key } = (await keys.create({ account: 'acme' }))._unsafeUnwrap();
      const first = (await keys.revoke(key.id))._unsafeUnwrap();
      advance(5000);
      expect((await keys.revoke(key.id))._unsafeUnwrap()).toEqual(first);
    });

    it('revokes only the key named', async () => {
      const { keys } = setup();
      const a = (await keys.create({ account: 'acme' }))._unsafeUnwrap();
      const b = (await keys.create({ account: 'acme' }))._unsafeUnwrap();
      await keys.revoke(a.key.id);
      expect((await keys.verify(b.secret))._unsafeUnwrap()?.keyId).toBe(b.key.id);
    });

    it('is NOT_FOUND for an unknown key', async () => {
      const { keys } = setup();
      const error = (await keys.revoke('key_000000000000000000000000'))._unsafeUnwrapErr();
      expect(error.code).toBe('NOT_FOUND');
      expect(error.details).toEqual({ id: 'key_000000000000000000000000' });
      expect((await keys.get('key_000000000000000000000000'))._unsafeUnwrapErr().code).toBe('NOT_FOUND');
    });
  });

  describe('list and count', () => {
    it('lists an account’s keys oldest first, without secrets or hashes', async () => {
      const { keys, advance } = setup();
      const first = (await keys.create({ account: 'acme', name: 'first' }))._unsafeUnwrap();
      advance(10);
      const second = (await keys.create({ account: 'acme', name: 'second' }))._unsafeUnwrap();
      await keys.create({ account: 'other' });
      const listed = (await keys.list('acme'))._unsafeUnwrap().data;
      expect(listed.map((k) => k.name)).toEqual(['first', 'second']);
      for (const key of listed) expect(Object.keys(key).sort()).toEqual(API_KEY_FIELDS);
      const text = JSON.stringify(listed);
      for (const { secret } of [first, second]) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(hashSecret(secret));
      }
    });

    it('lists nothing for an account without keys', async () => {
      const { keys } = setup();
      expect((await keys.list('nobody'))._unsafeUnwrap().data).toEqual([]);
    });

    it('counts keys of every account, revoked ones included', async () => {
      const { keys } = setup();
      expect((await keys.count())._unsafeUnwrap()).toBe(0);
      const a = (await keys.create({ account: 'acme' }))._unsafeUnwrap();
      await keys.create({ account: 'other' });
      await keys.revoke(a.key.id);
      expect((await keys.count())._unsafeUnwrap()).toBe(2);
    });
  });

  describe('register', () => {
    const secret = 'operator-chosen-secret-0001';

    it('makes a chosen secret verify, storing only its hash', async () => {
      const { keys, dump } = setup();
      const key = (await keys.register({ account: 'acme', tier: 'pro', secret }))._unsafeUnwrap();
      expect(isId('apiKey', key.id)).toBe(true);
      expect((await keys.verify(secret))._unsafeUnwrap()).toEqual({ account: 'acme', tier: 'pro', scopes: null, tools: null, prompts: null, resources: null, keyId: key.id, expiresAt: null });
      expect(dump()).not.toContain(secret);
      expect(JSON.stringify(key)).not.toContain(secret);
    });

    it('is idempotent: the same secret twice keeps one key id and one listing entry', async () => {
      const { keys } = setup();
      const first = (await keys.register({ account: 'acme', secret }))._unsafeUnwrap();
      const second = (await keys.register({ account: 'acme', secret }))._unsafeUnwrap();
      expect(second.id).toBe(first.id);
      expect(second.created_at).toBe(first.created_at);
      expect((await keys.list('acme'))._unsafeUnwrap().data).toHaveLength(1);
      expect((await keys.count())._unsafeUnwrap()).toBe(1);
    });

    it('two registrations of one secret at once (processes starting together on one store) make one key', async () => {
      const { keys } = setup();
      const both = await Promise.all([keys.register({ account: 'acme', secret }), keys.register({ account: 'acme', secret })]);
      const [first, second] = both.map((r) => r._unsafeUnwrap());
      expect(second?.id).toBe(first?.id);
      expect((await keys.list('acme'))._unsafeUnwrap().data.map((k) => k.id)).toEqual([first?.id]);
      expect((await keys.count())._unsafeUnwrap()).toBe(1);
      expect((await keys.verify(secret))._unsafeUnwrap()?.keyId).toBe(first?.id);
    });

    it('registering again updates tier and scopes', async () => {
      const { keys } = setup();
      const first = (await keys.register({ account: 'acme', secret }))._unsafeUnwrap();
      const second = (await keys.register({ account: 'acme', tier: 'enterprise', scopes: ['servers:read'], secret }))._unsafeUnwrap();
      expect(second).toMatchObject({ id: first.id, tier: 'enterprise', scopes: ['servers:read'] });
      expect((await keys.verify(secret))._unsafeUnwrap()).toEqual({ account: 'acme', tier: 'enterprise', scopes: ['servers:read'], tools: null, prompts: null, resources: null, keyId: first.id, expiresAt: null });
    });

    it('registering a secret for another account revokes the old key and issues a new one', async () => {
      const { keys } = setup();
      const first = (await keys.register({ account: 'acme', secret }))._unsafeUnwrap();
      const second = (await keys.register({ account: 'other', secret }))._unsafeUnwrap();
      expect(second.id).not.toBe(first.id);
      expect((await keys.verify(secret))._unsafeUnwrap()).toMatchObject({ account: 'other', keyId: second.id });
      expect((await keys.get(first.id))._unsafeUnwrap().revoked_at).not.toBeNull();
    });

    it('registering a revoked secret again keeps it revoked: revocation is for good (a restart with it configured)', async () => {
      const { keys } = setup();
      const first = (await keys.register({ account: 'acme', secret }))._unsafeUnwrap();
      await keys.revoke(first.id);
      expect((await keys.verify(secret))._unsafeUnwrap()).toBeNull();
      const again = (await keys.register({ account: 'acme', secret, tier: 'pro' }))._unsafeUnwrap();
      expect(again).toMatchObject({ id: first.id, tier: 'free', revoked_at: expect.any(String) });
      expect((await keys.verify(secret))._unsafeUnwrap()).toBeNull();
      // Under another account too.
      expect((await keys.register({ account: 'other', secret }))._unsafeUnwrap().revoked_at).not.toBeNull();
      expect((await keys.verify(secret))._unsafeUnwrap()).toBeNull();
    });

    it.each([
      ['too short', 'SHORT-SECRET-15'],
      ['with a space', 'SECRET WITH A SPACE 123'],
      ['with a non-ASCII character', 'SECRET-ÄÖÜ-1234567890'],
      ['too long', `SECRET-${'x'.repeat(600)}`],
      ['with a newline', 'SECRET-1234567890\nabc'],
    ])('refuses a secret %s without echoing it', async (_label, bad) => {
      const { keys, map } = setup();
      const error = (await keys.register({ account: 'acme', secret: bad }))._unsafeUnwrapErr();
      expect(error.code).toBe('INVALID_REQUEST');
      expect(error.details).toMatchObject({ field: 'secret' });
      const text = JSON.stringify({ message: error.message, details: error.details });
      expect(text).not.toContain(bad);
      expect(text).not.toContain('SECRET');
      expect(map.size).toBe(0);
    });

    it('accepts a secret of exactly 16 printable characters', async () => {
      const { keys } = setup();
      expect((await keys.register({ account: 'acme', secret: '0123456789abcdef' })).isOk()).toBe(true);
    });
  });

  describe('input validation', () => {
    it.each([
      ['an empty account', { account: '' }, 'account'],
      ['an account with a colon', { account: 'a:b' }, 'account'],
      ['an account starting with a dot', { account: '.acme' }, 'account'],
      ['an account of 65 characters', { account: 'a'.repeat(65) }, 'account'],
      ['an unknown tier', { account: 'acme', tier: 'platinum' }, 'tier'],
      ['an unknown scope', { account: 'acme', scopes: ['servers:read', 'servers:admin'] }, 'scopes[1]'],
      ['an empty scope list', { account: 'acme', scopes: [] }, 'scopes'],
      ['an empty name', { account: 'acme', name: '' }, 'name'],
      ['an unknown field', { account: 'acme', admin: true }, 'admin'],
      ['an empty tool list', { account: 'acme', tools: [] }, 'tools'],
      ['101 tool patterns', { account: 'acme', tools: Array.from({ length: 101 }, (_, i) => `s${i}__*`) }, 'tools'],
      ['a tool list that is a string', { account: 'acme', tools: 'search__*' }, 'tools'],
      ['an empty tool pattern', { account: 'acme', tools: ['search__*', ''] }, 'tools[1]'],
      ['a tool pattern of 201 characters', { account: 'acme', tools: [`${'a'.repeat(199)}*x`] }, 'tools[0]'],
      ['a tool pattern with a space', { account: 'acme', tools: ['search__ web'] }, 'tools[0]'],
      ['a tool pattern with "|"', { account: 'acme', tools: ['search__*|files__*'] }, 'tools[0]'],
      ['a tool pattern with a control character', { account: 'acme', tools: ['search__\u0000'] }, 'tools[0]'],
      ['a tool pattern that is a number', { account: 'acme', tools: [7] }, 'tools[0]'],
    ])('refuses %s with INVALID_REQUEST', async (_label, input, field) => {
      const { keys, map } = setup();
      const error = (await keys.create(input as never))._unsafeUnwrapErr();
      expect(error.code).toBe('INVALID_REQUEST');
      expect(error.status).toBe(400);
      expect(error.details).toMatchObject({ field });
      expect(map.size).toBe(0);
      const registered = (await keys.register({ ...(input as object), secret: 'a-valid-secret-0123' } as never))._unsafeUnwrapErr();
      expect(registered.code).toBe('INVALID_REQUEST');
    });

    it('accepts account ids of letters, digits, "_", "." and "-" up to 64 characters', async () => {
      const { keys } = setup();
      for (const account of ['a', 'A1', 'team_1.prod-eu', 'x'.repeat(64)]) {
        expect((await keys.create({ account })).isOk(), account).toBe(true);
      }
    });
  });

  describe('storage failures', () => {
    it('a store that fails makes create, verify and list STORAGE_UNAVAILABLE', async () => {
      const failing = {
        get: async () => {
          throw new Error('down');
        },
        set: async () => {
          throw new Error('down');
        },
        delete: async () => {
          throw new Error('down');
        },
        clear: async () => {},
      };
      const fleet = createFleet({ store: createMemoryStore({ records: new Keyv({ store: failing, throwOnErrors: true }) }) });
      expect((await fleet.keys.create({ account: 'acme' }))._unsafeUnwrapErr().code).toBe('STORAGE_UNAVAILABLE');
      expect((await fleet.keys.verify('mcpf_whatever'))._unsafeUnwrapErr().code).toBe('STORAGE_UNAVAILABLE');
      expect((await fleet.keys.register({ account: 'acme', secret: 'a-valid-secret-0123' }))._unsafeUnwrapErr().code).toBe('STORAGE_UNAVAILABLE');
    });
  });
});

describe('ApiKeys expiry and last use', () => {
  it('a key with expires_at works until then and is refused after; an expiry in the past is a 400', async () => {
    const { keys, advance } = setup();
    const created = (await keys.create({ account: 'acme', expires_at: '2026-11-22T10:05:00.000Z' }))._unsafeUnwrap();
    expect(created.key.expires_at).toBe('2026-11-22T10:05:00.000Z');
    expect((await keys.verify(created.secret))._unsafeUnwrap()?.account).toBe('acme');
    advance(5 * 60_000);
    expect((await keys.verify(created.secret))._unsafeUnwrap()).toBeNull();
    const past = (await keys.create({ account: 'acme', expires_at: '2026-11-22T09:00:00.000Z' }))._unsafeUnwrapErr();
    expect(past.details).toMatchObject({ field: 'expires_at', issue: 'must be in the future (now is 2026-11-22T10:05:00.000Z)' });
    const far = (await keys.create({ account: 'acme', expires_at: '2037-01-01T00:00:00Z' }))._unsafeUnwrapErr();
    expect(far.details).toMatchObject({ field: 'expires_at', issue: 'must be at most 10 years ahead; leave it out for a key that never expires' });
    // Kept and shown in UTC, whatever offset it was given with; the principal carries it.
    const offset = (await keys.create({ account: 'acme', expires_at: '2026-11-22T12:30:00+02:00' }))._unsafeUnwrap();
    expect(offset.key.expires_at).toBe('2026-11-22T10:30:00.000Z');
    expect((await keys.verify(offset.secret))._unsafeUnwrap()?.expiresAt).toBe('2026-11-22T10:30:00.000Z');
    expect((await keys.create({ account: 'acme', expires_at: 'tomorrow' }))._unsafeUnwrapErr().details).toMatchObject({ field: 'expires_at' });
  });

  it('last_used_at follows use to the minute, written at most once a minute', async () => {
    const { keys, advance, map } = setup();
    const created = (await keys.create({ account: 'acme' }))._unsafeUnwrap();
    const writes = () => [...map.keys()].filter((k) => String(k).includes('apikey-used:')).length;
    await keys.verify(created.secret);
    await new Promise((resolve) => setImmediate(resolve));
    expect((await keys.get(created.key.id))._unsafeUnwrap().last_used_at).toBe('2026-11-22T10:00:00.000Z');
    map.delete([...map.keys()].find((k) => String(k).includes('apikey-used:')) as string);
    advance(30_000);
    await keys.verify(created.secret);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes()).toBe(0);
    advance(31_000);
    await keys.verify(created.secret);
    await new Promise((resolve) => setImmediate(resolve));
    expect((await keys.list('acme'))._unsafeUnwrap().data[0]?.last_used_at).toBe('2026-11-22T10:01:00.000Z');
  });
});

describe('ApiKeys tool allowlists', () => {
  it('a key carries its tools: listed, and in the principal verify yields from the one hash entry', async () => {
    const { keys, map } = setup();
    const tools = ['search__*', 'files__read_*'];
    const { key, secret } = (await keys.create({ account: 'acme', tools }))._unsafeUnwrap();
    expect(key.tools).toEqual(tools);
    expect((await keys.get(key.id))._unsafeUnwrap().tools).toEqual(tools);
    expect((await keys.list('acme'))._unsafeUnwrap().data[0]?.tools).toEqual(tools);
    const reads: string[] = [];
    const get = map.get.bind(map);
    map.get = (name: string) => {
      reads.push(name);
      return get(name);
    };
    expect((await keys.verify(secret))._unsafeUnwrap()).toEqual({ account: 'acme', tier: 'free', scopes: null, tools, prompts: null, resources: null, keyId: key.id, expiresAt: null });
    expect(reads).toHaveLength(1);
    expect(reads[0]).toMatch(new RegExp(`apikey-hash:${hashSecret(secret)}$`));
  });

  it('accepts 100 patterns of 200 printable characters, Unicode included; null means every tool', async () => {
    const { keys } = setup();
    const many = Array.from({ length: 100 }, (_, i) => `${String(i).padStart(3, '0')}${'é'.repeat(196)}*`);
    expect((await keys.create({ account: 'acme', tools: many }))._unsafeUnwrap().key.tools).toEqual(many);
    expect((await keys.create({ account: 'acme', tools: null }))._unsafeUnwrap().key.tools).toBeNull();
  });

  it('registering again replaces the list, and without tools lifts it', async () => {
    const { keys } = setup();
    const secret = 'operator-chosen-secret-0002';
    const first = (await keys.register({ account: 'acme', secret, tools: ['search__*'] }))._unsafeUnwrap();
    expect(first.tools).toEqual(['search__*']);
    expect((await keys.verify(secret))._unsafeUnwrap()?.tools).toEqual(['search__*']);
    const second = (await keys.register({ account: 'acme', secret, tools: ['files__*'] }))._unsafeUnwrap();
    expect(second).toMatchObject({ id: first.id, tools: ['files__*'] });
    expect((await keys.verify(secret))._unsafeUnwrap()?.tools).toEqual(['files__*']);
    expect((await keys.register({ account: 'acme', secret }))._unsafeUnwrap().tools).toBeNull();
    expect((await keys.verify(secret))._unsafeUnwrap()?.tools).toBeNull();
  });

  it('a key stored before allowlists existed reads as every tool, listed and verified', async () => {
    const { keys, storage } = setup();
    const { key, secret } = (await keys.create({ account: 'acme', tools: ['x__*'] }))._unsafeUnwrap();
    // Rewrite both records as an earlier version wrote them: no `tools` field.
    for (const name of [`apikey:${key.id}`, `apikey-hash:${hashSecret(secret)}`]) {
      const { tools: _tools, ...old } = (await storage.get(`mcp-fleet:${name}`)) as Record<string, unknown>;
      await storage.set(`mcp-fleet:${name}`, old);
    }
    expect((await keys.get(key.id))._unsafeUnwrap().tools).toBeNull();
    expect((await keys.list('acme'))._unsafeUnwrap().data[0]?.tools).toBeNull();
    expect((await keys.verify(secret))._unsafeUnwrap()).toMatchObject({ account: 'acme', tools: null });
  });

  it('a revoked key with a list stays revoked when registered again', async () => {
    const { keys } = setup();
    const secret = 'operator-chosen-secret-0003';
    const first = (await keys.register({ account: 'acme', secret, tools: ['a__*'] }))._unsafeUnwrap();
    await keys.revoke(first.id);
    expect((await keys.register({ account: 'acme', secret, tools: ['b__*'] }))._unsafeUnwrap()).toMatchObject({ tools: ['a__*'], revoked_at: expect.any(String) });
    expect((await keys.verify(secret))._unsafeUnwrap()).toBeNull();
  });
});

describe('ApiKeys prompt and resource allowlists', () => {
  it('a key carries its prompts and resources: listed, registered again, and in the principal', async () => {
    const { keys } = setup();
    const lists = { prompts: ['search__*'], resources: ['docs__file:///public/*'] };
    const { key, secret } = (await keys.create({ account: 'acme', ...lists }))._unsafeUnwrap();
    expect(key).toMatchObject({ tools: null, ...lists });
    expect((await keys.list('acme'))._unsafeUnwrap().data[0]).toMatchObject(lists);
    expect((await keys.verify(secret))._unsafeUnwrap()).toMatchObject({ tools: null, ...lists });
    const chosen = 'operator-chosen-secret-0004';
    (await keys.register({ account: 'acme', secret: chosen, resources: ['a__*'] }))._unsafeUnwrap();
    expect((await keys.verify(chosen))._unsafeUnwrap()).toMatchObject({ prompts: null, resources: ['a__*'] });
    expect((await keys.register({ account: 'acme', secret: chosen }))._unsafeUnwrap()).toMatchObject({ prompts: null, resources: null });
  });

  it.each([
    ['an empty prompt list', { prompts: [] }, 'prompts'],
    ['a resource pattern with a space', { resources: ['docs__file:///a b'] }, 'resources[0]'],
    ['a resource pattern with "|"', { resources: ['a__*|b__*'] }, 'resources[0]'],
  ])('refuses %s, naming the field', async (_label, lists, field) => {
    const { keys } = setup();
    const error = (await keys.create({ account: 'acme', ...(lists as object) }))._unsafeUnwrapErr();
    expect(error.code).toBe('INVALID_REQUEST');
    expect(error.details).toMatchObject({ field });
  });
});

describe('hasScope', () => {
  const principal = (extra: Partial<Principal>): Principal => ({ account: 'acme', tier: 'pro', scopes: null, ...extra });

  it('no scope list: every scope but keys:manage, and but servers:write for a principal with any allowlist unless its list names it', () => {
    const allButKeys = SCOPES.filter((scope) => scope !== 'keys:manage');
    expect(SCOPES.filter((scope) => hasScope(principal({}), scope))).toEqual(allButKeys);
    expect(SCOPES.filter((scope) => hasScope(principal({ tools: null, prompts: null, resources: null }), scope))).toEqual(allButKeys);
    expect(hasScope(principal({ scopes: ['keys:manage'] }), 'keys:manage')).toBe(true);
    for (const lists of [{ tools: ['a__*'] }, { prompts: ['a__*'] }, { resources: ['a__*'] }, { tools: [] }]) {
      expect(SCOPES.filter((scope) => hasScope(principal(lists), scope))).toEqual(allButKeys.filter((scope) => scope !== 'servers:write'));
      expect(hasScope(principal({ ...lists, scopes: ['servers:write'] }), 'servers:write')).toBe(true);
      expect(isLimited(principal(lists))).toBe(true);
    }
  });
});

describe('ApiKeys.verifyHash (the handler’s read of a key, at once over the fleet’s own memory)', () => {
  it('reads the entry at once on every call: a revoked key is refused on the next; another store answers through a promise', async () => {
    const { ResultAsync } = await import('neverthrow');
    const atOnce = <T>(ran: Ran<T>) => {
      expect(ran).not.toBeInstanceOf(ResultAsync);
      return (ran as Result<T, FleetError>)._unsafeUnwrap();
    };
    const { ApiKeys } = await import('./api-keys.js');
    const { IndexCalls } = await import('../storage/index-calls.js');
    const { MemoryIndexStore } = await import('../storage/memory-index-store.js');
    const { createMemoryStorage, RecordStore } = await import('../storage/records.js');
    const index = new IndexCalls(new MemoryIndexStore());
    const keys = new ApiKeys(new RecordStore(createMemoryStorage(), 'mcp-fleet:'), index, () => T0);
    const { key, secret } = (await keys.create({ account: 'acme', tier: 'pro' }))._unsafeUnwrap();
    expect(atOnce(keys.verifyHash(hashSecret(secret)))).toEqual((await keys.verify(secret))._unsafeUnwrap());
    expect(atOnce(keys.verifyHash(hashSecret(secret)))?.account).toBe('acme');
    expect(atOnce(keys.verifyHash(hashSecret(`${secret}x`)))).toBeNull();
    (await keys.revoke(key.id))._unsafeUnwrap();
    expect(atOnce(keys.verifyHash(hashSecret(secret)))).toBeNull();
    const other = new ApiKeys(new RecordStore(new Keyv({ throwOnErrors: true }), 'mcp-fleet:'), index, () => T0);
    const later = other.verifyHash(hashSecret(secret));
    expect(later).toBeInstanceOf(ResultAsync);
    expect((await later)._unsafeUnwrap()).toBeNull();
  });
});
