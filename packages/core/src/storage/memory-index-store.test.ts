import { describe, expect, it } from 'vitest';
import { indexStoreContract } from '../testing/index.js';
import { MemoryIndexStore } from './memory-index-store.js';

indexStoreContract('MemoryIndexStore', async ({ now }) => new MemoryIndexStore({ now }));

/** A repeatable `rand(n)` (an integer below `n`): a linear congruential generator from `seed`. */
function seeded(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % n;
  };
}

describe('MemoryIndexStore', () => {
  it('uses Date.now when no clock is given', async () => {
    const store = new MemoryIndexStore();
    const before = Date.now();
    await store.commit({ claims: [{ key: 'k', owner: 'a' }] });
    const since = (await store.claimOf('k'))?.since ?? Number.NaN;
    expect(since).toBeGreaterThanOrEqual(before);
    expect(since).toBeLessThanOrEqual(Date.now());
  });

  it('hands out copies: changing a returned claim does not change the store', async () => {
    const store = new MemoryIndexStore({ now: () => 1 });
    await store.commit({ claims: [{ key: 'k', owner: 'a' }] });
    const claim = await store.claimOf('k');
    if (claim) claim.owner = 'mallory';
    expect(await store.claimOf('k')).toEqual({ owner: 'a', since: 1 });
  });

  it('keeps a large set in order through random adds, re-scores and removes', async () => {
    const store = new MemoryIndexStore();
    const model = new Map<string, number>();
    const rand = seeded(42);
    for (let i = 0; i < 2000; i++) {
      const member = `m${rand(300)}`;
      if (rand(4) === 0) {
        model.delete(member);
        await store.commit({ remove: [{ set: 's', member }] });
      } else {
        const score = rand(50);
        model.set(member, score);
        await store.commit({ add: [{ set: 's', member, score }] });
      }
    }
    const expected = [...model.entries()]
      .sort(([ma, sa], [mb, sb]) => sa - sb || (ma < mb ? -1 : ma > mb ? 1 : 0))
      .map(([member]) => member);
    expect(await store.count('s')).toBe(model.size);
    expect(await store.range('s', { offset: 0, limit: 10_000 })).toEqual(expected);
    expect(await store.range('s', { offset: 10, limit: 25, order: 'desc' })).toEqual([...expected].reverse().slice(10, 35));
  });

  it('keeps members listed in several sets apart per set through random adds, re-scores, removes and emptied sets', async () => {
    // One member's entries in all its sets hang from one lookup: moving or removing it in one set leaves the others.
    const store = new MemoryIndexStore();
    const sets = ['a', 'b', 'c', 'd'];
    const model = new Map(sets.map((set) => [set, new Map<string, number>()]));
    const rand = seeded(7);
    for (let i = 0; i < 3000; i++) {
      const member = `m${rand(40)}`;
      const set = sets[rand(sets.length)] as string;
      const scores = model.get(set) as Map<string, number>;
      if (rand(3) === 0) {
        scores.delete(member);
        await store.commit({ remove: [{ set, member }] });
      } else if (rand(10) === 0) {
        // The same member into every set at once, as a create lists a server.
        const score = rand(20);
        for (const s of sets) model.get(s)?.set(member, score);
        await store.commit({ add: sets.map((s) => ({ set: s, member, score })) });
      } else {
        const score = rand(20);
        scores.set(member, score);
        await store.commit({ add: [{ set, member, score }] });
      }
      if (i % 500 === 499) {
        // Empty a set whole now and then: it is dropped and made again by the next add.
        const emptied = sets[rand(sets.length)] as string;
        const gone = [...(model.get(emptied) as Map<string, number>).keys()];
        model.get(emptied)?.clear();
        await store.commit({ remove: gone.map((member) => ({ set: emptied, member })) });
        expect(await store.count(emptied)).toBe(0);
      }
    }
    for (const set of sets) {
      const expected = [...(model.get(set) as Map<string, number>).entries()]
        .sort(([ma, sa], [mb, sb]) => sa - sb || (ma < mb ? -1 : ma > mb ? 1 : 0))
        .map(([member]) => member);
      expect(await store.range(set, { offset: 0, limit: 1000 })).toEqual(expected);
      expect(await store.count(set)).toBe(expected.length);
    }
  });

  it('keeps a set of many blocks in order: appends, ties within a score, adds and removes anywhere, pages at any offset', () => {
    // Thousands of members: a set kept in blocks fills, splits and empties blocks; every page must still be exact.
    const store = new MemoryIndexStore();
    const model = new Map<string, number>();
    const rand = seeded(11);
    const expected = () =>
      [...model.entries()].sort(([ma, sa], [mb, sb]) => sa - sb || (ma < mb ? -1 : ma > mb ? 1 : 0)).map(([member]) => member);
    const check = () => {
      const all = expected();
      expect(store.count('s')).toBe(all.length);
      expect(store.range('s', { offset: 0, limit: 100_000 })).toEqual(all);
      for (let k = 0; k < 20; k++) {
        const offset = rand(all.length + 10);
        const limit = 1 + rand(1500);
        expect(store.range('s', { offset, limit })).toEqual(all.slice(offset, offset + limit));
        expect(store.range('s', { offset, limit, order: 'desc' })).toEqual([...all].reverse().slice(offset, offset + limit));
      }
    };
    // Creates in time order, several a millisecond (a tie is ordered by member, which comes in random order).
    for (let i = 0; i < 6000; i++) {
      const member = `m${rand(1_000_000)}`;
      if (model.has(member)) continue;
      model.set(member, Math.floor(i / 7));
      store.commit({ add: [{ set: 's', member, score: Math.floor(i / 7) }] });
    }
    check();
    // Then old members re-scored to the front, the middle and the end, and removed anywhere, whole blocks included.
    const members = [...model.keys()];
    for (let i = 0; i < 4000; i++) {
      const member = members[rand(members.length)] as string;
      if (rand(2) === 0) {
        model.delete(member);
        store.commit({ remove: [{ set: 's', member }] });
      } else {
        const score = rand(3) === 0 ? -1 : rand(900);
        model.set(member, score);
        store.commit({ add: [{ set: 's', member, score }] });
      }
      if (i % 1000 === 999) check();
    }
    for (const member of expected().slice(100, 1300)) {
      model.delete(member);
      store.commit({ remove: [{ set: 's', member }] });
    }
    check();
  });

  it('keeps order when adds mostly come newest last, with ties and an older one between', async () => {
    const store = new MemoryIndexStore();
    const adds: [string, number][] = [['b', 1], ['c', 2], ['a', 2], ['d', 2], ['e', 3], ['f', 0], ['g', 3], ['c', 4]];
    for (const [member, score] of adds) await store.commit({ add: [{ set: 's', member, score }] });
    expect(await store.range('s', { offset: 0, limit: 100 })).toEqual(['f', 'b', 'a', 'd', 'e', 'g', 'c']);
  });
});

