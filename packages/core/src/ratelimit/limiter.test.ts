import { ResultAsync } from 'neverthrow';
import { describe, expect, it } from 'vitest';
import { toAsync } from '../util/result.js';
import { MemoryRateLimitStore } from './memory-rate-limit-store.js';
import type { RateLimitStore } from './rate-limit-store.js';
import { RateLimiter } from './limiter.js';

const principal = { account: 'acme', tier: 'free' as const, scopes: null };
const T0 = Date.parse('2026-11-24T10:00:10.000Z');

describe('RateLimiter, one decision whatever the store', () => {
  it('decides at once over the memory store, exactly as over a store that answers promises', async () => {
    const options = { tiers: { free: 3 }, operations: { 'servers.list': 2 } };
    const memory = new RateLimiter(options, () => T0);
    const backing = new MemoryRateLimitStore({ now: () => T0 });
    const remote: RateLimitStore = { consume: async (counters, expiresAt, cost) => backing.consume(counters, expiresAt, cost) };
    const elsewhere = new RateLimiter({ ...options, store: remote }, () => T0);
    expect(memory.decidesInProcess).toBe(true);
    expect(elsewhere.decidesInProcess).toBe(false);
    // A Result, not a ResultAsync: the request goes on without waiting for a promise.
    const atOnce = [1, 2, 3].map(() => {
      const decided = memory.admit(principal, 'servers.list');
      if (decided instanceof ResultAsync) throw new Error('the memory store decided later');
      return decided;
    });
    const later = [elsewhere.admit(principal, 'servers.list'), elsewhere.admit(principal, 'servers.list'), elsewhere.admit(principal, 'servers.list')];
    for (const decided of later) expect(decided).toBeInstanceOf(ResultAsync);
    const settled = await Promise.all(later);
    expect(atOnce.map((r) => r._unsafeUnwrap())).toEqual(settled.map((r) => r._unsafeUnwrap()));
    expect(atOnce.map((r) => r._unsafeUnwrap()?.allowed)).toEqual([true, true, false]);
    // The refused third took nothing: the tier has 1 left, then none.
    expect((await memory.admit(principal, undefined))._unsafeUnwrap()?.allowed).toBe(true);
    expect((await memory.admit(principal, undefined))._unsafeUnwrap()?.allowed).toBe(false);
  });

  it.each([
    ['throws', (): never => {
      throw new Error('store down');
    }],
    ['rejects', () => Promise.reject(new Error('store down'))],
  ])('answers STORAGE_UNAVAILABLE when the store %s, or admits without a decision when failing open', async (_, consume) => {
    const store: RateLimitStore = { consume };
    const closed = await new RateLimiter({ store }, () => T0).admit(principal, 'servers.list');
    expect(closed._unsafeUnwrapErr().code).toBe('STORAGE_UNAVAILABLE');
    const open = await new RateLimiter({ store, failOpen: true }, () => T0).admit(principal, 'servers.list');
    expect(open._unsafeUnwrap()).toBeNull();
  });
});

describe('RateLimiter, a batch (admit with its costs)', () => {
  it('counts a batch whole against the tier and its calls against the operation, or refuses it whole naming the limit without room', async () => {
    const limiter = new RateLimiter({ tiers: { free: 10 }, operations: { 'tools.call': 4 } }, () => T0);
    const admit = (requests: number, ofOperation: number) =>
      toAsync(limiter.admit(principal, ofOperation > 0 ? 'tools.call' : undefined, { requests, ofOperation })).then((r) => r._unsafeUnwrap());
    expect(await admit(5, 3)).toMatchObject({ allowed: true, limit: 4, remaining: 1, scope: 'operation' });
    // Two calls where one is left: refused by tools.call, which still has 1, though the tier has 5.
    expect(await admit(2, 2)).toMatchObject({ allowed: false, limit: 4, remaining: 1, scope: 'operation' });
    // Six messages where the tier has 5: refused by the tier, though tools.call has room for the one call.
    expect(await admit(6, 1)).toMatchObject({ allowed: false, limit: 10, remaining: 5, scope: 'tier' });
    // Nothing was spent by the refusals: five messages without a call fit exactly.
    expect(await admit(5, 0)).toMatchObject({ allowed: true, limit: 10, remaining: 0, scope: 'tier' });
  });
});

describe('RateLimiter, the counters kept for a window', () => {
  it("counts each request against its own key's tier, when keys of one account carry different tiers", async () => {
    const limiter = new RateLimiter({ tiers: { free: 3, pro: 5 } }, () => T0);
    const free = { account: 'acme', tier: 'free' as const, scopes: null };
    const pro = { account: 'acme', tier: 'pro' as const, scopes: null };
    const decide = async (who: typeof free | typeof pro) => (await toAsync(limiter.admit(who, 'servers.list')))._unsafeUnwrap();
    // One tier counter per account: the free key's decisions see its limit of 3, the pro key's its limit of 5.
    expect(await decide(free)).toMatchObject({ allowed: true, limit: 3, remaining: 2 });
    expect(await decide(pro)).toMatchObject({ allowed: true, limit: 5, remaining: 3 });
    expect(await decide(free)).toMatchObject({ allowed: true, limit: 3, remaining: 0 });
    expect(await decide(free)).toMatchObject({ allowed: false, limit: 3, remaining: 0 });
    expect(await decide(pro)).toMatchObject({ allowed: true, limit: 5, remaining: 1 });
    // The next window starts every counter again, the kept ones with it.
    let now = T0;
    const windows = new RateLimiter({ tiers: { free: 3 } }, () => now);
    expect((await toAsync(windows.admit(free, undefined)))._unsafeUnwrap()).toMatchObject({ remaining: 2 });
    expect((await toAsync(windows.admit(free, undefined)))._unsafeUnwrap()).toMatchObject({ remaining: 1 });
    now += 60_000;
    expect((await toAsync(windows.admit(free, undefined)))._unsafeUnwrap()).toMatchObject({ remaining: 2, reset: Math.floor(now / 60_000) * 60 + 60 });
  });

  it('reads the clock for the headers of a refusal only (Retry-After)', () => {
    const reset = Math.floor(T0 / 60_000) * 60 + 60;
    let reads = 0;
    const clock = () => {
      reads++;
      return T0;
    };
    const admitted = { allowed: true, limit: 3, remaining: 2, reset, scope: 'tier' as const };
    expect(RateLimiter.headers(admitted, clock)).toEqual({ 'x-ratelimit-limit': '3', 'x-ratelimit-remaining': '2', 'x-ratelimit-reset': String(reset) });
    expect(reads).toBe(0);
    const refused = { ...admitted, allowed: false, remaining: 0 };
    expect(RateLimiter.headers(refused, clock)['retry-after']).toBe('50');
    expect(RateLimiter.headers(refused, T0)['retry-after']).toBe('50');
    expect(reads).toBe(1);
  });
});
