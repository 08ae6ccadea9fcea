import { errorChain, type UpstreamError } from '../errors/fleet-error.js';
import { backoffDelay as exponentialDelay } from '../util/backoff.js';

export { parseRetryAfter } from '../util/backoff.js';
export { httpStatusOf } from '../mcp/errors.js';

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
  /**
   * Whether the `tools/call` request may have reached the server: false when it failed before it was sent (the
   * connection could not be opened) or was refused before any handler ran (connection refused, DNS, a session the
   * server no longer knows). @default true
   */
  reached?: boolean | undefined;
}

/** What the tool declares of itself in the server's latest `tools/list` (MCP tool annotations). */
export interface ToolHints {
  /** `annotations.idempotentHint`: calling it again with the same arguments has no further effect. */
  idempotentHint?: boolean | undefined;
  /** `annotations.readOnlyHint`: it changes nothing. */
  readOnlyHint?: boolean | undefined;
}

/** Socket errors that happen before a request is written: the server never saw it. */
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** Whether `error` proves the request never left (a refused connection, a name that does not resolve). */
export function neverSent(error: unknown): boolean {
  return errorChain(error).some((item) => {
    const code = typeof item === 'object' && item !== null ? (item as { code?: unknown }).code : undefined;
    return typeof code === 'string' && NEVER_SENT.has(code);
  });
}

/**
 * Whether a failed attempt may be repeated without running the tool twice by accident (docs/configuration.md
 * "Retries"). A transient failure (unreachable, no answer in time, 5xx, 429) is repeated when the request provably
 * never ran: it was never sent, or the server turned it away before any handler (429, 503). Any other transient
 * failure (a timeout, a reset after sending, 500/502/504) is repeated only for a tool that declares itself
 * `idempotentHint` or `readOnlyHint`. Never a refusal of credentials, a protocol error, a JSON-RPC error or a tool
 * that answered `isError` (those are not failures of the attempt at all).
 */
export function isRetrySafe(failure: AttemptFailure, hints: ToolHints = {}): boolean {
  const transient =
    failure.status === undefined
      ? failure.error.code === 'UPSTREAM_UNREACHABLE' || failure.error.code === 'UPSTREAM_TIMEOUT'
      : failure.status === 429 || failure.status >= 500;
  if (!transient) return false;
  if (failure.reached === false || failure.status === 429 || failure.status === 503) return true;
  return hints.idempotentHint === true || hints.readOnlyHint === true;
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
