import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CommitResult, createMemoryStore, type FleetStore, type IndexStore, type IndexTransaction, MemoryIndexStore } from '@mcp-fleet/core';
import { createRedisStore } from '@mcp-fleet/redis';
import { createSqliteStore } from '@mcp-fleet/sqlite';
import type Keyv from 'keyv';
import { afterAll, describe, expect, it } from 'vitest';
import { ADAPTERS, serveFleet } from '../support/adapters.js';
import { expectError, expectSuccess, freshClient, httpServer, total } from '../support/http-client.js';
import { deleteKeys, REDIS_URL, uniquePrefix, withoutRedis } from '../support/redis.js';

/**
 * docs/architecture.md "One road": a store whose index commit fails on the create path (the commit that names and
 * lists the server) answers 503 STORAGE_UNAVAILABLE with nothing left stored: no record, no name claim, no listing,
 * whether the store throws at once or rejects, over the memory stores as over SQLite and Redis.
 */

/** Whether `tx` is a create's naming commit (it claims a server name). */
const namesServer = (tx: IndexTransaction) => (tx.claims ?? []).some(({ key }) => key.startsWith('name:'));

/** Turned on around the request under test only: the API key's own commits must land. */
const failing = { on: false };

/** The memory index, whose commit throws at once while `failing.on` (its clock is read in every applied commit). */
class ThrowingIndex extends MemoryIndexStore {
  constructor() {
    super({
      now: () => {
        if (failing.on) throw new Error('index down (thrown)');
        return Date.now();
      },
    });
  }
}

/** The memory index, whose naming commit rejects while `failing.on`, as a store over the network would. */
class RejectingIndex extends MemoryIndexStore {
  override commit(tx: IndexTransaction): CommitResult {
    // A rejected promise where this store answers at once: what a port may answer (`T | Promise<T>`).
    if (failing.on && namesServer(tx)) return Promise.reject(new Error('index down (rejected)')) as unknown as CommitResult;
    return super.commit(tx);
  }
}

/** `store` with its naming commits failing while `failing.on` (rejected, or thrown at once); everything else passes through. */
function failingCommits<S extends IndexStore>(store: S, how: 'rejects' | 'throws'): S {
  const fail = () => {
    if (how === 'throws') throw new Error('index down (thrown)');
    return Promise.reject(new Error('index down (rejected)'));
  };
  return new Proxy(store, {
    get(target, property) {
      if (property === 'commit') return (tx: IndexTransaction) => (failing.on && namesServer(tx) ? fail() : target.commit(tx));
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The record keys a Keyv is asked to write (the fleet's own memory is read directly instead). */
function watchWrites(storage: Keyv): string[] {
  const written: string[] = [];
  const set = storage.set.bind(storage);
  storage.set = ((key: string, ...rest: unknown[]) => {
    written.push(key);
    return (set as (...args: unknown[]) => Promise<boolean>)(key, ...rest);
  }) as Keyv['set'];
  return written;
}

interface StoreUnderTest {
  name: string;
  skip?: boolean;
  open(): Promise<FleetStore>;
}

/** `store` with another index: every other port as it is, closed with it. */
const withIndex = (store: FleetStore, index: IndexStore): FleetStore => ({
  records: store.records,
  keyPrefix: store.keyPrefix,
  index,
  rateLimits: store.rateLimits,
  leases: store.leases,
  close: () => store.close(),
});

const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-create-failures-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const STORES: StoreUnderTest[] = [
  { name: 'memory, commit throws at once', open: async () => withIndex(createMemoryStore(), new ThrowingIndex()) },
  { name: 'memory, commit rejects', open: async () => withIndex(createMemoryStore(), new RejectingIndex()) },
  ...(['rejects', 'throws'] as const).flatMap((how): StoreUnderTest[] => [
    {
      name: `SQLite, commit ${how}`,
      open: async () => {
        const sqlite = await createSqliteStore({ path: join(dir, `${Math.random().toString(36).slice(2)}.sqlite`) });
        return withIndex(sqlite, failingCommits(sqlite.index, how));
      },
    },
    {
      name: `Redis, commit ${how}`,
      skip: withoutRedis('create-store-failures on Redis'),
      open: async () => {
        const keyPrefix = uniquePrefix('create-failures');
        const redis = await createRedisStore({ url: REDIS_URL as string, keyPrefix });
        return {
          ...withIndex(redis, failingCommits(redis.index, how)),
          close: async () => {
            await redis.close();
            await deleteKeys(keyPrefix);
          },
        };
      },
    },
  ]),
];

describe.each(ADAPTERS)('a create whose index commit fails ($name)', (adapter) => {
  for (const store of STORES) {
    it.skipIf(store.skip === true)(`${store.name}: 503 STORAGE_UNAVAILABLE, and nothing stored: no record, no claim, no listing`, async () => {
      const opened = await store.open();
      const { records: storage, index } = opened;
      const close = () => opened.close();
      const written = watchWrites(storage);
      const served = await serveFleet(adapter, { store: opened, webhooks: { worker: false }, onError: () => {} });
      try {
        const client = await freshClient(served);
        const name = `failing-${Math.random().toString(36).slice(2, 8)}`;
        failing.on = true;
        let refused;
        try {
          refused = await client.post('/servers', httpServer({ name }));
        } finally {
          failing.on = false;
        }
        expectError(refused, 503, 'STORAGE_UNAVAILABLE');
        // No record: neither in the fleet's own memory nor among the keys the store was asked to write.
        const memory = [...((storage as unknown as { store: Map<string, unknown> }).store?.keys?.() ?? [])].filter((key) => key.includes('server:'));
        expect(memory).toEqual([]);
        for (const key of written.filter((k) => k.includes('server:'))) expect(await storage.get(key)).toBeUndefined();
        // No claim, no listing.
        expect(await index.claimOf(`name:${encodeURIComponent(client.account)}:${name}`)).toBeUndefined();
        expect(await index.count(`servers:${encodeURIComponent(client.account)}`)).toBe(0);
        expect(await total(client)).toBe(0);
        // Once the store answers again, the name is free.
        expectSuccess(await client.post('/servers', httpServer({ name })), 201);
        expect(await total(client)).toBe(1);
      } finally {
        await served.close();
        await close();
      }
    });
  }
});
