import type { ConsumeResult, RateLimitCounter, RateLimitStore } from './rate-limit-store.js';

interface Counter {
  count: number;
  expiresAt: number;
}

export interface MemoryRateLimitStoreOptions {
  /** Clock. @default Date.now */
  now?: () => number;
}

/**
 * Counters in a Map, for one process. Atomic because a decision runs without awaiting. Expired counters are
 * dropped when met, and all of them at most once per window's worth of time, so memory follows the live keys.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly counters = new Map<string, Counter>();
  private readonly now: () => number;
  private nextSweep = 0;

  constructor(options: MemoryRateLimitStoreOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  /** Decided synchronously: nothing else runs between reading the counters and counting. */
  consume(counters: readonly RateLimitCounter[], expiresAt: number, cost = 1): ConsumeResult {
    const now = this.now();
    if (now >= this.nextSweep) this.sweep(now, expiresAt);
    const live: Counter[] = [];
    let allowed = true;
    for (const { key, limit, cost: own } of counters) {
      const adds = own ?? cost;
      let counter = this.counters.get(key);
      if (counter === undefined || counter.expiresAt <= now) {
        counter = { count: 0, expiresAt };
        // A question (cost 0) creates nothing: a counter is kept only once something is counted on it.
        if (adds > 0) this.counters.set(key, counter);
      }
      live.push(counter);
      if (counter.count + adds > limit) allowed = false;
    }
    if (allowed) {
      for (let i = 0; i < live.length; i++) (live[i] as Counter).count += (counters[i] as RateLimitCounter).cost ?? cost;
    }
    return { allowed, counts: live.map((counter) => counter.count) };
  }

  async close(): Promise<void> {
    this.counters.clear();
  }

  private sweep(now: number, horizon: number): void {
    for (const [key, counter] of this.counters) if (counter.expiresAt <= now) this.counters.delete(key);
    this.nextSweep = now + Math.max(1000, horizon - now);
  }
}
