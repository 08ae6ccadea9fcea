import { describe, expect, it } from 'vitest';
import { KeyedLanes } from './keyed-lanes.js';

const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
};

describe('KeyedLanes', () => {
  it('runs at most `width` tasks per key, the others in arrival order; other keys are not held', async () => {
    const lanes = new KeyedLanes(2);
    const gates = [gate(), gate(), gate(), gate()];
    const started: number[] = [];
    const runs = gates.map((g, i) => lanes.run('a', async () => (started.push(i), await g.opened, i)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1]);
    expect(lanes.active('a')).toBe(2);
    // Another tenant runs at once while `a` is full.
    expect(await lanes.run('b', async () => 'b')).toBe('b');
    gates[1]?.open();
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1, 2]);
    for (const g of gates) g.open();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3]);
    expect(lanes.active('a')).toBe(0);
  });

  it('a failed task frees its slot', async () => {
    const lanes = new KeyedLanes(1);
    await expect(lanes.run('a', async () => Promise.reject(new Error('x')))).rejects.toThrow('x');
    expect(await lanes.run('a', async () => 1)).toBe(1);
    expect(lanes.active('a')).toBe(0);
  });
});
