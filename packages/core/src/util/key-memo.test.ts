import { describe, expect, it } from 'vitest';
import { kept, memoKeys } from './key-memo.js';

describe('memoKeys', () => {
  it('answers what keyOf answers, the same string for the same id, and stays within its bound', () => {
    let made = 0;
    const keyOf = memoKeys((id) => {
      made++;
      return `server:${id}`;
    }, 3);
    expect(keyOf('a')).toBe('server:a');
    expect(keyOf('a')).toBe('server:a');
    expect(made).toBe(1);
    for (const id of ['b', 'c', 'd', 'e']) expect(keyOf(id)).toBe(`server:${id}`);
    // Cleared when full: 'a' is made again, and still right.
    expect(keyOf('a')).toBe('server:a');
    expect(made).toBe(6);
  });
});

describe('kept', () => {
  it('hands out the value made the first time for a key, and is cleared all at once at its bound', () => {
    const store = new Map<string, string[]>();
    const made: string[] = [];
    const names = (key: string) => kept(store, key, (k) => (made.push(k), [`${k}:1`, `${k}:2`]), 2);
    const first = names('a');
    expect(names('a')).toBe(first);
    expect(first).toEqual(['a:1', 'a:2']);
    names('b');
    expect(store.size).toBe(2);
    names('c');
    expect(store.size).toBe(1);
    expect(names('a')).not.toBe(first);
    expect(made).toEqual(['a', 'b', 'c', 'a']);
  });
});
