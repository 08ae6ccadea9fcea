import { describe, expect, it } from 'vitest';
import { createFleet } from '../fleet.js';
import type { IndexStore, IndexTransaction } from '../storage/index-store.js';
import { createMemoryStore } from '../store.js';

/**
 * A create whose index commit landed but whose answer was lost (a connection cut after the database committed,
 * docs/postgres.md "Faults"): the create must answer what is stored. Here over the memory store, whose commit is
 * made to apply and then fail, as a lost reply does.
 */
const http = (name: string) => ({ name, type: 'http' as const, endpoint: 'https://mcp.example.com/mcp' });

function storeLosingAnswers() {
  const store = createMemoryStore();
  const inner = store.index;
  let lose = 0;
  let claimReadsFail = false;
  const index: IndexStore = {
    commit: (tx: IndexTransaction) => {
      const result = inner.commit(tx);
      if (lose > 0) {
        lose--;
        return Promise.reject(new Error('Connection terminated unexpectedly'));
      }
      return Promise.resolve(result);
    },
    claimOf: (key) => (claimReadsFail ? Promise.reject(new Error('Connection refused')) : inner.claimOf(key)),
    range: (set, options) => inner.range(set, options),
    count: (set) => inner.count(set),
  };
  return {
    store: { ...store, index },
    loseNext: () => (lose = 1),
    failClaimReads: (fail: boolean) => (claimReadsFail = fail),
  };
}

describe('a create whose commit landed and whose answer was lost', () => {
  it('answers the server created, stored whole: read, listed, counted and its name taken', async () => {
    const { store, loseNext } = storeLosingAnswers();
    const fleet = createFleet({ store, webhooks: false });
    loseNext();
    const created = await fleet.servers.create('acme', http('landed'));
    expect(created.isOk()).toBe(true);
    const server = created._unsafeUnwrap();
    expect((await fleet.servers.get('acme', server.id))._unsafeUnwrap().name).toBe('landed');
    const page = (await fleet.servers.list('acme'))._unsafeUnwrap();
    expect(page.data.map((s) => s.id)).toEqual([server.id]);
    expect(page.pagination.total).toBe(1);
    expect((await fleet.servers.create('acme', http('landed')))._unsafeUnwrapErr().code).toBe('SERVER_NAME_EXISTS');
    await fleet.close();
  });

  it('a lost answer that cannot be checked either stays STORAGE_UNAVAILABLE', async () => {
    const { store, loseNext, failClaimReads } = storeLosingAnswers();
    const fleet = createFleet({ store, webhooks: false });
    loseNext();
    failClaimReads(true);
    const created = await fleet.servers.create('acme', http('unknown'));
    expect(created._unsafeUnwrapErr().code).toBe('STORAGE_UNAVAILABLE');
    await fleet.close();
  });
});
