import { backoffDelay } from '../util/backoff.js';

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
  if (!Number.isInteger(attempts) || attempts < 1 || attempts > 100) throw new TypeError('mcp-fleet: webhooks.retry.attempts must be an integer from 1 to 100');
  if (!(baseMs > 0) || !Number.isFinite(baseMs)) throw new TypeError('mcp-fleet: webhooks.retry.baseMs must be a positive number');
  if (!(factor >= 1) || !Number.isFinite(factor)) throw new TypeError('mcp-fleet: webhooks.retry.factor must be at least 1');
  if (!(maxDelayMs >= baseMs) || !Number.isFinite(maxDelayMs)) throw new TypeError('mcp-fleet: webhooks.retry.maxDelayMs must be at least baseMs');
  if (!(jitter >= 0 && jitter < 1)) throw new TypeError('mcp-fleet: webhooks.retry.jitter must be from 0 to below 1');
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