describe('MemoryIndexStore slots given back and taken again', () => {
  it('gives a released claim no trace: the next claim in its slot has its own owner and time', () => {
    let clock = 100;
    const store = new MemoryIndexStore({ now: () => clock });
    store.commit({ claims: [{ key: 'a', owner: 'one' }] });
    clock = 200;
    store.commit({ releases: [{ key: 'a', owner: 'one' }] });
    store.commit({ claims: [{ key: 'b', owner: 'two' }] });
    expect(store.claimOf('a')).toBeUndefined();
    expect(store.claimOf('b')).toEqual({ owner: 'two', since: 200 });
    // A claim taken again by its owner keeps its time; by another (a takeover), it takes the new time.
    clock = 300;
    expect(store.commit({ claims: [{ key: 'b', owner: 'two' }] })).toEqual({ ok: true });
    expect(store.claimOf('b')).toEqual({ owner: 'two', since: 200 });
    expect(store.commit({ claims: [{ key: 'b', owner: 'three', replacing: 'two' }] })).toEqual({ ok: true });
    expect(store.claimOf('b')).toEqual({ owner: 'three', since: 300 });
    expect(store.commit({ claims: [{ key: 'b', owner: 'four' }] })).toEqual({ ok: false, conflict: { key: 'b', owner: 'three', since: 300 } });
  });

  it('gives a member listed at different scores no trace: the next member in its slot is listed at its own', () => {
    const store = new MemoryIndexStore();
    store.commit({ add: [{ set: 's', member: 'old', score: 1 }, { set: 't', member: 'old', score: 2 }] });
    store.commit({ remove: [{ set: 's', member: 'old' }, { set: 't', member: 'old' }] });
    store.commit({ add: [{ set: 's', member: 'new', score: 5 }, { set: 't', member: 'new', score: 5 }] });
    store.commit({ add: [{ set: 's', member: 'x', score: 4 }, { set: 't', member: 'x', score: 6 }] });
    // Moved in `t` only: found at its score there, and at its own in `s`.
    store.commit({ add: [{ set: 't', member: 'new', score: 7 }] });
    expect(store.range('s', { offset: 0, limit: 10 })).toEqual(['x', 'new']);
    expect(store.range('t', { offset: 0, limit: 10 })).toEqual(['x', 'new']);
    store.commit({ remove: [{ set: 's', member: 'new' }] });
    store.commit({ add: [{ set: 't', member: 'new', score: 1 }] });
    expect(store.range('s', { offset: 0, limit: 10 })).toEqual(['x']);
    expect(store.range('t', { offset: 0, limit: 10 })).toEqual(['new', 'x']);
  });
});
