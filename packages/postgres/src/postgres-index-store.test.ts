import type { IndexStore } from '@mcp-fleet/core';
import { indexStoreContract } from '@mcp-fleet/core/testing';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { indexClosingStore } from '../../../test/support/index-of-store.js';
import { DATABASE_URL, dropSchemas, sql, uniqueSchema, withoutPostgres } from '../../../test/support/postgres.js';
import { createPostgresStore, type PostgresStore } from './index.js';

const skip = withoutPostgres('PostgresIndexStore');
const connectionString = DATABASE_URL as string;
/** The file's schema; the contract's cases empty its index tables after each case. */
const schema = uniqueSchema('index');

afterAll(async () => {
  if (!skip) await dropSchemas(schema);
});

/** The index of a store of its own, whose close also ends the pool the contract made it open. */
async function openIndex(now?: () => number): Promise<IndexStore> {
  return indexClosingStore(await createPostgresStore({ connectionString, schema, now, sweepIntervalMs: 0 }));
}

describe.skipIf(skip)('PostgresIndexStore on a real PostgreSQL', () => {
  indexStoreContract('PostgresIndexStore', ({ now }) => openIndex(now), () => sql(`TRUNCATE "${schema}".claims, "${schema}".sets, "${schema}".set_members`).then(() => {}), {
    durable: true,
    shared: true,
  });

  describe('beyond the contract', () => {
    const opened: PostgresStore[] = [];
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
      await sql(`TRUNCATE "${schema}".claims, "${schema}".sets, "${schema}".set_members`);
    });
    const open = async (now?: () => number) => {
      const store = await createPostgresStore({ connectionString, schema, now, sweepIntervalMs: 0 });
      opened.push(store);
      return store;
    };

    it('without a clock, a claim is dated by the database', async () => {
      const { index } = await open();
      const before = Date.now();
      expect(await index.commit({ claims: [{ key: 'k', owner: 'a' }] })).toEqual({ ok: true });
      const [{ now }] = (await sql<{ now: string }>('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now')) as [{ now: string }];
      const since = (await index.claimOf('k'))?.since as number;
      // The database's clock, on this machine within a second of the process's.
      expect(Math.abs(since - before)).toBeLessThan(1000);
      expect(since).toBeLessThanOrEqual(Number(now));
    });

    it('writes rows in its own tables and keeps each set size with its members', async () => {
      const { index } = await open(() => 1234);
      await index.commit({ claims: [{ key: 'name:acme:Weather', owner: 'srv_1' }], add: [{ set: 'servers:acme', member: 'srv_1', score: 5 }, { set: 'servers:acme', member: 'srv_2', score: Infinity }] });
      expect(await sql(`SELECT key, owner, since FROM "${schema}".claims`)).toEqual([{ key: 'name:acme:Weather', owner: 'srv_1', since: '1234' }]);
      expect(await sql(`SELECT set_name, member, score FROM "${schema}".set_members ORDER BY member`)).toEqual([
        { set_name: 'servers:acme', member: 'srv_1', score: 5 },
        { set_name: 'servers:acme', member: 'srv_2', score: Infinity },
      ]);
      await index.commit({ remove: [{ set: 'servers:acme', member: 'srv_1' }, { set: 'servers:acme', member: 'absent' }] });
      expect(await sql(`SELECT name, size FROM "${schema}".sets`)).toEqual([{ name: 'servers:acme', size: '1' }]);
    });

    it('commits crossing each other’s keys in opposite orders never deadlock', async () => {
      const [a, b] = [await open(), await open()];
      const keys = Array.from({ length: 8 }, (_, i) => `k${i}`);
      const results = await Promise.all(
        Array.from({ length: 80 }, (_, i) => {
          const order = i % 2 === 0 ? keys : [...keys].reverse();
          return (i % 2 === 0 ? a : b).index.commit({
            claims: order.map((key) => ({ key, owner: 'same' })),
            add: order.map((key) => ({ set: `set-${key}`, member: `m${i}`, score: i })),
            limits: order.map((key) => ({ set: `set-${key}`, max: 1000 })),
          });
        }),
      );
      expect(results.every((r) => r.ok)).toBe(true);
      for (const key of keys) expect(await a.index.count(`set-${key}`)).toBe(80);
    });
  });
});
