import type { IndexStore, IndexTransaction } from '../storage/index-store.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/** What the contract hands `open`: the clock the store must use for the `since` of the claims it takes. */
export interface OpenIndexStoreOptions {
  now: () => number;
}

export interface IndexStoreContractOptions {
  /**
   * `open()` after `close()` reaches the same data, until `cleanup` runs: the store is durable, and the contract
   * checks that a commit survives a close and a reopen.
   * @default false
   */
  durable?: boolean;
  /**
   * Two stores open at once reach the same data (one file, one Redis), as two processes sharing storage do: the
   * contract then races commits over two stores instead of one.
   * @default false
   */
  shared?: boolean;
}

/**
 * The cases every IndexStore must pass (keyv's `storageTestSuite` in spirit). `open` gives a store, empty unless
 * `durable` and reopened within one case; the contract closes every store it opened and then calls `cleanup`
 * after each case.
 */
export function indexStoreContract(
  name: string,
  open: (options: OpenIndexStoreOptions) => Promise<IndexStore>,
  cleanup?: () => Promise<void> | void,
  options: IndexStoreContractOptions = {},
): void {
  describe(`IndexStore contract: ${name}`, () => {
    let clock = 0;
    const now = () => clock;
    const opened: IndexStore[] = [];
    let store: IndexStore;

    const openStore = async () => {
      const s = await open({ now });
      opened.push(s);
      return s;
    };

    beforeEach(async () => {
      clock = 1_700_000_000_000;
      store = await openStore();
    });

    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close?.();
      await cleanup?.();
    });

    const all = (set: string, order: 'asc' | 'desc' = 'asc') => store.range(set, { offset: 0, limit: 1000, order });
    const commitOk = async (tx: IndexTransaction) => expect(await store.commit(tx)).toEqual({ ok: true });

    describe('claims', () => {
      it('a free claim succeeds and claimOf reports its owner and the store clock as since', async () => {
        await commitOk({ claims: [{ key: 'name:a', owner: 'srv_1' }] });
        expect(await store.claimOf('name:a')).toEqual({ owner: 'srv_1', since: 1_700_000_000_000 });
      });

      it('claimOf of a key never claimed is undefined', async () => {
        expect(await store.claimOf('name:nobody')).toBeUndefined();
      });

      it('an empty transaction succeeds and changes nothing', async () => {
        await commitOk({});
        await commitOk({ claims: [], releases: [], add: [], remove: [] });
        expect(await store.count('s')).toBe(0);
      });

      it('takes several free claims in one commit', async () => {
        await commitOk({ claims: [{ key: 'k1', owner: 'a' }, { key: 'k2', owner: 'b' }] });
        expect((await store.claimOf('k1'))?.owner).toBe('a');
        expect((await store.claimOf('k2'))?.owner).toBe('b');
      });

      it('a claim held by another owner fails, names the holder and its since, and leaves the claim as it was', async () => {
        await commitOk({ claims: [{ key: 'k', owner: 'a' }] });
        clock += 5000;
        const result = await store.commit({ claims: [{ key: 'k', owner: 'b' }] });
        expect(result).toEqual({ ok: false, conflict: { key: 'k', owner: 'a', since: 1_700_000_000_000 } });
        expect(await store.claimOf('k')).toEqual({ owner: 'a', since: 1_700_000_000_000 });
      });

      it('a conflicting commit writes nothing else of the same transaction', async () => {
        await commitOk({
          claims: [{ key: 'held', owner: 'a' }, { key: 'mine', owner: 'c' }],
          add: [{ set: 's', member: 'x', score: 1 }],
        });
        const result = await store.commit({
          claims: [{ key: 'free', owner: 'b' }, { key: 'held', owner: 'b' }],
          releases: [{ key: 'mine', owner: 'c' }],
          add: [
            { set: 's', member: 'y', score: 2 },
            { set: 's', member: 'x', score: 99 },
            { set: 'other', member: 'z', score: 1 },
          ],
          remove: [{ set: 's', member: 'x' }],
        });
        expect(result.ok).toBe(false);
        if (!result.ok) expect(result.conflict).toMatchObject({ key: 'held', owner: 'a' });
        expect(await store.claimOf('free')).toBeUndefined();
        expect(await store.claimOf('held')).toMatchObject({ owner: 'a' });
        expect(await store.claimOf('mine')).toMatchObject({ owner: 'c' });
        expect(await all('s')).toEqual(['x']);
        expect(await store.count('s')).toBe(1);
        expect(await store.count('other')).toBe(0);
        expect(await all('other')).toEqual([]);
      });

      it('reports the first conflicting claim in the order given', async () => {
        await commitOk({ claims: [{ key: 'k1', owner: 'a' }, { key: 'k2', owner: 'a' }] });
        const result = await store.commit({ claims: [{ key: 'k0', owner: 'b' }, { key: 'k2', owner: 'b' }, { key: 'k1', owner: 'b' }] });
        expect(result.ok).toBe(false);
        if (!result.ok) expect(result.conflict?.key).toBe('k2');
      });

      it('the same owner may claim again; its since does not move', async () => {
        await commitOk({ claims: [{ key: 'k', owner: 'a' }] });
        clock += 60_000;
        await commitOk({ claims: [{ key: 'k', owner: 'a' }], add: [{ set: 's', member: 'm', score: 1 }] });
        expect(await store.claimOf('k')).toEqual({ owner: 'a', since: 1_700_000_000_000 });
        expect(await all('s')).toEqual(['m']);
      });

      it('`replacing` takes over the named owner’s claim, with a new since', async () => {
        await commitOk({ claims: [{ key: 'k', owner: 'a' }] });
        clock += 120_000;
        await commitOk({ claims: [{ key: 'k', owner: 'b', replacing: 'a' }] });
        expect(await store.claimOf('k')).toEqual({ owner: 'b', since: 1_700_000_120_000 });
      });

      it('`replacing` naming another owner than the holder is a conflict', async () => {
        await commitOk({ claims: [{ key: 'k', owner: 'a' }] });
        const result = await store.commit({ claims: [{ key: 'k', owner: 'b', replacing: 'z' }] });
        expect(result).toEqual({ ok: false, conflict: { key: 'k', owner: 'a', since: 1_700_000_000_000 } });
        expect(await store.claimOf('k')).toMatchObject({ owner: 'a' });
      });

      it('`replacing` on a free key simply claims it', async () => {
        await commitOk({ claims: [{ key: 'k', owner: 'b', replacing: 'a' }] });
        expect(await store.claimOf('k')).toMatchObject({ owner: 'b' });
      });

      it('a claim is released only by its owner', async () => {
        await commitOk({ claims: [{ key: 'k', owner: 'a' }] });
        await commitOk({ releases: [{ key: 'k', owner: 'b' }] });
        expect(await store.claimOf('k')).toMatchObject({ owner: 'a' });
        await commitOk({ releases: [{ key: 'k', owner: 'a' }] });
        expect(await store.claimOf('k')).toBeUndefined();
        await commitOk({ claims: [{ key: 'k', owner: 'b' }] });
        expect(await store.claimOf('k')).toMatchObject({ owner: 'b' });
      });

      it('releasing a free key is a no-op', async () => {
        await commitOk({ releases: [{ key: 'never', owner: 'a' }] });
        expect(await store.claimOf('never')).toBeUndefined();
      });

      it('releases one key and claims another in one commit (a rename)', async () => {
        await commitOk({ claims: [{ key: 'old', owner: 'a' }] });
        await commitOk({ claims: [{ key: 'new', owner: 'a' }], releases: [{ key: 'old', owner: 'a' }] });
        expect(await store.claimOf('old')).toBeUndefined();
        expect(await store.claimOf('new')).toMatchObject({ owner: 'a' });
      });

      it('claims are exact keys: case and prefixes are distinct', async () => {
        await commitOk({ claims: [{ key: 'name:acct:Foo', owner: 'a' }] });
        await commitOk({ claims: [{ key: 'name:acct:foo', owner: 'b' }, { key: 'name:acct:Fo', owner: 'c' }] });
        expect((await store.claimOf('name:acct:Foo'))?.owner).toBe('a');
        expect((await store.claimOf('name:acct:foo'))?.owner).toBe('b');
      });
    });

    describe('ordered sets', () => {
      const seed = () =>
        commitOk({
          add: [
            { set: 's', member: 'c', score: 2 },
            { set: 's', member: 'a', score: 3 },
            { set: 's', member: 'b', score: 2 },
            { set: 's', member: 'B', score: 2 },
            { set: 's', member: 'z', score: 1 },
          ],
        });

      it('orders by score, then by member (binary order), ascending', async () => {
        await seed();
        expect(await all('s')).toEqual(['z', 'B', 'b', 'c', 'a']);
      });

      it('applies a commit naming a member twice in a set, or in runs apart, as its adds in order (the last score holds)', async () => {
        await commitOk({
          add: [
            { set: 's', member: 'a', score: 5 },
            { set: 't', member: 'a', score: 1 },
            { set: 's', member: 'b', score: 3 },
            { set: 's', member: 'a', score: 2 },
            { set: 's', member: 'a', score: 4 },
          ],
        });
        expect(await all('s')).toEqual(['b', 'a']);
        expect(await store.count('s')).toBe(2);
        await commitOk({ add: [{ set: 's', member: 'c', score: 3.5 }] });
        expect(await all('s')).toEqual(['b', 'c', 'a']);
        // Its place in `t` stays as it was, and taking it out of `s` leaves it there.
        await commitOk({ remove: [{ set: 's', member: 'a' }] });
        expect(await all('s')).toEqual(['b', 'c']);
        expect(await all('t')).toEqual(['a']);
      });

      it('desc reverses both the score and the member order', async () => {
        await seed();
        expect(await all('s', 'desc')).toEqual(['a', 'c', 'b', 'B', 'z']);
      });

      it('pages with offset and limit, in both orders', async () => {
        await seed();
        expect(await store.range('s', { offset: 0, limit: 2 })).toEqual(['z', 'B']);
        expect(await store.range('s', { offset: 2, limit: 2 })).toEqual(['b', 'c']);
        expect(await store.range('s', { offset: 4, limit: 2 })).toEqual(['a']);
        expect(await store.range('s', { offset: 5, limit: 2 })).toEqual([]);
        expect(await store.range('s', { offset: 100, limit: 2 })).toEqual([]);
        expect(await store.range('s', { offset: 0, limit: 2, order: 'desc' })).toEqual(['a', 'c']);
        expect(await store.range('s', { offset: 2, limit: 2, order: 'desc' })).toEqual(['b', 'B']);
        expect(await store.range('s', { offset: 4, limit: 2, order: 'desc' })).toEqual(['z']);
        expect(await store.range('s', { offset: 7, limit: 2, order: 'desc' })).toEqual([]);
      });

      it('a store that answers at once answers what it holds already (no promise: the fleet goes on without waiting)', async () => {
        await seed();
        const counted = store.count('s');
        // A store that answers later is not what this case is about; its answer is still awaited, so that it cannot
        // fail after the case, with the store closed under it (an unhandled rejection of the run).
        if (counted instanceof Promise) return void (await counted);
        // Answering at once is all or nothing: the fleet reads a listing at once only when it can read all of it.
        expect(store.range('s', { offset: 0, limit: 2 })).not.toBeInstanceOf(Promise);
        expect(store.claimOf('absent')).not.toBeInstanceOf(Promise);
        expect(counted).toBe(5);
        for (const options of [
          { offset: 0, limit: 2 },
          { offset: 2, limit: 2 },
          { offset: 100, limit: 2 },
          { offset: 1, limit: 3, order: 'desc' as const },
          { offset: 0, limit: Number.MAX_SAFE_INTEGER },
        ]) {
          expect(store.range('s', options)).toEqual(await store.range('s', options));
        }
        expect(store.count('absent')).toBe(0);
        expect(store.range('absent', { offset: 0, limit: 10 })).toEqual([]);
        // A commit answered at once was applied before it returned, all or nothing.
        expect(store.commit({ claims: [{ key: 'now', owner: 'a' }], add: [{ set: 'now', member: 'm', score: 1 }], limits: [{ set: 'now', max: 2 }] })).toEqual({ ok: true });
        expect(store.count('now')).toBe(1);
        expect(store.commit({ claims: [{ key: 'now', owner: 'b' }], add: [{ set: 'now', member: 'n', score: 2 }] })).toMatchObject({ ok: false, conflict: { key: 'now', owner: 'a' } });
        expect(store.commit({ add: [{ set: 'now', member: 'n', score: 2 }], limits: [{ set: 'now', max: 1 }] })).toEqual({ ok: false, full: { set: 'now', max: 1 } });
        expect(store.range('now', { offset: 0, limit: 10 })).toEqual(['m']);
        expect((await store.claimOf('now'))?.owner).toBe('a');
      });

      it('appliedCommits, where the store has it, moves with every commit applied and never with one refused', async () => {
        if (store.appliedCommits === undefined) return;
        const before = store.appliedCommits();
        await commitOk({ claims: [{ key: 'counted', owner: 'a' }], add: [{ set: 'counted', member: 'm', score: 1 }] });
        const after = store.appliedCommits();
        expect(after).toBeGreaterThan(before);
        expect((await store.commit({ claims: [{ key: 'counted', owner: 'b' }], add: [{ set: 'counted', member: 'n', score: 2 }] })).ok).toBe(false);
        expect(store.appliedCommits()).toBe(after);
      });

      it('setRevision, where the store has it, moves with every change of its set, never with another set or a refused commit', async () => {
        if (store.setRevision === undefined) return;
        const revision = (set: string) => (store.setRevision as (set: string) => number)(set);
        const seen = [revision('watched')];
        await commitOk({ add: [{ set: 'watched', member: 'm', score: 1 }] });
        seen.push(revision('watched'));
        await commitOk({ add: [{ set: 'other', member: 'm', score: 1 }] });
        expect(revision('watched')).toBe(seen.at(-1));
        // The same member at the same score changes nothing.
        await commitOk({ add: [{ set: 'watched', member: 'm', score: 1 }] });
        expect(revision('watched')).toBe(seen.at(-1));
        expect((await store.commit({ add: [{ set: 'watched', member: 'n', score: 2 }], limits: [{ set: 'watched', max: 1 }] })).ok).toBe(false);
        expect(revision('watched')).toBe(seen.at(-1));
        await commitOk({ add: [{ set: 'watched', member: 'm', score: 2 }] });
        seen.push(revision('watched'));
        await commitOk({ remove: [{ set: 'watched', member: 'm' }] });
        seen.push(revision('watched'));
        // Emptied, then holding its first member again: every state answered a number of its own.
        await commitOk({ add: [{ set: 'watched', member: 'm', score: 1 }] });
        seen.push(revision('watched'));
        expect(new Set(seen).size).toBe(seen.length);
      });

      it('a limit of Number.MAX_SAFE_INTEGER reads the whole set', async () => {
        await seed();
        expect(await store.range('s', { offset: 0, limit: Number.MAX_SAFE_INTEGER })).toHaveLength(5);
        expect(await store.range('s', { offset: 1, limit: Number.MAX_SAFE_INTEGER, order: 'desc' })).toEqual(['c', 'b', 'B', 'z']);
      });

      it('keeps millisecond timestamps, negative and fractional scores in order', async () => {
        await commitOk({
          add: [
            { set: 't', member: 'late', score: Date.parse('2026-11-22T10:00:00.001Z') },
            { set: 't', member: 'early', score: Date.parse('2026-11-22T10:00:00.000Z') },
            { set: 't', member: 'neg', score: -1.5 },
            { set: 't', member: 'half', score: 0.5 },
          ],
        });
        expect(await all('t')).toEqual(['neg', 'half', 'early', 'late']);
      });

      it('adding a member again re-scores it instead of adding a second entry', async () => {
        await seed();
        await commitOk({ add: [{ set: 's', member: 'z', score: 10 }] });
        expect(await store.count('s')).toBe(5);
        expect(await all('s')).toEqual(['B', 'b', 'c', 'a', 'z']);
        await commitOk({ add: [{ set: 's', member: 'z', score: 10 }] });
        expect(await store.count('s')).toBe(5);
        await commitOk({ add: [{ set: 's', member: 'z', score: -10 }] });
        expect(await all('s')).toEqual(['z', 'B', 'b', 'c', 'a']);
      });

      it('removes members; removing an absent member or from an absent set is a no-op', async () => {
        await seed();
        await commitOk({ remove: [{ set: 's', member: 'b' }] });
        expect(await all('s')).toEqual(['z', 'B', 'c', 'a']);
        await commitOk({ remove: [{ set: 's', member: 'b' }, { set: 's', member: 'nope' }, { set: 'nowhere', member: 'a' }] });
        expect(await all('s')).toEqual(['z', 'B', 'c', 'a']);
        expect(await store.count('s')).toBe(4);
        expect(await store.count('nowhere')).toBe(0);
      });

      it('count follows adds and removes; a set emptied again counts 0 and ranges []', async () => {
        expect(await store.count('s')).toBe(0);
        await seed();
        expect(await store.count('s')).toBe(5);
        await commitOk({ remove: ['a', 'b', 'B', 'c', 'z'].map((member) => ({ set: 's', member })) });
        expect(await store.count('s')).toBe(0);
        expect(await all('s')).toEqual([]);
        expect(await all('s', 'desc')).toEqual([]);
      });

      it('an empty or unknown set ranges [] and counts 0', async () => {
        expect(await store.range('unknown', { offset: 0, limit: 10 })).toEqual([]);
        expect(await store.range('unknown', { offset: 0, limit: 10, order: 'desc' })).toEqual([]);
        expect(await store.count('unknown')).toBe(0);
      });

      it('sets are independent: the same member may be in several with different scores', async () => {
        await commitOk({
          add: [
            { set: 'one', member: 'm', score: 1 },
            { set: 'two', member: 'm', score: 5 },
            { set: 'two', member: 'n', score: 2 },
            { set: 'one:sub', member: 'x', score: 0 },
          ],
        });
        await commitOk({ remove: [{ set: 'one', member: 'm' }] });
        expect(await all('one')).toEqual([]);
        expect(await all('two')).toEqual(['n', 'm']);
        expect(await all('one:sub')).toEqual(['x']);
      });

      it('applies claims, releases, adds and removes of one commit together', async () => {
        await commitOk({ claims: [{ key: 'old', owner: 'a' }], add: [{ set: 's', member: 'a', score: 1 }, { set: 'h1', member: 'a', score: 1 }] });
        await commitOk({
          claims: [{ key: 'new', owner: 'a' }],
          releases: [{ key: 'old', owner: 'a' }],
          remove: [{ set: 'h1', member: 'a' }],
          add: [{ set: 'h2', member: 'a', score: 1 }],
        });
        expect(await store.claimOf('old')).toBeUndefined();
        expect((await store.claimOf('new'))?.owner).toBe('a');
        expect(await all('h1')).toEqual([]);
        expect(await all('h2')).toEqual(['a']);
        expect(await all('s')).toEqual(['a']);
      });
    });

    describe('limits', () => {
      const fill = (set: string, n: number) => commitOk({ add: Array.from({ length: n }, (_, i) => ({ set, member: `m${i}`, score: i })) });

      it('a commit goes through while its limited set holds fewer than max members', async () => {
        await fill('quota', 2);
        await commitOk({ limits: [{ set: 'quota', max: 3 }], add: [{ set: 'quota', member: 'new', score: 9 }] });
        expect(await store.count('quota')).toBe(3);
      });

      it('a full set refuses the commit, names the set and its max, and nothing of the commit is written', async () => {
        await fill('quota', 3);
        await commitOk({ claims: [{ key: 'mine', owner: 'c' }] });
        const result = await store.commit({
          limits: [{ set: 'quota', max: 3 }],
          claims: [{ key: 'free', owner: 'b' }],
          releases: [{ key: 'mine', owner: 'c' }],
          add: [{ set: 'quota', member: 'new', score: 9 }, { set: 'other', member: 'x', score: 1 }],
          remove: [{ set: 'quota', member: 'm0' }],
        });
        expect(result).toEqual({ ok: false, full: { set: 'quota', max: 3 } });
        expect(await store.claimOf('free')).toBeUndefined();
        expect(await store.claimOf('mine')).toMatchObject({ owner: 'c' });
        expect(await all('quota')).toEqual(['m0', 'm1', 'm2']);
        expect(await store.count('other')).toBe(0);
      });

      it('counts the set before the commit: a set over its max (a lowered quota) refuses every commit naming the limit', async () => {
        await fill('quota', 5);
        expect(await store.commit({ limits: [{ set: 'quota', max: 2 }], add: [{ set: 'quota', member: 'new', score: 9 }] })).toEqual({
          ok: false,
          full: { set: 'quota', max: 2 },
        });
        expect((await store.commit({ limits: [{ set: 'quota', max: 2 }], remove: [{ set: 'quota', member: 'm0' }] })).ok).toBe(false);
        expect(await store.count('quota')).toBe(5);
      });

      it('a max of 0 refuses always; an empty or unknown set has room for a max of 1', async () => {
        expect((await store.commit({ limits: [{ set: 'none', max: 0 }], add: [{ set: 'none', member: 'a', score: 1 }] })).ok).toBe(false);
        await commitOk({ limits: [{ set: 'none', max: 1 }], add: [{ set: 'none', member: 'a', score: 1 }] });
        expect((await store.commit({ limits: [{ set: 'none', max: 1 }], add: [{ set: 'none', member: 'b', score: 1 }] })).ok).toBe(false);
        expect(await all('none')).toEqual(['a']);
      });

      it('several limits: the first full one in the order given is named', async () => {
        await fill('a', 1);
        await fill('b', 1);
        const result = await store.commit({ limits: [{ set: 'roomy', max: 5 }, { set: 'b', max: 1 }, { set: 'a', max: 1 }] });
        expect(result).toEqual({ ok: false, full: { set: 'b', max: 1 } });
      });

      it('a held claim is reported before a full set', async () => {
        await fill('quota', 1);
        await commitOk({ claims: [{ key: 'k', owner: 'a' }] });
        const result = await store.commit({ claims: [{ key: 'k', owner: 'b' }], limits: [{ set: 'quota', max: 1 }] });
        expect(result).toMatchObject({ ok: false, conflict: { key: 'k', owner: 'a' } });
      });

      it('a removal in the same commit does not make room: the count is taken before the commit', async () => {
        await fill('quota', 2);
        const result = await store.commit({ limits: [{ set: 'quota', max: 2 }], remove: [{ set: 'quota', member: 'm0' }], add: [{ set: 'quota', member: 'n', score: 1 }] });
        expect(result.ok).toBe(false);
        expect(await store.count('quota')).toBe(2);
      });
    });

    describe('concurrency', () => {
      it(`of 60 concurrent commits adding to a set limited to 25, exactly 25 land${options.shared === true ? ' (over two stores on the same data)' : ''}`, async () => {
        const stores = options.shared === true ? [store, await openStore()] : [store];
        const results = await Promise.all(
          Array.from({ length: 60 }, (_, i) =>
            (stores[i % stores.length] as IndexStore).commit({
              limits: [{ set: 'quota', max: 25 }],
              add: [{ set: 'quota', member: `m${String(i).padStart(2, '0')}`, score: i }, { set: 'by-type', member: `m${i}`, score: i }],
            }),
          ),
        );
        expect(results.filter((r) => r.ok)).toHaveLength(25);
        for (const r of results) if (!r.ok) expect(r.full).toEqual({ set: 'quota', max: 25 });
        expect(await store.count('quota')).toBe(25);
        expect(await store.count('by-type')).toBe(25);
      });

      it('of 100 concurrent commits claiming one key exactly one succeeds, and only its writes land', async () => {
        const results = await Promise.all(
          Array.from({ length: 100 }, (_, i) =>
            store.commit({ claims: [{ key: 'contested', owner: `o${i}` }], add: [{ set: 'winners', member: `o${i}`, score: i }] }),
          ),
        );
        const winners = results.flatMap((r, i) => (r.ok ? [`o${i}`] : []));
        expect(winners).toHaveLength(1);
        const [winner] = winners;
        for (const r of results) if (!r.ok) expect(r.conflict).toMatchObject({ key: 'contested', owner: winner });
        expect((await store.claimOf('contested'))?.owner).toBe(winner);
        expect(await all('winners')).toEqual(winners);
      });

      it('100 concurrent commits to one set lose no member', async () => {
        await Promise.all(Array.from({ length: 100 }, (_, i) => store.commit({ add: [{ set: 's', member: `m${String(i).padStart(3, '0')}`, score: i % 7 }] })));
        expect(await store.count('s')).toBe(100);
        expect(new Set(await all('s')).size).toBe(100);
      });
    });

    describe('lifecycle', () => {
      it('close is idempotent', async () => {
        const s = await openStore();
        await s.close?.();
        await s.close?.();
      });

      it.runIf(options.durable === true)('a commit survives close and reopen', async () => {
        await commitOk({
          claims: [{ key: 'k', owner: 'a' }],
          add: [{ set: 's', member: 'x', score: 2 }, { set: 's', member: 'y', score: 1 }],
        });
        await store.close?.();
        clock += 1000;
        const reopened = await openStore();
        expect(await reopened.claimOf('k')).toEqual({ owner: 'a', since: 1_700_000_000_000 });
        expect(await reopened.range('s', { offset: 0, limit: 10 })).toEqual(['y', 'x']);
        expect(await reopened.count('s')).toBe(2);
        const conflict = await reopened.commit({ claims: [{ key: 'k', owner: 'b' }] });
        expect(conflict.ok).toBe(false);
      });
    });
  });
}
