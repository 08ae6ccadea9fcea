import type { RateLimitStore } from '../ratelimit/rate-limit-store.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/**
 * How the contract moves time past a window's end. A store on an injectable clock advances it (`advance`); a store
 * on a real clock (Redis's) waits instead, so its windows are kept short.
 */
export interface RateLimitClock {
  /** The time the store counts from, Unix ms. */
  now(): number;
  /** Lets `ms` pass for the store. */
  advance(ms: number): Promise<void>;
}

export interface RateLimitStoreContractOptions {
  /**
   * The clock the store follows. `open` is called after it is made, so a store may take `clock.now`.
   * @default the real clock: `Date.now` and waiting
   */
  clock?: RateLimitClock;
}

const realClock: RateLimitClock = {
  now: () => Date.now(),
  advance: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * The cases every RateLimitStore must pass. `open` gives a store whose counters are all new (a fresh key prefix, or
 * a fresh process's memory); the contract closes every store it opened after each case.
 */
export function rateLimitStoreContract(
  name: string,
  open: (clock: RateLimitClock) => Promise<RateLimitStore>,
  options: RateLimitStoreContractOptions = {},
): void {
  describe(`RateLimitStore contract: ${name}`, () => {
    const clock = options.clock ?? realClock;
    const opened: RateLimitStore[] = [];
    let store: RateLimitStore;
    /** Counter keys unique to the case, so a store sharing its backend across cases still starts at zero. */
    let run = 0;
    const key = (label: string) => `case${run}:${label}`;
    /** A window end well past the case's own duration. */
    const later = () => clock.now() + 60_000;

    beforeEach(async () => {
      run += 1;
      store = await open(clock);
      opened.push(store);
    });

    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close?.();
    });

    it('admits up to the limit, then refuses; the count stops at the limit', async () => {
      const counter = { key: key('a'), limit: 3 };
      const expiresAt = later();
      for (let i = 1; i <= 3; i++) expect(await store.consume([counter], expiresAt)).toEqual({ allowed: true, counts: [i] });
      expect(await store.consume([counter], expiresAt)).toEqual({ allowed: false, counts: [3] });
      expect(await store.consume([counter], expiresAt)).toEqual({ allowed: false, counts: [3] });
    });

    it('cost defaults to 1 and counts as given; a cost that would pass the limit is refused whole', async () => {
      const counter = { key: key('cost'), limit: 10 };
      const expiresAt = later();
      expect(await store.consume([counter], expiresAt, 4)).toEqual({ allowed: true, counts: [4] });
      expect(await store.consume([counter], expiresAt)).toEqual({ allowed: true, counts: [5] });
      expect(await store.consume([counter], expiresAt, 6)).toEqual({ allowed: false, counts: [5] });
      expect(await store.consume([counter], expiresAt, 5)).toEqual({ allowed: true, counts: [10] });
    });

    it('a refused decision changes no counter: the full one blocks and the other is not incremented', async () => {
      const operation = { key: key('operation'), limit: 2 };
      const tier = { key: key('tier'), limit: 100 };
      const expiresAt = later();
      expect(await store.consume([operation, tier], expiresAt)).toEqual({ allowed: true, counts: [1, 1] });
      expect(await store.consume([operation, tier], expiresAt)).toEqual({ allowed: true, counts: [2, 2] });
      expect(await store.consume([operation, tier], expiresAt)).toEqual({ allowed: false, counts: [2, 2] });
      expect(await store.consume([operation, tier], expiresAt)).toEqual({ allowed: false, counts: [2, 2] });
      // The tier counter alone still has its 98 left: nothing was taken from it by the refusals.
      expect(await store.consume([tier], expiresAt)).toEqual({ allowed: true, counts: [3] });
      // And the other way round: a full tier blocks an operation that has room.
      const other = { key: key('other-operation'), limit: 50 };
      const smallTier = { key: key('small-tier'), limit: 1 };
      expect(await store.consume([other, smallTier], expiresAt)).toEqual({ allowed: true, counts: [1, 1] });
      expect(await store.consume([other, smallTier], expiresAt)).toEqual({ allowed: false, counts: [1, 1] });
      expect(await store.consume([other], expiresAt)).toEqual({ allowed: true, counts: [2] });
    });

    it("a counter's own cost counts instead of the call's: a batch is admitted whole or refused whole", async () => {
      // A batch of 5 MCP messages, 2 of them tool calls: 5 on the tier, 2 on tools.call, in one step.
      const calls = { key: key('batch-calls'), limit: 3 };
      const tier = { key: key('batch-tier'), limit: 12 };
      const expiresAt = later();
      expect(await store.consume([{ ...calls, cost: 2 }, { ...tier, cost: 5 }], expiresAt)).toEqual({ allowed: true, counts: [2, 5] });
      // Two more calls do not fit in tools.call (2 + 2 > 3): refused whole, the tier keeps its 7.
      expect(await store.consume([{ ...calls, cost: 2 }, { ...tier, cost: 5 }], expiresAt)).toEqual({ allowed: false, counts: [2, 5] });
      // Eight messages do not fit in the tier (5 + 8 > 12) though their one call would: refused whole too.
      expect(await store.consume([{ ...calls, cost: 1 }, { ...tier, cost: 8 }], expiresAt)).toEqual({ allowed: false, counts: [2, 5] });
      // A counter's cost 0 leaves it alone while the others count; a counter without one takes the call's cost.
      expect(await store.consume([{ ...calls, cost: 0 }, tier], expiresAt, 7)).toEqual({ allowed: true, counts: [2, 12] });
      expect(await store.consume([{ ...calls, cost: 1 }], expiresAt, 9)).toEqual({ allowed: true, counts: [3] });
      expect(await store.consume([{ ...tier, cost: 1 }], expiresAt)).toEqual({ allowed: false, counts: [12] });
    });

    it('a counter of cost 0 in an admitted decision is not created: the first real consume sets its expiry', async () => {
      const idle = { key: key('batch-idle'), limit: 5, cost: 0 };
      const busy = { key: key('batch-busy'), limit: 5, cost: 1 };
      expect(await store.consume([idle, busy], clock.now() + 100)).toEqual({ allowed: true, counts: [0, 1] });
      const expiresAt = clock.now() + 60_000;
      expect(await store.consume([{ ...idle, cost: 2 }], expiresAt)).toEqual({ allowed: true, counts: [2] });
      await clock.advance(250);
      expect(await store.consume([{ ...idle, cost: 0 }], expiresAt)).toEqual({ allowed: true, counts: [2] });
    });

    it('returns the counts in the order the counters were given', async () => {
      const expiresAt = later();
      const a = { key: key('order-a'), limit: 100 };
      const b = { key: key('order-b'), limit: 100 };
      const c = { key: key('order-c'), limit: 100 };
      await store.consume([b], expiresAt, 5);
      await store.consume([c], expiresAt, 9);
      expect(await store.consume([a, b, c], expiresAt)).toEqual({ allowed: true, counts: [1, 6, 10] });
      expect(await store.consume([c, a, b], expiresAt)).toEqual({ allowed: true, counts: [11, 2, 7] });
    });

    it('cost 0 asks without consuming, even when the counter is full', async () => {
      const counter = { key: key('peek'), limit: 2 };
      const expiresAt = later();
      expect(await store.consume([counter], expiresAt, 0)).toEqual({ allowed: true, counts: [0] });
      expect(await store.consume([counter], expiresAt, 0)).toEqual({ allowed: true, counts: [0] });
      await store.consume([counter], expiresAt);
      expect(await store.consume([counter], expiresAt, 0)).toEqual({ allowed: true, counts: [1] });
      await store.consume([counter], expiresAt);
      expect(await store.consume([counter], expiresAt, 0)).toEqual({ allowed: true, counts: [2] });
      expect(await store.consume([counter], expiresAt)).toEqual({ allowed: false, counts: [2] });
      expect(await store.consume([counter], expiresAt, 0)).toEqual({ allowed: true, counts: [2] });
    });

    it('a cost-0 question creates no counter: the first real consume sets the expiry', async () => {
      const counter = { key: key('question-first'), limit: 5 };
      await store.consume([counter], clock.now() + 100, 0);
      const expiresAt = clock.now() + 60_000;
      expect(await store.consume([counter], expiresAt)).toEqual({ allowed: true, counts: [1] });
      await clock.advance(250);
      expect(await store.consume([counter], expiresAt, 0)).toEqual({ allowed: true, counts: [1] });
    });

    it('counters start again at zero once expiresAt has passed', async () => {
      const counter = { key: key('window'), limit: 2 };
      const expiresAt = clock.now() + 200;
      expect(await store.consume([counter], expiresAt)).toEqual({ allowed: true, counts: [1] });
      expect(await store.consume([counter], expiresAt)).toEqual({ allowed: true, counts: [2] });
      expect(await store.consume([counter], expiresAt)).toEqual({ allowed: false, counts: [2] });
      await clock.advance(350);
      const next = clock.now() + 60_000;
      expect(await store.consume([counter], next)).toEqual({ allowed: true, counts: [1] });
      expect(await store.consume([counter], next)).toEqual({ allowed: true, counts: [2] });
      expect(await store.consume([counter], next)).toEqual({ allowed: false, counts: [2] });
    });

    it('the expiry is set when a counter is created, not moved by later consumes', async () => {
      const counter = { key: key('fixed-window'), limit: 5 };
      const first = clock.now() + 200;
      expect(await store.consume([counter], first)).toEqual({ allowed: true, counts: [1] });
      // A later expiresAt for the same counter (a caller with a skewed clock) does not stretch its window.
      expect(await store.consume([counter], first + 60_000)).toEqual({ allowed: true, counts: [2] });
      await clock.advance(350);
      expect(await store.consume([counter], clock.now() + 60_000)).toEqual({ allowed: true, counts: [1] });
    });

    it('keys are independent', async () => {
      const expiresAt = later();
      const a = { key: key('independent'), limit: 1 };
      const b = { key: key('independent-2'), limit: 1 };
      const caseOnly = { key: key('Independent'), limit: 1 };
      expect(await store.consume([a], expiresAt)).toEqual({ allowed: true, counts: [1] });
      expect(await store.consume([a], expiresAt)).toEqual({ allowed: false, counts: [1] });
      expect(await store.consume([b], expiresAt)).toEqual({ allowed: true, counts: [1] });
      expect(await store.consume([caseOnly], expiresAt)).toEqual({ allowed: true, counts: [1] });
    });

    it('no counters: allowed, no counts', async () => {
      expect(await store.consume([], later())).toEqual({ allowed: true, counts: [] });
    });

    it('200 concurrent consumes against a limit of 50 admit exactly 50', async () => {
      const counter = { key: key('race'), limit: 50 };
      const tier = { key: key('race-tier'), limit: 1000 };
      const expiresAt = later();
      const results = await Promise.all(Array.from({ length: 200 }, () => store.consume([counter, tier], expiresAt)));
      expect(results.filter((r) => r.allowed)).toHaveLength(50);
      // Every admitted decision saw a distinct count, 1 to 50; every refusal saw the full counter.
      expect(results.filter((r) => r.allowed).map((r) => r.counts[0]).sort((x, y) => (x as number) - (y as number))).toEqual(
        Array.from({ length: 50 }, (_, i) => i + 1),
      );
      for (const r of results) if (!r.allowed) expect(r.counts).toEqual([50, 50]);
      expect(await store.consume([tier], expiresAt, 0)).toEqual({ allowed: true, counts: [50] });
    });

    it('100 concurrent batches of own costs admit exactly what fits', async () => {
      // Each batch: 3 on the tier (limit 60: room for 20), 2 on calls (limit 30: room for 15). Calls bind: 15 admitted.
      const calls = { key: key('race-batch-calls'), limit: 30, cost: 2 };
      const tier = { key: key('race-batch-tier'), limit: 60, cost: 3 };
      const expiresAt = later();
      const results = await Promise.all(Array.from({ length: 100 }, () => store.consume([calls, tier], expiresAt)));
      expect(results.filter((r) => r.allowed)).toHaveLength(15);
      expect(await store.consume([{ ...calls, cost: 0 }, { ...tier, cost: 0 }], expiresAt)).toEqual({ allowed: true, counts: [30, 45] });
    });

    it('close is idempotent', async () => {
      const s = await open(clock);
      await s.close?.();
      await s.close?.();
    });
  });
}
