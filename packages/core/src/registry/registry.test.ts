import Keyv from 'keyv';
import { describe, expect, it } from 'vitest';
import { EventBus } from '../events/bus.js';
import { ChangeWriter } from '../events/change-writer.js';
import { type FleetEventType } from '../events/catalog.js';
import { createFleet } from '../fleet.js';
import { createMemoryStore } from '../store.js';
import type { FleetError } from '../errors/fleet-error.js';
import { IndexCalls } from '../storage/index-calls.js';
import type { Claim, CommitResult, IndexStore, IndexTransaction, RangeOptions } from '../storage/index-store.js';
import { MemoryIndexStore } from '../storage/memory-index-store.js';
import { createMemoryStorage, RecordStore } from '../storage/records.js';
import { isId } from '../util/ids.js';
import { ServerRegistry } from './registry.js';
import { ServerValidator } from './schema.js';
import { toSummary, type ServerRecord } from './views.js';

type Operation = 'get' | 'set' | 'delete';

/** A Keyv store over a Map that can be made to fail or to answer late, like a remote store. */
class FlakyStore {
  readonly data = new Map<string, unknown>();
  namespace?: string;
  /** Operations that throw, as an unreachable backend would. */
  readonly failing = new Set<Operation>();
  /** Each call waits up to this many ms (random), so that concurrent callers interleave. */
  maxDelayMs = 0;

  private async enter(operation: Operation): Promise<void> {
    if (this.maxDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * this.maxDelayMs));
    if (this.failing.has(operation)) throw new Error(`connection refused (${operation})`);
  }

  async get(key: string): Promise<unknown> {
    await this.enter('get');
    return this.data.get(key);
  }

  async set(key: string, value: unknown): Promise<boolean> {
    await this.enter('set');
    this.data.set(key, value);
    return true;
  }

  async delete(key: string): Promise<boolean> {
    await this.enter('delete');
    return this.data.delete(key);
  }

  async clear(): Promise<void> {
    this.data.clear();
  }

  /** Keys of stored server records. */
  serverKeys(): string[] {
    return [...this.data.keys()].filter((key) => /srv_[0-9A-Za-z]{24}/.test(key));
  }
}

/** The same with a getMany of its own, as @keyv/redis and @keyv/sqlite have: Keyv takes another path then. */
class BatchedFlakyStore extends FlakyStore {
  async getMany(keys: string[]): Promise<unknown[]> {
    return Promise.all(keys.map((key) => this.get(key)));
  }
}

/** An IndexStore whose commits can be made to fail (a crash between two storage calls), and that counts them. */
class FlakyIndex implements IndexStore {
  commits = 0;
  /** Commits this predicate picks throw instead of being applied. */
  failWhen: ((tx: IndexTransaction) => boolean) | undefined;

  constructor(readonly inner: IndexStore) {}

  async commit(tx: IndexTransaction): Promise<CommitResult> {
    this.commits += 1;
    if (this.failWhen?.(tx)) throw new Error('index unreachable');
    return this.inner.commit(tx);
  }

  async claimOf(key: string): Promise<Claim | undefined> {
    return this.inner.claimOf(key);
  }

  async range(set: string, options: RangeOptions): Promise<string[]> {
    return this.inner.range(set, options);
  }

  async count(set: string): Promise<number> {
    return this.inner.count(set);
  }
}

const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const GRACE = 60_000;

function setup(options: { batched?: boolean } = {}) {
  let clock = T0;
  const now = () => clock;
  const store = options.batched ? new BatchedFlakyStore() : new FlakyStore();
  const keyv = new Keyv({ store, throwOnErrors: true });
  const index = new FlakyIndex(new MemoryIndexStore({ now }));
  const events = new EventBus((error) => {
    throw error;
  });
  const emitted: { type: FleetEventType; event: unknown }[] = [];
  for (const type of ['server.created', 'server.updated', 'server.deleted'] as const) {
    events.on(type, (event) => {
      emitted.push({ type, event });
    });
  }
  const registry = new ServerRegistry({
    changes: new ChangeWriter(events, undefined),
    records: new RecordStore(keyv, 'mcp-fleet:'),
    index: new IndexCalls(index),
    validator: new ServerValidator({ stdioCommands: ['node'] }),
    now,
    claimGraceMs: GRACE,
  });
  return {
    registry,
    store,
    index,
    emitted,
    advance: (ms: number) => {
      clock += ms;
    },
  };
}

const http = (name: string, extra: Record<string, unknown> = {}) => ({ name, type: 'http', endpoint: `https://mcp.example/${encodeURIComponent(name)}`, ...extra });

async function created(registry: ServerRegistry, account: string, input: unknown): Promise<ServerRecord> {
  const result = await registry.create(account, input);
  if (result.isErr()) throw new Error(`create failed: ${result.error.code} ${result.error.message}`);
  return result.value;
}

