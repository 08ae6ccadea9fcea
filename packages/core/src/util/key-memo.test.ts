import { describe, expect, it } from 'vitest';
import { memoKeys } from './key-memo.js';

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
