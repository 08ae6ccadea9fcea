import { SdkHttpError } from '@modelcontextprotocol/client';
import { errorChain, type UpstreamError } from '../errors/fleet-error.js';
import { backoffDelay as exponentialDelay } from '../util/backoff.js';

export { parseRetryAfter } from '../util/backoff.js';

/** How retries wait: exponential backoff with full jitter, and the cap of a server's `Retry-After`. */
export interface BackoffOptions {
  /** Wait before the second attempt, before jitter, in ms. @default 200 */
  baseMs?: number;
  /** Longest wait between two attempts (also caps `Retry-After`), in ms. @default 10000 */
  maxMs?: number;
}

/** Why one attempt failed, as far as retrying is concerned. */
export interface AttemptFailure {
  error: UpstreamError;
  /** The HTTP status the server answered, when it answered one. */
  status?: number | undefined;
  /** The server's `Retry-After`, in ms, when it sent one with a 429 or 503. */
  retryAfterMs?: number | undefined;
}

/** The HTTP status found on the cause chain of `error` (the SDK's `SdkHttpError`), if any. */
export function httpStatusOf(error: unknown): number | undefined {
  const found = errorChain(error).find((item) => item instanceof SdkHttpError);
  return found?.data.status;
}

/**
 * Whether a failed attempt may be repeated without risk of running the tool twice on purpose: the connection was
 * refused or reset, no answer came in time, the server answered 5xx or 429. Never a refusal of credentials, a
 * protocol error, a JSON-RPC error or a tool that answered `isError` (those are not failures of the attempt at all).
 */
export function isRetrySafe(failure: AttemptFailure): boolean {
  if (failure.status !== undefined) return failure.status === 429 || failure.status >= 500;
  return failure.error.code === 'UPSTREAM_UNREACHABLE' || failure.error.code === 'UPSTREAM_TIMEOUT';
}

/**
 * The wait before attempt `attempt + 1` (attempt counts from 1): `Retry-After` when the server sent one (capped at
 * `maxMs`), else between half and all of `baseMs · 2^(attempt-1)` (equal jitter, so many callers do not retry in step).
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}, retryAfterMs?: number, random: () => number = Math.random): number {
  const maxMs = options.maxMs ?? 10_000;
  if (retryAfterMs !== undefined) return Math.min(maxMs, retryAfterMs);
  return exponentialDelay(attempt, { baseMs: options.baseMs ?? 200, maxMs, factor: 2, jitter: [0.5, 1] }, random);
}
