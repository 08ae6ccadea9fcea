import { type CodeOf, categoryOf, ERROR_CODES, type ErrorCategory, type ErrorCode, isErrorCode, type UpstreamErrorCode } from './codes.js';

export type ErrorDetails = Record<string, unknown>;

/** One problem with one field of a request, as reported in `error.details`. */
export interface FieldIssue {
  field: string;
  issue: string;
}

export interface FleetErrorOptions {
  message?: string | undefined;
  details?: ErrorDetails;
  /** Extra response headers this error needs (`Allow`, `WWW-Authenticate`, `Retry-After`). */
  headers?: Record<string, string>;
  /** When trying again may succeed, in ms (a stdio server in crash backoff, an upstream's `Retry-After`). */
  retryAfterMs?: number | undefined;
  cause?: unknown;
}

/**
 * The one error type of mcp-fleet, for every layer (API answers, upstream failures, stdio refusals, webhook
 * receivers). Tell errors apart by `code` (and `category`), never by message or class: `isFleetError` also knows an
 * error of another copy of this package by its `name` and `code`.
 * `cause` is kept for the embedder's logs and is never serialized into a response or a record.
 */
export class FleetError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = 'FleetError';
  readonly code: C;
  readonly status: number;
  readonly details: ErrorDetails;
  readonly headers: Readonly<Record<string, string>>;
  readonly retryAfterMs: number | undefined;

  constructor(code: C, options: FleetErrorOptions = {}) {
    super(options.message ?? ERROR_CODES[code].message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.details = options.details ?? {};
    this.headers = options.headers ?? {};
    this.retryAfterMs = options.retryAfterMs;
  }

  get category(): ErrorCategory {
    return categoryOf(this.code);
  }

  /**
   * The `{ code, message }` that health records carry, with `details.hint` as `hint` when the error has one (the
   * setting that would allow what was refused): never the cause, nor any other detail. Hints are the library's own
   * texts (`ERROR_HINTS`), never an upstream's.
   */
  toJSON(): { code: C; message: string; hint?: string } {
    const { hint } = this.details;
    return typeof hint === 'string' ? { code: this.code, message: this.message, hint } : { code: this.code, message: this.message };
  }
}

/** A failed conversation with an upstream (an MCP server, a webhook receiver, a token endpoint). */
export type UpstreamError = FleetError<UpstreamErrorCode>;

/** What a failed probe records: an upstream error's `toJSON()`. */
export interface UpstreamFailure {
  code: UpstreamErrorCode;
  message: string;
  /** The error's `details.hint`, when it has one: the setting to change (docs/errors.md "Hints"). */
  hint?: string;
}

/**
 * A failure as health and tool call records carry it: a code of `ERROR_CODES` and a message that quotes no body (its
 * schema: `recordedFailureSchema` of health/health-log.ts).
 */
export interface RecordedFailure {
  code: string;
  message: string;
  /** Health records: the error's `details.hint`, when it has one. */
  hint?: string | undefined;
}

export function isFleetError(value: unknown): value is FleetError {
  if (value instanceof FleetError) return true;
  if (typeof value !== 'object' || value === null) return false;
  const { name, code } = value as { name?: unknown; code?: unknown };
  return name === 'FleetError' && isErrorCode(code);
}

/** Is `value` a FleetError of one of the categories? */
export function isFleetErrorOf<K extends ErrorCategory>(value: unknown, ...categories: K[]): value is FleetError<CodeOf<K>> {
  return isFleetError(value) && (categories as ErrorCategory[]).includes(categoryOf(value.code));
}

export function isUpstreamError(value: unknown): value is UpstreamError {
  return isFleetErrorOf(value, 'upstream');
}

/**
 * Every error reachable from `error` through `cause` and `AggregateError.errors` (undici's fetch wraps as
 * `TypeError('fetch failed')`; Node's happy-eyeballs reports each address tried), breadth first, cycles cut.
 */
export function errorChain(error: unknown): unknown[] {
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  const out: unknown[] = [];
  while (queue.length > 0 && out.length < 32) {
    const current = queue.shift();
    if (current === undefined || current === null || seen.has(current)) continue;
    seen.add(current);
    out.push(current);
    if (typeof current === 'object') {
      const { cause, errors } = current as { cause?: unknown; errors?: unknown };
      if (cause !== undefined) queue.push(cause);
      if (Array.isArray(errors)) queue.push(...errors);
    }
  }
  return out;
}

/** A 400 for one or more field issues: `details` carries the first as `field`/`issue`, and all as `issues` when several. */
export function invalidRequest(issues: readonly FieldIssue[], message?: string): FleetError {
  const [first] = issues;
  if (first === undefined) return new FleetError('INVALID_REQUEST', { message });
  const details: ErrorDetails = { field: first.field, issue: first.issue };
  if (issues.length > 1) details.issues = issues.map(({ field, issue }) => ({ field, issue }));
  return new FleetError('INVALID_REQUEST', {
    message: message ?? `Invalid request: ${first.field} ${first.issue}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''}.`,
    details,
  });
}

/** An unknown server id, or one of another account: the same answer, so existence is never revealed. */
export function serverNotFound(id: string): FleetError {
  return new FleetError('SERVER_NOT_FOUND', { details: { server_id: id } });
}

/** The account already holds `limit` of `resource`: the quota, the same in every process sharing the storage. */
export function quotaExceeded(resource: 'servers' | 'webhooks', limit: number): FleetError {
  const option = resource === 'servers' ? 'serversPerAccount' : 'webhooksPerAccount';
  return new FleetError('QUOTA_EXCEEDED', {
    message: `This account already has ${limit} ${resource}, the most allowed: delete some, or raise the quotas.${option} option.`,
    details: { resource, limit },
  });
}

/** An unknown id of another kind (tool call, webhook), or one of another account. */
export function notFound(what: string, id: string): FleetError {
  return new FleetError('NOT_FOUND', { message: `No ${what} with this id exists.`, details: { id } });
}

export function toolCallNotFound(id: string): FleetError {
  return notFound('tool call', id);
}

/** Any failure of a storage port. The cause stays attached for logs; the response says only 503. */
export function storageUnavailable(cause: unknown): FleetError {
  return new FleetError('STORAGE_UNAVAILABLE', { cause });
}

/** Wraps whatever was thrown into a FleetError; unknown throwables become INTERNAL_ERROR. */
export function toFleetError(cause: unknown): FleetError {
  return isFleetError(cause) ? cause : new FleetError('INTERNAL_ERROR', { cause });
}
