import { describe, expect, it } from 'vitest';
import { isoTimeOf } from './iso-time.js';

describe('isoTimeOf', () => {
  it('answers toISOString of the millisecond, made again only when it moves', () => {
    const isoAt = isoTimeOf();
    const t = Date.UTC(2026, 10, 24, 10, 0, 0, 5);
    const first = isoAt(t);
    expect(first).toBe(new Date(t).toISOString());
    expect(isoAt(t)).toBe(first);
    expect(isoAt(t + 1)).toBe(new Date(t + 1).toISOString());
    expect(isoAt(t)).toBe(first);
  });
});
