import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from './memory-rate-limit-store.js';
import type { RateLimitStore } from './rate-limit-store.js';
import { RateLimiter } from './limiter.js';

const principal = { account: 'acme', tier: 'free' as const, scopes: null };
const T0 = Date.parse('2026-11-24T10:00:10.000Z');

describe('RateLimiter, decided at once (admitNow)', () => {
  it('counts and decides exactly as admit does, sharing its counters', async () => {
    const options = { tiers: { free: 3 }, operations: { 'servers.list': 2 } };
    const now = new RateLimiter(options, () => T0);
    const later = new RateLimiter(options, () => T0);
    const sync = [now.admitNow(principal, 'servers.list'), now.admitNow(principal, 'servers.list'), now.admitNow(principal, 'servers.list')];
    const async_ = [await later.admit(principal, 'servers.list'), await later.admit(principal, 'servers.list'), await later.admit(principal, 'servers.list')];
    expect(sync.map((r) => r?._unsafeUnwrap())).toEqual(async_.map((r) => r._unsafeUnwrap()));
    expect(sync.map((r) => r?._unsafeUnwrap()?.allowed)).toEqual([true, true, false]);
    // The same counters as admit: the refused third took nothing, so the tier has 1 left, for admit, then none.
    expect((await now.admit(principal, undefined))._unsafeUnwrap()?.allowed).toBe(true);
    expect(now.admitNow(principal, undefined)?._unsafeUnwrap()?.allowed).toBe(false);
  });

  it('leaves a store that is not in this process to admit (undefined)', async () => {
    const memory = new MemoryRateLimitStore({ now: () => T0 });
    const remote: RateLimitStore = { consume: (counters, expiresAt, cost) => memory.consume(counters, expiresAt, cost) };
    const limiter = new RateLimiter({ store: remote }, () => T0);
    expect(limiter.decidesInProcess).toBe(false);
    expect(limiter.admitNow(principal, 'servers.list')).toBeUndefined();
    expect((await limiter.admit(principal, 'servers.list'))._unsafeUnwrap()?.allowed).toBe(true);
  });
});

describe('RateLimiter, a batch (admit with its costs)', () => {
  it('counts a batch whole against the tier and its calls against the operation, or refuses it whole naming the limit without room', async () => {
    const limiter = new RateLimiter({ tiers: { free: 10 }, operations: { 'tools.call': 4 } }, () => T0);
    const admit = (requests: number, ofOperation: number) =>
      limiter.admit(principal, ofOperation > 0 ? 'tools.call' : undefined, { requests, ofOperation }).then((r) => r._unsafeUnwrap());
    expect(await admit(5, 3)).toMatchObject({ allowed: true, limit: 4, remaining: 1, scope: 'operation' });
    // Two calls where one is left: refused by tools.call, which still has 1, though the tier has 5.
    expect(await admit(2, 2)).toMatchObject({ allowed: false, limit: 4, remaining: 1, scope: 'operation' });
    // Six messages where the tier has 5: refused by the tier, though tools.call has room for the one call.
    expect(await admit(6, 1)).toMatchObject({ allowed: false, limit: 10, remaining: 5, scope: 'tier' });
    // Nothing was spent by the refusals: five messages without a call fit exactly.
    expect(await admit(5, 0)).toMatchObject({ allowed: true, limit: 10, remaining: 0, scope: 'tier' });
  });
});
