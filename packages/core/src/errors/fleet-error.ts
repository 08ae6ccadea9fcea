import { ERROR_CODES, type ErrorCode } from './codes.js';

export type ErrorDetails = Record<string, unknown>;

/** One problem with one field of a request, as reported in `error.details`. */
export interface FieldIssue {
  field: string;
  issue: string;
}

/**
 * The one error type of mcp-fleet. Tell errors apart by `code`, never by message.
 * `cause` is kept for the embedder's logs and is never serialized into a response.
 */
export class FleetError extends Error {
  override readonly name = 'FleetError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: ErrorDetails;
  /** Extra response headers this error needs (`Allow`, `WWW-Authenticate`, `Retry-After`). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: ErrorCode,
    options: { message?: string; details?: ErrorDetails; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(options.message ?? ERROR_CODES[code].message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.details = options.details ?? {};
    this.headers = options.headers ?? {};
  }
}

export function isFleetError(value: unknown): value is FleetError {
  return value instanceof FleetError;
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

export function toolCallNotFound(id: string): FleetError {
  return new FleetError('NOT_FOUND', { message: 'No tool call with this id exists.', details: { id } });
}

/** Any failure of a storage port. The cause stays attached for logs; the response says only 503. */
export function storageUnavailable(cause: unknown): FleetError {
  return new FleetError('STORAGE_UNAVAILABLE', { cause });
}

/** Wraps whatever was thrown into a FleetError; unknown throwables become INTERNAL_ERROR. */
export function toFleetError(cause: unknown): FleetError {
  return isFleetError(cause) ? cause : new FleetError('INTERNAL_ERROR', { cause });
}