function failure<T>(result: { isErr(): boolean; _unsafeUnwrapErr(): FleetError } & { _unsafeUnwrap(): T }): FleetError {
  expect(result.isErr()).toBe(true);
  return result._unsafeUnwrapErr();
}

const page = { page: 1, limit: 50 };
const ids = async (registry: ServerRegistry, account: string, query: Record<string, unknown> = {}) =>
  (await registry.list(account, { ...page, ...query }))._unsafeUnwrap();

describe('ServerRegistry', () => {
  describe('create and get', () => {
    it('stores a new server with its defaults, an srv_ id and equal timestamps', async () => {
      const { registry } = setup();
      const record = await created(registry, 'acme', http('weather'));
      expect(isId('server', record.id)).toBe(true);
      expect(record).toEqual({
        id: record.id,
        account: 'acme',
        config: { ...http('weather'), timeout: 30_000 },
        status: 'active',
        health: 'unknown',
        created_at: '2026-11-22T10:00:00.000Z',
        updated_at: '2026-11-22T10:00:00.000Z',
      });
      expect((await registry.get('acme', record.id))._unsafeUnwrap()).toEqual(record);
    });

    it('gives every server its own id', async () => {
      const { registry } = setup();
      const all = await Promise.all(Array.from({ length: 20 }, (_, i) => created(registry, 'acme', http(`s${i}`))));
      expect(new Set(all.map((r) => r.id)).size).toBe(20);
    });

    it('refuses an invalid configuration with INVALID_REQUEST and stores nothing', async () => {
      const { registry, store, index } = setup();
      const error = failure(await registry.create('acme', { name: 'x', type: 'http', endpoint: 'ftp://x' }));
      expect(error.code).toBe('INVALID_REQUEST');
      expect(error.status).toBe(400);
      expect(error.details).toEqual({ field: 'endpoint', issue: 'must use the http or https scheme' });
      expect(store.serverKeys()).toEqual([]);
      expect(index.commits).toBe(0);
    });

    it('hides a server from another account and unknown ids behind SERVER_NOT_FOUND', async () => {
      const { registry } = setup();
      const record = await created(registry, 'acme', http('weather'));
      for (const [account, id] of [
        ['other', record.id],
        ['acme', 'srv_000000000000000000000000'],
      ] as const) {
        const error = failure(await registry.get(account, id));
        expect(error.code).toBe('SERVER_NOT_FOUND');
        expect(error.details).toEqual({ server_id: id });
      }
    });

    it('keeps names unique per account, compared exactly, and leaves no record behind a 409', async () => {
      const { registry, store } = setup();
      await created(registry, 'acme', http('weather'));
      const error = failure(await registry.create('acme', http('weather', { endpoint: 'https://elsewhere.example' })));
      expect(error.code).toBe('SERVER_NAME_EXISTS');
      expect(error.status).toBe(409);
      expect(error.details).toEqual({ name: 'weather' });
      expect(store.serverKeys()).toHaveLength(1);
      await created(registry, 'other', http('weather'));
      await created(registry, 'acme', http('Weather'));
      await created(registry, 'acme', http('weather '));
      expect((await ids(registry, 'acme')).pagination.total).toBe(3);
    });

    it('of concurrent creates with one name exactly one succeeds; the others leave nothing', async () => {
      const { registry, store } = setup();
      store.maxDelayMs = 3;
      const results = await Promise.all(Array.from({ length: 10 }, () => registry.create('acme', http('same'))));
      expect(results.filter((r) => r.isOk())).toHaveLength(1);
      for (const r of results) if (r.isErr()) expect(r.error.code).toBe('SERVER_NAME_EXISTS');
      expect(store.serverKeys()).toHaveLength(1);
      expect((await ids(registry, 'acme')).pagination.total).toBe(1);
    });
  });

  describe('update', () => {
    it('changes only the fields given; updated_at moves, created_at and id do not', async () => {
      const { registry, advance } = setup();
      const before = await created(registry, 'acme', http('weather', { timeout: 1000 }));
      advance(5000);
      const after = (await registry.update('acme', before.id, { retry: { enabled: true } }))._unsafeUnwrap();
      expect(after.id).toBe(before.id);
      expect(after.created_at).toBe(before.created_at);
      expect(after.updated_at).toBe('2026-11-22T10:00:05.000Z');
      expect(after.config).toEqual({ ...before.config, retry: { enabled: true, max_attempts: 3, backoff: 'exponential' } });
      expect((await registry.get('acme', before.id))._unsafeUnwrap()).toEqual(after);
    });

    it('moves updated_at even within one millisecond', async () => {
      const { registry } = setup();
      const record = await created(registry, 'acme', http('weather'));
      const first = (await registry.update('acme', record.id, { timeout: 1 }))._unsafeUnwrap();
      const second = (await registry.update('acme', record.id, { timeout: 2 }))._unsafeUnwrap();
      expect(Date.parse(first.updated_at)).toBeGreaterThan(Date.parse(record.updated_at));
      expect(Date.parse(second.updated_at)).toBeGreaterThan(Date.parse(first.updated_at));
      expect(second.created_at).toBe(record.created_at);
    });

    it('an invalid patch changes nothing', async () => {
      const { registry } = setup();
      const record = await created(registry, 'acme', http('weather'));
      const error = failure(await registry.update('acme', record.id, { name: 'renamed', timeout: 0 }));
      expect(error.code).toBe('INVALID_REQUEST');
      expect((await registry.get('acme', record.id))._unsafeUnwrap()).toEqual(record);
      await created(registry, 'acme', http('renamed'));
    });

    it('a rename to a taken name is 409 and changes nothing; both names stay held', async () => {
      const { registry } = setup();
      const a = await created(registry, 'acme', http('a'));
      await created(registry, 'acme', http('b'));
      const error = failure(await registry.update('acme', a.id, { name: 'b', timeout: 5 }));
      expect(error.code).toBe('SERVER_NAME_EXISTS');
      expect(error.details).toEqual({ name: 'b' });
      expect((await registry.get('acme', a.id))._unsafeUnwrap()).toEqual(a);
      expect(failure(await registry.create('acme', http('a'))).code).toBe('SERVER_NAME_EXISTS');
      expect(failure(await registry.create('acme', http('b'))).code).toBe('SERVER_NAME_EXISTS');
    });

    it('a rename frees the old name and takes the new one', async () => {
      const { registry } = setup();
      const record = await created(registry, 'acme', http('old'));
      expect((await registry.update('acme', record.id, { name: 'new' }))._unsafeUnwrap().config.name).toBe('new');
      expect(failure(await registry.create('acme', http('new'))).code).toBe('SERVER_NAME_EXISTS');
      await created(registry, 'acme', http('old'));
    });

    it('keeping the name (given again) is no conflict', async () => {
      const { registry } = setup();
      const record = await created(registry, 'acme', http('same'));
      expect((await registry.update('acme', record.id, { name: 'same', timeout: 9 }))._unsafeUnwrap().config.timeout).toBe(9);
      expect(failure(await registry.create('acme', http('same'))).code).toBe('SERVER_NAME_EXISTS');
    });

    it('is SERVER_NOT_FOUND for an unknown id and for another account', async () => {
      const { registry } = setup();
      const record = await created(registry, 'acme', http('weather'));
      expect(failure(await registry.update('other', record.id, { timeout: 5 })).code).toBe('SERVER_NOT_FOUND');
      expect(failure(await registry.update('acme', 'srv_000000000000000000000000', { timeout: 5 })).code).toBe('SERVER_NOT_FOUND');
      expect((await registry.get('acme', record.id))._unsafeUnwrap()).toEqual(record);
    });

    it('a type change moves the server between the type listings', async () => {
      const { registry } = setup();
      const record = await created(registry, 'acme', http('weather'));
      await registry.update('acme', record.id, { type: 'websocket', endpoint: 'wss://weather.example/mcp' });
      expect((await ids(registry, 'acme', { type: 'http' })).data).toEqual([]);
      expect((await ids(registry, 'acme', { type: 'websocket' })).data.map((r) => r.id)).toEqual([record.id]);
      expect((await ids(registry, 'acme', { type: 'websocket' })).pagination.total).toBe(1);
    });

    it('concurrent updates of one server never lose a field', async () => {
      const { registry, store } = setup();
      const record = await created(registry, 'acme', http('weather'));
      store.maxDelayMs = 4;
      const patches: Record<string, unknown>[] = [
        { timeout: 4321 },
        { retry: { enabled: true, max_attempts: 7 } },
        { authentication: { type: 'bearer', token: 'tok' } },
        { endpoint: 'https://moved.example/mcp' },
        { name: 'renamed' },
      ];
      for (let round = 0; round < 3; round++) {
        const results = await Promise.all(patches.map((patch) => registry.update('acme', record.id, patch)));
        for (const r of results) expect(r.isOk()).toBe(true);
        const stamps = results.map((r) => Date.parse(r._unsafeUnwrap().updated_at));
        expect(new Set(stamps).size).toBe(patches.length);
      }
      const final = (await registry.get('acme', record.id))._unsafeUnwrap();
      expect(final.config).toEqual({
        name: 'renamed',
        type: 'http',
        endpoint: 'https://moved.example/mcp',
        timeout: 4321,
        retry: { enabled: true, max_attempts: 7, backoff: 'exponential' },
        authentication: { type: 'bearer', token: 'tok' },
      });
      await created(registry, 'acme', http('weather'));
    });
  });

  describe('delete', () => {
    it('deletes the record, the listings and the name', async () => {
      const { registry, store } = setup();
      const record = await created(registry, 'acme', http('weather'));
      expect((await registry.delete('acme', record.id))._unsafeUnwrap()).toEqual({ id: record.id, deleted: true });
      expect(failure(await registry.get('acme', record.id)).code).toBe('SERVER_NOT_FOUND');
      expect(failure(await registry.delete('acme', record.id)).code).toBe('SERVER_NOT_FOUND');
      expect(await ids(registry, 'acme')).toEqual({ data: [], pagination: { page: 1, limit: 50, total: 0, pages: 0 } });
      expect((await ids(registry, 'acme', { type: 'http', health: 'unknown' })).pagination.total).toBe(0);
      expect(store.serverKeys()).toEqual([]);
      await created(registry, 'acme', http('weather'));
    });

    it('will not delete a server of another account', async () => {
      const { registry } = setup();
      const record = await created(registry, 'acme', http('weather'));
      expect(failure(await registry.delete('other', record.id)).code).toBe('SERVER_NOT_FOUND');
      expect((await registry.get('acme', record.id))._unsafeUnwrap()).toEqual(record);
    });
  });

  describe('list', () => {
    it('orders by created_at ascending, ties by id', async () => {
      const { registry, advance } = setup();
      const sameTime = await Promise.all(['a', 'b', 'c', 'd'].map((n) => created(registry, 'acme', http(n))));
      advance(1);
      const later = await created(registry, 'acme', http('e'));
      advance(-10);
      const earlier = await created(registry, 'acme', http('f'));
      const expected = [earlier.id, ...sameTime.map((r) => r.id).sort(), later.id];
      expect((await ids(registry, 'acme')).data.map((r) => r.id)).toEqual(expected);
    });

    it('pages: total, pages = ceil(total / limit), a page past the end is empty with correct pagination', async () => {
      const { registry, advance } = setup();
      const all: string[] = [];
      for (let i = 0; i < 5; i++) {
        all.push((await created(registry, 'acme', http(`s${i}`))).id);
        advance(1000);
      }
      const p1 = await ids(registry, 'acme', { page: 1, limit: 2 });
      const p3 = await ids(registry, 'acme', { page: 3, limit: 2 });
      const p4 = await ids(registry, 'acme', { page: 4, limit: 2 });
      expect(p1.data.map((r) => r.id)).toEqual(all.slice(0, 2));
      expect(p1.pagination).toEqual({ page: 1, limit: 2, total: 5, pages: 3 });
      expect(p3.data.map((r) => r.id)).toEqual(all.slice(4));
      expect(p4).toEqual({ data: [], pagination: { page: 4, limit: 2, total: 5, pages: 3 } });
    });

    it('filters by type, by health and by both', async () => {
      const { registry } = setup();
      const h1 = await created(registry, 'acme', http('h1'));
      const h2 = await created(registry, 'acme', http('h2'));
      const w1 = await created(registry, 'acme', { name: 'w1', type: 'websocket', endpoint: 'wss://w1.example' });
      await registry.setHealth('acme', h1.id, 'healthy');
      await registry.setHealth('acme', w1.id, 'healthy');
      await registry.setHealth('acme', h2.id, 'unhealthy');
      const of = async (query: Record<string, unknown>) => (await ids(registry, 'acme', query)).data.map((r) => r.config.name).sort();
      expect(await of({ type: 'http' })).toEqual(['h1', 'h2']);
      expect(await of({ type: 'websocket' })).toEqual(['w1']);
      expect(await of({ type: 'stdio' })).toEqual([]);
      expect(await of({ health: 'healthy' })).toEqual(['h1', 'w1']);
      expect(await of({ health: 'unknown' })).toEqual([]);
      expect(await of({ type: 'http', health: 'healthy' })).toEqual(['h1']);
      expect((await ids(registry, 'acme', { type: 'http', health: 'unhealthy' })).pagination.total).toBe(1);
      await registry.setHealth('acme', h2.id, 'healthy');
      expect(await of({ health: 'unhealthy' })).toEqual([]);
      expect(await of({ type: 'http', health: 'healthy' })).toEqual(['h1', 'h2']);
      expect((await registry.get('acme', h2.id))._unsafeUnwrap().health).toBe('healthy');
    });

    it('lists only the account’s own servers', async () => {
      const { registry } = setup();
      const mine = await created(registry, 'acme', http('a'));
      await created(registry, 'other', http('a'));
      const listed = await ids(registry, 'acme');
      expect(listed.data.map((r) => r.id)).toEqual([mine.id]);
      expect(listed.pagination.total).toBe(1);
    });

    it('accounts with characters that could collide in keys stay apart', async () => {
      const { registry } = setup();
      await created(registry, 'a:b', http('x'));
      await created(registry, 'a', http('b:x'));
      expect((await ids(registry, 'a:b')).data.map((r) => r.config.name)).toEqual(['x']);
      expect((await ids(registry, 'a')).data.map((r) => r.config.name)).toEqual(['b:x']);
      await created(registry, 'a', http('x'));
    });
  });

  describe('list through a view (the HTTP summaries)', () => {
    it.each([
      ['the object memory', () => createMemoryStorage()],
      ['a Keyv with a serializer', () => new Keyv({ throwOnErrors: true })],
    ])('gives what a copy would have given, and nothing it gives reaches what is stored: %s', async (_what, storage) => {
      const registry = new ServerRegistry({
        changes: new ChangeWriter(new EventBus(() => {}), undefined),
        records: new RecordStore(storage(), 'mcp-fleet:'),
        index: new IndexCalls(new MemoryIndexStore()),
        validator: new ServerValidator({ stdioCommands: ['node'] }),
        now: () => Date.now(),
        claimGraceMs: GRACE,
      });
      await created(registry, 'acme', http('one'));
      await created(registry, 'acme', { ...http('two'), authentication: { type: 'bearer', token: 'tok-secret' } });
      const full = (await registry.list('acme', page))._unsafeUnwrap();
      const viewed = (await registry.list('acme', page, toSummary))._unsafeUnwrap();
      expect(viewed).toEqual({ data: full.data.map(toSummary), pagination: full.pagination });
      for (const summary of viewed.data) Object.assign(summary, { name: 'mutated', endpoint: 'https://evil.example' });
      expect((await registry.list('acme', page))._unsafeUnwrap()).toEqual(full);
      expect((await registry.list('acme', page, toSummary))._unsafeUnwrap().data.map((s) => s.name).sort()).toEqual(['one', 'two']);
    });
  });

  describe('storage failures', () => {
    it('a failing IndexStore commit during create deletes the record and answers STORAGE_UNAVAILABLE', async () => {
      const { registry, store, index } = setup();
      index.failWhen = () => true;
      const error = failure(await registry.create('acme', http('weather')));
      expect(error.code).toBe('STORAGE_UNAVAILABLE');
      expect(error.status).toBe(503);
      expect(error.details).toEqual({});
      expect(error.cause).toBeInstanceOf(Error);
      expect(store.serverKeys()).toEqual([]);
      index.failWhen = undefined;
      expect(await ids(registry, 'acme')).toEqual({ data: [], pagination: { page: 1, limit: 50, total: 0, pages: 0 } });
      await created(registry, 'acme', http('weather'));
    });

    it('a failing record write during create answers STORAGE_UNAVAILABLE before touching the index', async () => {
      const { registry, store, index } = setup();
      store.failing.add('set');
      expect(failure(await registry.create('acme', http('weather'))).code).toBe('STORAGE_UNAVAILABLE');
      expect(index.commits).toBe(0);
      store.failing.clear();
      await created(registry, 'acme', http('weather'));
    });

    it('a failing record write during a rename releases the new name and keeps the old', async () => {
      const { registry, store } = setup();
      const record = await created(registry, 'acme', http('old'));
      store.failing.add('set');
      expect(failure(await registry.update('acme', record.id, { name: 'new' })).code).toBe('STORAGE_UNAVAILABLE');
      store.failing.clear();
      expect((await registry.get('acme', record.id))._unsafeUnwrap()).toEqual(record);
      await created(registry, 'acme', http('new'));
      expect(failure(await registry.create('acme', http('old'))).code).toBe('SERVER_NAME_EXISTS');
    });

    it.each([
      ['a store without getMany', false],
      ['a store with getMany', true],
    ])('unreadable records make get, update, delete and list STORAGE_UNAVAILABLE (%s)', async (_label, batched) => {
      const { registry, store } = setup({ batched });
      const record = await created(registry, 'acme', http('weather'));
      store.failing.add('get');
      expect(failure(await registry.get('acme', record.id)).code).toBe('STORAGE_UNAVAILABLE');
      expect(failure(await registry.update('acme', record.id, { timeout: 5 })).code).toBe('STORAGE_UNAVAILABLE');
      expect(failure(await registry.delete('acme', record.id)).code).toBe('STORAGE_UNAVAILABLE');
      expect(failure(await registry.list('acme', page)).code).toBe('STORAGE_UNAVAILABLE');
    });

    it.each([
      ['a store without getMany', false],
      ['a store with getMany', true],
    ])('an outage during list repairs nothing: the listing is whole once storage is back (%s)', async (_label, batched) => {
      const { registry, store } = setup({ batched });
      const a = await created(registry, 'acme', http('a'));
      const b = await created(registry, 'acme', http('b'));
      store.failing.add('get');
      await registry.list('acme', page);
      await registry.list('acme', { ...page, type: 'http' });
      store.failing.clear();
      const listed = await ids(registry, 'acme');
      expect(listed.data.map((r) => r.id).sort()).toEqual([a.id, b.id].sort());
      expect(listed.pagination.total).toBe(2);
      expect((await ids(registry, 'acme', { type: 'http' })).pagination.total).toBe(2);
    });
  });

  describe('crash repair', () => {
    it('(a) a listed id whose record is gone is dropped from data and total, and from the index for good', async () => {
      const { registry, index } = setup();
      const a = await created(registry, 'acme', http('a'));
      const b = await created(registry, 'acme', http('b'));
      const c = await created(registry, 'acme', http('c'));
      // A crash after the record was deleted, before the index heard of it.
      index.failWhen = () => true;
      expect((await registry.delete('acme', b.id)).isOk()).toBe(true);
      index.failWhen = undefined;

      const first = await ids(registry, 'acme');
      expect(first.data.map((r) => r.id).sort()).toEqual([a.id, c.id].sort());
      expect(first.pagination).toEqual({ page: 1, limit: 50, total: 2, pages: 1 });

      const commitsAfterRepair = index.commits;
      const second = await ids(registry, 'acme');
      expect(second.pagination.total).toBe(2);
      expect((await ids(registry, 'acme', { type: 'http' })).pagination.total).toBe(2);
      expect((await ids(registry, 'acme', { type: 'http', health: 'unknown' })).pagination.total).toBe(2);
      expect(index.commits).toBe(commitsAfterRepair);
    });

    it('(a) a listing entry left in the wrong filter listing is moved where the record says', async () => {
      const { registry, index } = setup();
      const record = await created(registry, 'acme', http('weather'));
      index.failWhen = () => true;
      expect((await registry.update('acme', record.id, { type: 'websocket', endpoint: 'wss://weather.example' })).isOk()).toBe(true);
      index.failWhen = undefined;

      const stale = await ids(registry, 'acme', { type: 'http' });
      expect(stale).toEqual({ data: [], pagination: { page: 1, limit: 50, total: 0, pages: 0 } });
      const moved = await ids(registry, 'acme', { type: 'websocket' });
      expect(moved.data.map((r) => r.id)).toEqual([record.id]);
      expect(moved.pagination.total).toBe(1);
      expect((await ids(registry, 'acme', { type: 'http' })).pagination.total).toBe(0);
    });

    it('(b) a name whose server is gone stays taken within the grace period, then a new create takes it over', async () => {
      const { registry, index, advance } = setup();
      const old = await created(registry, 'acme', http('weather'));
      index.failWhen = (tx) => (tx.releases?.length ?? 0) > 0;
      await registry.delete('acme', old.id);
      index.failWhen = undefined;

      advance(GRACE - 1);
      expect(failure(await registry.create('acme', http('weather'))).code).toBe('SERVER_NAME_EXISTS');
      advance(2);
      const fresh = await created(registry, 'acme', http('weather'));
      expect(fresh.config.name).toBe('weather');
      expect((await ids(registry, 'acme')).data.map((r) => r.id)).toEqual([fresh.id]);
      // The takeover is a real claim: the name is taken now, by a live server.
      advance(10 * GRACE);
      expect(failure(await registry.create('acme', http('weather'))).code).toBe('SERVER_NAME_EXISTS');
    });

    it('(b) a name whose server was renamed is taken over after the grace period; the new name stays held', async () => {
      const { registry, index, advance } = setup();
      const server = await created(registry, 'acme', http('before'));
      index.failWhen = (tx) => (tx.releases?.length ?? 0) > 0;
      expect((await registry.update('acme', server.id, { name: 'after' })).isOk()).toBe(true);
      index.failWhen = undefined;

      expect(failure(await registry.create('acme', http('before'))).code).toBe('SERVER_NAME_EXISTS');
      advance(GRACE + 1);
      await created(registry, 'acme', http('before'));
      expect(failure(await registry.create('acme', http('after'))).code).toBe('SERVER_NAME_EXISTS');
      expect((await registry.get('acme', server.id))._unsafeUnwrap().config.name).toBe('after');
    });

    it('(b) a rename may take over a stale name too', async () => {
      const { registry, index, advance } = setup();
      const gone = await created(registry, 'acme', http('wanted'));
      index.failWhen = (tx) => (tx.releases?.length ?? 0) > 0;
      await registry.delete('acme', gone.id);
      index.failWhen = undefined;
      const other = await created(registry, 'acme', http('other'));
      expect(failure(await registry.update('acme', other.id, { name: 'wanted' })).code).toBe('SERVER_NAME_EXISTS');
      advance(GRACE + 1);
      expect((await registry.update('acme', other.id, { name: 'wanted' }))._unsafeUnwrap().config.name).toBe('wanted');
      await created(registry, 'acme', http('other'));
    });

    it('(b) an old claim of a live server is never taken over', async () => {
      const { registry, advance } = setup();
      await created(registry, 'acme', http('weather'));
      advance(24 * 60 * 60 * 1000);
      expect(failure(await registry.create('acme', http('weather'))).code).toBe('SERVER_NAME_EXISTS');
    });
  });

  describe('names that would make tool names ambiguous ({prefix}__{tool})', () => {
    /** Whether one of the names begins with the other followed by "__": then their tools may share a name. */
    const clashing = (names: string[]) => names.some((a) => names.some((b) => a !== b && b.startsWith(`${a}__`)));

    it('refuses a__b when a exists and a when a__b exists, naming the other server; nothing is left behind', async () => {
      const { registry, store } = setup();
      const a = await created(registry, 'acme', http('a'));
      const below = failure(await registry.create('acme', http('a__b')));
      expect(below.code).toBe('SERVER_NAME_EXISTS');
      expect(below.status).toBe(409);
      expect(below.details).toEqual({ name: 'a__b', clashes_with: { id: a.id, name: 'a' } });
      expect(below.message).toContain('"a"');
      const cd = await created(registry, 'acme', http('c__d'));
      expect(failure(await registry.create('acme', http('c'))).details).toEqual({ name: 'c', clashes_with: { id: cd.id, name: 'c__d' } });
      // Every "__" is a place a prefix may end: a___b begins with a and with a_.
      expect(failure(await registry.create('acme', http('a___b'))).details).toMatchObject({ clashes_with: { name: 'a' } });
      expect(failure(await registry.create('acme', http('c__d__e'))).details).toMatchObject({ clashes_with: { name: 'c__d' } });
      expect(store.serverKeys()).toHaveLength(2);
      // Siblings, other accounts, and names that are no prefix (their tools go by id) are no clash.
      await created(registry, 'acme', http('c__x'));
      await created(registry, 'other', http('a__b'));
      await created(registry, 'acme', http('a b__c'));
      await created(registry, 'acme', http('ab'));
    });

    it('a rename into a clash is refused and changes nothing; a server may move within its own prefix', async () => {
      const { registry } = setup();
      const a = await created(registry, 'acme', http('a'));
      const f = await created(registry, 'acme', http('f'));
      const error = failure(await registry.update('acme', f.id, { name: 'a__f' }));
      expect(error.details).toEqual({ name: 'a__f', clashes_with: { id: a.id, name: 'a' } });
      expect((await registry.get('acme', f.id))._unsafeUnwrap()).toEqual(f);
      const gh = await created(registry, 'acme', http('g__h'));
      expect(failure(await registry.update('acme', a.id, { name: 'g' })).details).toEqual({ name: 'g', clashes_with: { id: gh.id, name: 'g__h' } });
      // Alone in its prefix, a server moves below or above its own name.
      expect((await registry.update('acme', a.id, { name: 'a__x' }))._unsafeUnwrap().config.name).toBe('a__x');
      expect((await registry.update('acme', a.id, { name: 'a' }))._unsafeUnwrap().config.name).toBe('a');
      // A rename frees its old place: g is taken once g__h is named otherwise.
      await registry.update('acme', gh.id, { name: 'h' });
      await created(registry, 'acme', http('g'));
      expect(failure(await registry.create('acme', http('h__1'))).details).toMatchObject({ clashes_with: { id: gh.id } });
    });

    it('a delete frees the prefix', async () => {
      const { registry } = setup();
      const a = await created(registry, 'acme', http('a'));
      (await registry.delete('acme', a.id))._unsafeUnwrap();
      await created(registry, 'acme', http('a__b'));
    });

    it('of concurrent creates of clashing names, the ones that succeed never clash', async () => {
      for (let round = 0; round < 5; round++) {
        const { registry, store } = setup();
        store.maxDelayMs = 3;
        const names = ['k', 'k__l', 'k__m', 'k__l__n', 'k__l__n__o', 'k__m__p'];
        const results = await Promise.all(names.map((name) => registry.create('acme', http(name))));
        for (const r of results) if (r.isErr()) expect(r.error.code).toBe('SERVER_NAME_EXISTS');
        const kept = (await ids(registry, 'acme')).data.map((r) => r.config.name);
        expect(kept.length).toBeGreaterThan(0);
        expect(clashing(kept), kept.join(' ')).toBe(false);
        expect(store.serverKeys()).toHaveLength(kept.length);
      }
    });

    it('a name above, left claimed by a server gone, is respected within the grace period and then taken over', async () => {
      const { registry, index, advance } = setup();
      const a = await created(registry, 'acme', http('a'));
      index.failWhen = (tx) => (tx.releases?.length ?? 0) > 0;
      await registry.delete('acme', a.id);
      index.failWhen = undefined;
      expect(failure(await registry.create('acme', http('a__b'))).details).toEqual({ name: 'a__b' });
      advance(GRACE + 1);
      await created(registry, 'acme', http('a__b'));
      expect(failure(await registry.create('acme', http('a'))).code).toBe('SERVER_NAME_EXISTS');
    });

    it('an entry below a name left by a server gone is repaired by the next create of that name', async () => {
      const { registry, index } = setup();
      const below = await created(registry, 'acme', http('a__b'));
      // Its delete wrote the record but no index commit: its entry below `a` and the claim of `a` for those below stay.
      index.failWhen = () => true;
      await registry.delete('acme', below.id);
      index.failWhen = undefined;
      await created(registry, 'acme', http('a'));
      expect(failure(await registry.create('acme', http('a__c'))).details).toMatchObject({ clashes_with: { name: 'a' } });
    });

    it('the last server below a name gone, the name is free again; a sibling left keeps it taken', async () => {
      const { registry } = setup();
      const one = await created(registry, 'acme', http('a__b'));
      const two = await created(registry, 'acme', http('a__c'));
      (await registry.delete('acme', one.id))._unsafeUnwrap();
      expect(failure(await registry.create('acme', http('a'))).details).toEqual({ name: 'a', clashes_with: { id: two.id, name: 'a__c' } });
      (await registry.update('acme', two.id, { name: 'z' }))._unsafeUnwrap();
      await created(registry, 'acme', http('a'));
    });
  });

  describe('through createFleet', () => {
    it('uses the `now` option and a grace period of a minute for stale names', async () => {
      let clock = T0;
      const index = new FlakyIndex(new MemoryIndexStore({ now: () => clock }));
      const fleet = createFleet({ store: { ...createMemoryStore({ now: () => clock }), index }, now: () => clock });
      const server = (await fleet.servers.create('acme', { name: 'weather', type: 'http', endpoint: 'https://w.example' }))._unsafeUnwrap();
      expect(server.created_at).toBe('2026-11-22T10:00:00.000Z');
      index.failWhen = (tx) => (tx.releases?.length ?? 0) > 0;
      expect((await fleet.servers.delete('acme', server.id))._unsafeUnwrap()).toEqual({ id: server.id, deleted: true });
      index.failWhen = undefined;
      clock += 59_000;
      expect((await fleet.servers.create('acme', { name: 'weather', type: 'http', endpoint: 'https://w.example' }))._unsafeUnwrapErr().code).toBe(
        'SERVER_NAME_EXISTS',
      );
      clock += 2000;
      expect((await fleet.servers.create('acme', { name: 'weather', type: 'http', endpoint: 'https://w.example' })).isOk()).toBe(true);
    });

    it('answers the detail shape without secrets', async () => {
      const fleet = createFleet();
      const detail = (
        await fleet.servers.create('acme', {
          name: 'weather',
          type: 'http',
          endpoint: 'https://w.example',
          authentication: { type: 'oauth2', client_id: 'cid', client_secret: 'SECRET-XYZ' },
        })
      )._unsafeUnwrap();
      expect(JSON.stringify(detail)).not.toContain('SECRET-XYZ');
      expect(detail.authentication).toEqual({ type: 'oauth2', client_id: 'cid' });
      const listed = (await fleet.servers.list('acme'))._unsafeUnwrap();
      expect(JSON.stringify(listed)).not.toContain('SECRET-XYZ');
      expect(listed.pagination).toEqual({ page: 1, limit: 50, total: 1, pages: 1 });
    });
  });
});

describe('ServerRegistry events', () => {
  it('announces each change that landed, with the redacted view only', async () => {
    const { registry, emitted } = setup();
    const server = await created(registry, 'acme', http('events', { authentication: { type: 'bearer', token: 'TOKEN-XYZ' } }));
    await registry.update('acme', server.id, { timeout: 5000 });
    await registry.delete('acme', server.id);
    expect(emitted.map((e) => e.type)).toEqual(['server.created', 'server.updated', 'server.deleted']);
    expect(emitted[1]?.event).toMatchObject({ account: 'acme', server: { id: server.id, timeout: 5000, authentication: { type: 'bearer' } } });
    expect(JSON.stringify(emitted)).not.toContain('TOKEN-XYZ');
  });

  it('announces nothing for a refused change', async () => {
    const { registry, emitted } = setup();
    const server = await created(registry, 'acme', http('taken'));
    emitted.length = 0;
    expect((await registry.create('acme', http('taken'))).isErr()).toBe(true);
    expect((await registry.update('acme', server.id, { timeout: -1 })).isErr()).toBe(true);
    expect((await registry.delete('other', server.id)).isErr()).toBe(true);
    expect(emitted).toEqual([]);
  });
});
