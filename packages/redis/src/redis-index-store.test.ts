import type { IndexStore } from '@mcp-fleet/core';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { indexStoreContract } from '@mcp-fleet/core/testing';
import { indexClosingStore } from '../../../test/support/index-of-store.js';
import { deleteKeys, keysStartingWith, rawClient, REDIS_URL, uniquePrefix, withoutRedis } from '../../../test/support/redis.js';
import { createRedisStore, RedisIndexStore, type RedisStore } from './index.js';

const skip = withoutRedis('RedisIndexStore');
const url = REDIS_URL as string;
/** Every prefix this file used, deleted after it. */
const used: string[] = [];
const prefix = (label: string) => {
  const p = uniquePrefix(label);
  used.push(p);
  return p;
};

afterAll(async () => {
  if (skip) return;
  for (const p of used) await deleteKeys(p);
});

/** The index of a storage of its own, whose close also closes the connection the contract opened. */
async function openIndex(keyPrefix: string, now?: () => number): Promise<IndexStore> {
  return indexClosingStore(await createRedisStore({ url, keyPrefix, now }));
}

describe.skipIf(skip)('RedisIndexStore on a real Redis', () => {
  // A fresh prefix for every case; reopening within a case reaches the same keys (durable).
  let current = prefix('contract');
  indexStoreContract(
    'RedisIndexStore',
    ({ now }) => openIndex(current, now),
    async () => {
      await deleteKeys(current);
      current = prefix('contract');
    },
    { durable: true, shared: true },
  );

  describe('beyond the contract', () => {
    const toClose: RedisStore[] = [];
    afterEach(async () => {
      for (const r of toClose.splice(0)) await r.close();
    });
    const open = async (keyPrefix: string, now?: () => number) => {
      const r = await createRedisStore({ url, keyPrefix, now });
      toClose.push(r);
      return r;
    };

    it('writes claims as hashes and sets as sorted sets under its prefix, and nothing else', async () => {
      const p = prefix('layout');
      const { index } = await open(p, () => 1234);
      await index.commit({ claims: [{ key: 'name:acme:Weather', owner: 'srv_1' }], add: [{ set: 'servers:acme', member: 'srv_1', score: 5 }] });
      expect(await keysStartingWith(p)).toEqual([`${p}index:claim:name:acme:Weather`, `${p}index:set:servers:acme`]);
      const client = await rawClient();
      try {
        expect(await client.hGetAll(`${p}index:claim:name:acme:Weather`)).toEqual({ owner: 'srv_1', since: '1234' });
        expect(await client.zRangeWithScores(`${p}index:set:servers:acme`, 0, -1)).toEqual([{ value: 'srv_1', score: 5 }]);
      } finally {
        await client.close();
      }
    });

    it('two prefixes on one Redis are two independent stores', async () => {
      const one = (await open(prefix('one'))).index;
      const two = (await open(prefix('two'))).index;
      await one.commit({ claims: [{ key: 'k', owner: 'a' }], add: [{ set: 's', member: 'm', score: 1 }] });
      expect(await two.claimOf('k')).toBeUndefined();
      expect(await two.count('s')).toBe(0);
      expect(await two.commit({ claims: [{ key: 'k', owner: 'b' }] })).toEqual({ ok: true });
    });

    it('equal scores order by member byte by byte, desc reverses them; ties survive paging', async () => {
      const { index } = await open(prefix('ties'));
      const members = ['srv_b', 'srv_A', 'srv_a', 'srv_B', 'srv_0', 'srv_a0', 'srv_'];
      await index.commit({ add: members.map((member) => ({ set: 't', member, score: 7 })) });
      const asc = [...members].sort();
      expect(await index.range('t', { offset: 0, limit: 100 })).toEqual(asc);
      expect(await index.range('t', { offset: 0, limit: 100, order: 'desc' })).toEqual([...asc].reverse());
      const paged: string[] = [];
      for (let offset = 0; offset < members.length; offset += 3) paged.push(...(await index.range('t', { offset, limit: 3, order: 'desc' })));
      expect(paged).toEqual([...asc].reverse());
    });

    it('scores of ±Infinity are kept at the ends; NaN is refused before anything is written', async () => {
      const { index } = await open(prefix('scores'));
      await index.commit({ add: [{ set: 's', member: 'mid', score: 0 }, { set: 's', member: 'top', score: Infinity }, { set: 's', member: 'bottom', score: -Infinity }] });
      expect(await index.range('s', { offset: 0, limit: 10 })).toEqual(['bottom', 'mid', 'top']);
      await expect(index.commit({ claims: [{ key: 'k', owner: 'a' }], add: [{ set: 's', member: 'x', score: Number.NaN }] })).rejects.toThrow(TypeError);
      expect(await index.claimOf('k')).toBeUndefined();
      expect(await index.count('s')).toBe(3);
    });

    it('a zero or negative limit reads nothing', async () => {
      const { index } = await open(prefix('limits'));
      await index.commit({ add: [{ set: 's', member: 'a', score: 1 }] });
      expect(await index.range('s', { offset: 0, limit: 0 })).toEqual([]);
      expect(await index.range('s', { offset: 0, limit: -1 })).toEqual([]);
    });

    it('runs again after the server forgot its scripts (NOSCRIPT: EVAL loads it again)', async () => {
      const { index } = await open(prefix('noscript'));
      await index.commit({ claims: [{ key: 'before', owner: 'a' }] });
      const client = await rawClient();
      try {
        await client.sendCommand(['SCRIPT', 'FLUSH']);
      } finally {
        await client.close();
      }
      expect(await index.commit({ claims: [{ key: 'after', owner: 'a' }] })).toEqual({ ok: true });
      expect((await index.claimOf('after'))?.owner).toBe('a');
    });

    it('a closed store rejects its calls; its connection stays for its owner', async () => {
      const redis = await open(prefix('closed'));
      await redis.index.close();
      await expect(redis.index.count('s')).rejects.toThrow(/closed/);
      await expect(redis.index.commit({ add: [{ set: 's', member: 'm', score: 1 }] })).rejects.toThrow(/closed/);
      expect(await redis.rateLimits.consume([{ key: 'k', limit: 1 }], Date.now() + 60_000)).toEqual({ allowed: true, counts: [1] });
    });

    it('can be built over any client that sends commands', async () => {
      const client = await rawClient();
      try {
        const p = prefix('own-client');
        const index = new RedisIndexStore({ client, keyPrefix: p, now: () => 99 });
        expect(await index.commit({ claims: [{ key: 'k', owner: 'a' }] })).toEqual({ ok: true });
        expect(await index.claimOf('k')).toEqual({ owner: 'a', since: 99 });
        await index.close();
        expect(client.isReady).toBe(true);
      } finally {
        await client.close();
      }
    });

    it('refuses a commandTimeout that is not a positive number', async () => {
      const client = await rawClient();
      try {
        expect(() => new RedisIndexStore({ client, commandTimeout: 0 })).toThrow(TypeError);
        expect(() => new RedisIndexStore({ client, commandTimeout: Number.NaN })).toThrow(TypeError);
      } finally {
        await client.close();
      }
    });
  });
});
