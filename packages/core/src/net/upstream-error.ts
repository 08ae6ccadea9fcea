/**
 * Why a conversation with an upstream (an MCP server, a webhook receiver) failed. These are not HTTP answer codes
 * (`errors/codes.ts`): they travel inside a health record or tool call record as `error: { code, message }`
 * (CONTRACT.md "Health"), while the service itself answers 200.
 */
export const UPSTREAM_ERROR_CODES = {
  UPSTREAM_AUTH_FAILED: 'The upstream refused the credentials (401 or 403).',
  UPSTREAM_UNREACHABLE: 'The upstream could not be reached.',
  UPSTREAM_TIMEOUT: 'The upstream did not answer in time.',
  UPSTREAM_PROTOCOL_ERROR: 'The upstream answered with something that is not the expected protocol.',
  DESTINATION_NOT_ALLOWED:
    'The destination is not allowed: it is, or resolves to, a loopback, private, link-local or otherwise reserved address.',
} as const satisfies Record<string, string>;

export type UpstreamErrorCode = keyof typeof UPSTREAM_ERROR_CODES;

export function isUpstreamErrorCode(value: unknown): value is UpstreamErrorCode {
  return typeof value === 'string' && Object.hasOwn(UPSTREAM_ERROR_CODES, value);
}

/**
 * A failed upstream conversation with a stable `code`. The message is ours, never text the upstream sent (no body,
 * no status line), and it names no resolved address, so a refusal cannot be used to map an internal network.
 * `cause` is kept for the embedder's logs only; `toJSON()` is the `{ code, message }` shape records carry.
 */
export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';
  readonly code: UpstreamErrorCode;

  constructor(code: UpstreamErrorCode, options: { message?: string; cause?: unknown } = {}) {
    super(options.message ?? UPSTREAM_ERROR_CODES[code], options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }

  toJSON(): { code: UpstreamErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

export function isUpstreamError(value: unknown): value is UpstreamError {
  return value instanceof UpstreamError;
}

/** The guard's refusal. A function rather than a subclass: callers tell errors apart by `code`. */
export function destinationNotAllowed(): UpstreamError {
  return new UpstreamError('DESTINATION_NOT_ALLOWED');
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'ABORT_ERR',
]);

const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NODATA',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
]);

/** Parse errors of the HTTP/1 parser (llhttp `HPE_*`) and undici's own framing checks. */
const PROTOCOL_CODES = new Set([
  'UND_ERR_INFO',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_RES_EXCEEDED_MAX_SIZE',
  'UND_ERR_HEADERS_OVERFLOW',
  'ERR_INVALID_HTTP_RESPONSE',
]);

function ownString(value: unknown, key: 'code' | 'name'): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const field = (value as Record<string, unknown>)[key];
  return typeof field === 'string' ? field : undefined;
}

/** One error and everything under it: `cause` chains (undici's fetch wraps as `TypeError('fetch failed')`) and the
 * `errors` of an AggregateError (Node's happy-eyeballs reports every attempted address that way). */
function* causes(error: unknown, depth = 0): Generator<unknown> {
  if (depth > 8 || typeof error !== 'object' || error === null) return;
  yield error;
  const { cause, errors } = error as { cause?: unknown; errors?: unknown };
  if (cause !== undefined) yield* causes(cause, depth + 1);
  if (Array.isArray(errors)) for (const inner of errors) yield* causes(inner, depth + 1);
}

function codeOf(error: unknown): UpstreamErrorCode | undefined {
  if (isUpstreamError(error)) return error.code;
  const code = ownString(error, 'code');
  const name = ownString(error, 'name');
  if (code === 'DESTINATION_NOT_ALLOWED') return 'DESTINATION_NOT_ALLOWED';
  if (code !== undefined && TIMEOUT_CODES.has(code)) return 'UPSTREAM_TIMEOUT';
  // The library aborts a request only when its own deadline passes (`AbortSignal.timeout` gives `TimeoutError`).
  if (name === 'TimeoutError' || name === 'AbortError' || name === 'ConnectTimeoutError') return 'UPSTREAM_TIMEOUT';
  if (code !== undefined && UNREACHABLE_CODES.has(code)) return 'UPSTREAM_UNREACHABLE';
  // A certificate that does not verify: there is no trustworthy connection to the server that was meant.
  if (code !== undefined && (code.startsWith('ERR_TLS_') || code.includes('CERT') || code.startsWith('ERR_SSL_'))) {
    return 'UPSTREAM_UNREACHABLE';
  }
  if (code !== undefined && (PROTOCOL_CODES.has(code) || code.startsWith('HPE_'))) return 'UPSTREAM_PROTOCOL_ERROR';
  return undefined;
}

/**
 * Maps whatever a guarded fetch, agent or WebSocket threw to an {@link UpstreamError}. The most specific cause wins:
 * the guard's refusal anywhere in the chain is `DESTINATION_NOT_ALLOWED`, then timeouts, then network failures,
 * then protocol errors; anything unrecognised is `UPSTREAM_UNREACHABLE`. The original error stays as `cause`.
 */
export function classifyUndiciError(error: unknown): UpstreamError {
  if (isUpstreamError(error)) return error;
  const found = new Set<UpstreamErrorCode>();
  for (const inner of causes(error)) {
    const code = codeOf(inner);
    if (code !== undefined) found.add(code);
  }
  const order: readonly UpstreamErrorCode[] = [
    'DESTINATION_NOT_ALLOWED',
    'UPSTREAM_TIMEOUT',
    'UPSTREAM_UNREACHABLE',
    'UPSTREAM_PROTOCOL_ERROR',
  ];
  const code = order.find((candidate) => found.has(candidate)) ?? 'UPSTREAM_UNREACHABLE';
  return new UpstreamError(code, { cause: error });
}
