import { describe, expect, it } from 'vitest';
import { rateLimitStoreContract, type RateLimitClock } from '../testing/index.js';
import { MemoryRateLimitStore } from './memory-rate-limit-store.js';

let time = 1_700_000_000_000;
const clock: RateLimitClock = {
  now: () => time,
  advance: async (ms) => {
    time += ms;
  },
};

rateLimitStoreContract('MemoryRateLimitStore', async ({ now }) => new MemoryRateLimitStore({ now }), { clock });

// The real clock too: the same cases with Date.now and real waiting, as the store runs in production.
rateLimitStoreContract('MemoryRateLimitStore (Date.now)', async () => new MemoryRateLimitStore());

describe('MemoryRateLimitStore', () => {
  it('decides synchronously: a value, not a promise', () => {
    const store = new MemoryRateLimitStore({ now: () => 0 });
    const counter = { key: 'k', limit: 2 };
    expect(store.consume([counter], 1000)).toEqual({ allowed: true, counts: [1] });
    expect(store.consume([counter], 1000)).toEqual({ allowed: true, counts: [2] });
    expect(store.consume([counter], 1000)).toEqual({ allowed: false, counts: [2] });
  });
});
