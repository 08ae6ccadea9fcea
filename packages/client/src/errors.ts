import type { components } from './generated/openapi.js';

/** The `error` object of an error answer, as the document declares it: a union by `code`. */
type ErrorObject = components['schemas']['Error']['error'];

/** Every code the fleet answers with (its one code table, the document's enum). */
export type ErrorCode = ErrorObject['code'];

/** What `details` holds for `code`, as the document says (`INVALID_REQUEST`: `field`, `issue`; others: an object). */
export type ErrorDetails<C extends ErrorCode = ErrorCode> = ErrorObject extends infer E ? (E extends { code: infer K; details: infer D } ? (C extends K ? D : never) : never) : never;

/** The rate-limit headers of an answer (`X-RateLimit-*`): absent when the fleet runs without rate limits. */
export interface RateLimit {
  /** Requests allowed in the window of the binding limit. */
  limit: number;
  /** Requests left in that window. */
  remaining: number;
  /** When the window ends, in Unix seconds. */
  reset: number;
}

interface FleetApiErrorInit {
  status: number;
  code: ErrorCode;
  message: string;
  details: unknown;
  requestId: string | undefined;
  retryAfter: number | undefined;
  rateLimit: RateLimit | undefined;
}

class FleetApiErrorClass extends Error {
  override readonly name = 'FleetApiError';
  /** The HTTP status. */
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: unknown;
  /** The answer's `X-Request-Id` (also in the fleet's logs): quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** `Retry-After`, in seconds, when the answer carried one (429, and 503 from a server whose breaker is open). */
  readonly retryAfter: number | undefined;
  readonly rateLimit: RateLimit | undefined;

  constructor(init: FleetApiErrorInit) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
    this.rateLimit = init.rateLimit;
  }
}

/**
 * The fleet's error answer: `status`, `code`, `message`, `details`, `requestId`, `retryAfter`, `rateLimit`. A union
 * by code, so that `if (error.code === 'INVALID_REQUEST')` narrows `details` to what the document declares.
 */
export type FleetApiError<C extends ErrorCode = ErrorCode> = C extends ErrorCode ? FleetApiErrorClass & { readonly code: C; readonly details: ErrorDetails<C> } : never;

interface FleetApiErrorConstructor {
  new (init: FleetApiErrorInit): FleetApiError;
  readonly prototype: FleetApiError;
}

// Shown as what users import, in stacks and by inspectors.
Object.defineProperty(FleetApiErrorClass, 'name', { value: 'FleetApiError' });

/** `error instanceof FleetApiError` narrows to the union by code; {@link isFleetApiError} also knows a second copy's. */
export const FleetApiError = FleetApiErrorClass as unknown as FleetApiErrorConstructor;

/** Why no answer of the fleet could be read. */
export type NetworkFailure = 'network' | 'timeout' | 'invalid_response' | 'too_large';

/**
 * No answer of the fleet: the request never reached it (`network`), no answer came within `timeout` (`timeout`),
 * what came back is not the fleet's envelope (`invalid_response`: a proxy's page, a wrong `baseUrl`), or it was longer
 * than `maxResponseBytes` (`too_large`).
 */
export class FleetNetworkError extends Error {
  override readonly name = 'FleetNetworkError';
  readonly reason: NetworkFailure;
  /** The HTTP status of an `invalid_response`. */
  readonly status: number | undefined;

  constructor(reason: NetworkFailure, message: string, options: { cause?: unknown; status?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.status = options.status;
  }
}

/** An error of the fleet's, also from another copy of this package (where `instanceof` fails), told by its name and code. */
export function isFleetApiError(error: unknown): error is FleetApiError {
  if (error instanceof FleetApiErrorClass) return true;
  const candidate = error as { name?: unknown; code?: unknown; status?: unknown } | null;
  return error instanceof Error && candidate?.name === 'FleetApiError' && typeof candidate.code === 'string' && typeof candidate.status === 'number';
}

/** A {@link FleetNetworkError}, also from another copy of this package. */
export function isFleetNetworkError(error: unknown): error is FleetNetworkError {
  return error instanceof FleetNetworkError || (error instanceof Error && error.name === 'FleetNetworkError' && typeof (error as { reason?: unknown }).reason === 'string');
}
