import { describe, expect, it } from 'vitest';
import { ByAccount } from './by-account.js';

describe('ByAccount', () => {
  const entries = (map: ReadonlyMap<string, { account: string; n: number }>) => [...map.entries()].map(([key, value]) => [key, value.n]);

  it('keeps each account’s entries apart through sets, replacements, deletes and clear', () => {
    const map = new ByAccount<{ account: string; n: number }>((value) => value.account);
    map.set('a1', { account: 'a', n: 1 }).set('b1', { account: 'b', n: 2 }).set('a2', { account: 'a', n: 3 });
    expect(entries(map.of('a'))).toEqual([['a1', 1], ['a2', 3]]);
    expect(entries(map.of('b'))).toEqual([['b1', 2]]);
    expect(map.of('nobody').size).toBe(0);
    // Replaced under the same key by an entry of another account: it moves.
    map.set('a1', { account: 'b', n: 4 });
    expect(entries(map.of('a'))).toEqual([['a2', 3]]);
    expect(entries(map.of('b'))).toEqual([['b1', 2], ['a1', 4]]);
    expect(map.delete('a2')).toBe(true);
    expect(map.delete('a2')).toBe(false);
    expect(map.of('a').size).toBe(0);
    expect(map.size).toBe(2);
    map.clear();
    expect(map.size).toBe(0);
    expect(map.of('b').size).toBe(0);
  });
});
