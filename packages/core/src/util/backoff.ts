/** Exponential backoff with jitter, as tool-call retries and webhook deliveries both wait. */
export interface Backoff {
  /** The delay after the first failed attempt, before jitter, in ms. */
  baseMs: number;
  /** No delay is longer than this, in ms. */
  maxMs: number;
  /** Each later delay is the previous one times this. */
  factor: number;
  /**
   * The range the delay is multiplied by at random, `[low, high]`: `[0.8, 1.2]` moves it by up to 20 % either way,
   * `[0.5, 1]` keeps it between half and all of it. Spread, so that many waiting callers do not retry in step.
   */
  jitter: readonly [low: number, high: number];
}

/**
 * The wait after failed attempt number `attempt` (1-based): `baseMs · factor^(attempt-1)` capped at `maxMs`, then
 * jittered and capped again, so that delays at the cap are still spread. `random` answers in [0, 1).
 */
export function backoffDelay(attempt: number, backoff: Backoff, random: () => number = Math.random): number {
  const { baseMs, maxMs, factor, jitter } = backoff;
  const ceiling = Math.min(maxMs, baseMs * factor ** (attempt - 1));
  const [low, high] = jitter;
  return Math.round(Math.min(maxMs, ceiling * (low + (high - low) * random())));
}

/**
 * `Retry-After` in ms from `now`: delay-seconds or an HTTP date (a past date is 0), at most `maxMs`; `undefined` when
 * absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now(), maxMs = Number.POSITIVE_INFINITY): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    // An HTTP date names its weekday or month; Date.parse alone would take "-5" as a year.
    const at = /[A-Za-z]{3}/.test(text) ? Date.parse(text) : Number.NaN;
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  }
  return Math.min(maxMs, Math.max(0, ms));
}
