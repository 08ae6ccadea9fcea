import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY, parseRetryAfter, retryDelay, retryPolicy } from './retry.js';

describe('retry policy', () => {
  it('defaults to 8 attempts, 5 s × 5^(n-1): about a day from first to last attempt', () => {
    const delays = Array.from({ length: DEFAULT_RETRY.attempts - 1 }, (_, i) => retryDelay(DEFAULT_RETRY, i + 1, 0.5));
    expect(delays).toEqual([5000, 25_000, 125_000, 625_000, 3_125_000, 15_625_000, 78_125_000]);
    const total = delays.reduce((a, b) => a + b, 0);
    expect(total / 3_600_000).toBeGreaterThan(24);
    expect(total / 3_600_000).toBeLessThan(28);
  });

  it('moves each delay by at most the jitter, either way', () => {
    expect(retryDelay(DEFAULT_RETRY, 1, 0)).toBe(4000);
    expect(retryDelay(DEFAULT_RETRY, 1, 0.999999)).toBe(6000);
  });

  it('caps a delay at maxDelayMs', () => {
    const policy = retryPolicy({ baseMs: 1000, factor: 10, maxDelayMs: 5000, jitter: 0 });
    expect(retryDelay(policy, 5)).toBe(5000);
  });

  it('refuses a policy that cannot work, at construction', () => {
    expect(() => retryPolicy({ attempts: 0 })).toThrow(TypeError);
    expect(() => retryPolicy({ baseMs: -1 })).toThrow(TypeError);
    expect(() => retryPolicy({ factor: 0.5 })).toThrow(TypeError);
    expect(() => retryPolicy({ jitter: 1 })).toThrow(TypeError);
    expect(retryPolicy({ attempts: 3 })).toEqual({ ...DEFAULT_RETRY, attempts: 3 });
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-22T10:00:00.000Z');
  it('reads delay-seconds and HTTP dates, capped', () => {
    expect(parseRetryAfter('120', now, 86_400_000)).toBe(120_000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:01:00 GMT', now, 86_400_000)).toBe(60_000);
    expect(parseRetryAfter('999999999', now, 86_400_000)).toBe(86_400_000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:00:00 GMT', now, 86_400_000)).toBe(0);
  });
  it('ignores what it cannot read', () => {
    expect(parseRetryAfter(undefined, now, 1000)).toBeUndefined();
    expect(parseRetryAfter('soon', now, 1000)).toBeUndefined();
    expect(parseRetryAfter('-5', now, 1000)).toBeUndefined();
  });
});
