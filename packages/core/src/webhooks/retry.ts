import { backoffDelay } from '../util/backoff.js';
import { atLeast, checkOption, integerIn, numberIn, positiveNumber } from '../util/options.js';

export { parseRetryAfter } from '../util/backoff.js';

export interface RetryOptions {
  /** Attempts in all, the first included. @default 8 */
  attempts?: number;
  /** Delay before the second attempt, in ms. @default 5000 */
  baseMs?: number;
  /** Each later delay is the previous one times this. @default 5 */
  factor?: number;
  /** No delay is longer than this, in ms (a `Retry-After` included). @default 86400000 (a day) */
  maxDelayMs?: number;
  /** Each delay is moved at random by up to this share either way, so receivers are not hit in lockstep. @default 0.2 */
  jitter?: number;
}

export type RetryPolicy = Required<RetryOptions>;

/** 8 attempts: 5 s, 25 s, 2 min, 10 min, 52 min, 4.3 h and 21.7 h apart, about a day and a bit in all. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 8, baseMs: 5000, factor: 5, maxDelayMs: 86_400_000, jitter: 0.2 };

export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  const policy = { ...DEFAULT_RETRY, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
  const { attempts, baseMs, factor, maxDelayMs, jitter } = policy;
  checkOption('webhooks.retry.attempts', attempts, integerIn(1, 100));
  checkOption('webhooks.retry.baseMs', baseMs, positiveNumber);
  checkOption('webhooks.retry.factor', factor, atLeast(1));
  checkOption('webhooks.retry.maxDelayMs', maxDelayMs, atLeast(baseMs, 'baseMs'));
  checkOption('webhooks.retry.jitter', jitter, numberIn(0, 1, { belowMax: true }));
  return policy;
}

/**
 * The wait after failed attempt number `attempt` (1-based): `baseMs × factor^(attempt-1)`, ±jitter, capped.
 * `random` is in [0, 1).
 */
export function retryDelay(policy: RetryPolicy, attempt: number, random: number = Math.random()): number {
  const { baseMs, maxDelayMs: maxMs, factor, jitter } = policy;
  return backoffDelay(attempt, { baseMs, maxMs, factor, jitter: [1 - jitter, 1 + jitter] }, () => random);
}
