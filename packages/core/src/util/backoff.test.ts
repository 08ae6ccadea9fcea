import { describe, expect, it } from 'vitest';
import { backoffDelay, parseRetryAfter } from './backoff.js';

describe('backoffDelay', () => {
  const backoff = { baseMs: 100, maxMs: 1000, factor: 3, jitter: [0.5, 1.5] as const };

  it('grows by the factor and spreads over the jitter range', () => {
    expect(backoffDelay(1, backoff, () => 0.5)).toBe(100);
    expect(backoffDelay(2, backoff, () => 0.5)).toBe(300);
    expect(backoffDelay(2, backoff, () => 0)).toBe(150);
  });

  it('caps before jitter and after, so delays at the cap are still spread and never above it', () => {
    expect(backoffDelay(10, backoff, () => 0)).toBe(500);
    expect(backoffDelay(10, backoff, () => 0.999)).toBe(1000);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-22T10:00:00.000Z');

  it('reads delay-seconds and HTTP dates; a past date is 0', () => {
    expect(parseRetryAfter(' 7 ', now)).toBe(7000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:00:00 GMT', now)).toBe(0);
  });

  it('caps at maxMs when given', () => {
    expect(parseRetryAfter('3600', now, 60_000)).toBe(60_000);
  });

  it('ignores what is absent or unreadable, never taking a number for a year', () => {
    for (const value of [undefined, null, '', 'soon', '-5', '1.5']) expect(parseRetryAfter(value, now)).toBeUndefined();
  });
});
