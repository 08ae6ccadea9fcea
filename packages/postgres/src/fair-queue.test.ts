import { describe, expect, it } from 'vitest';
import { FairQueue } from './fair-queue.js';

describe('FairQueue', () => {
  it('takes one of each group in turn, each group in its own order, up to max', () => {
    const queue = new FairQueue<string>();
    for (let i = 1; i <= 5; i++) queue.push('a', `a${i}`);
    queue.push('b', 'b1');
    queue.push('c', 'c1');
    queue.push('b', 'b2');
    expect(queue.size).toBe(8);
    expect(queue.take(4)).toEqual(['a1', 'b1', 'c1', 'a2']);
    expect(queue.take(10)).toEqual(['b2', 'a3', 'a4', 'a5']);
    expect(queue.size).toBe(0);
    expect(queue.take(10)).toEqual([]);
  });

  it('with more groups than max, the next take starts with the groups this one left out', () => {
    const queue = new FairQueue<string>();
    for (const group of ['a', 'b', 'c']) for (let i = 1; i <= 2; i++) queue.push(group, `${group}${i}`);
    expect(queue.take(2)).toEqual(['a1', 'b1']);
    expect(queue.take(2)).toEqual(['c1', 'a2']);
    expect(queue.take(2)).toEqual(['b2', 'c2']);
  });

  it('a group that comes back after it emptied waits its turn behind the others', () => {
    const queue = new FairQueue<string>();
    queue.push('a', 'a1');
    queue.push('b', 'b1');
    queue.push('b', 'b2');
    expect(queue.take(1)).toEqual(['a1']);
    queue.push('a', 'a2');
    expect(queue.take(3)).toEqual(['b1', 'a2', 'b2']);
  });
});
