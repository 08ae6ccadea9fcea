import { ERROR_HINTS, type UpstreamErrorCode } from '../errors/codes.js';
import { errorChain, FleetError, isUpstreamError, type UpstreamError } from '../errors/fleet-error.js';

/**
 * Classifies what undici, Node's sockets and the outgoing-connection guard throw as upstream failures. The messages
 * are ours, never text the upstream sent (no body, no status line), and name no resolved address, so a refusal cannot
 * be used to map an internal network.
 */

/** The guard's refusal, with the option that would allow it. */
export function destinationNotAllowed(): UpstreamError {
  return new FleetError('DESTINATION_NOT_ALLOWED', { details: { hint: ERROR_HINTS.privateNetworks } });
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
 * Maps whatever a guarded fetch, agent or WebSocket threw to an upstream `FleetError`. The most specific cause wins:
 * the guard's refusal anywhere in the chain is `DESTINATION_NOT_ALLOWED`, then timeouts, then network failures,
 * then protocol errors; anything unrecognised is `UPSTREAM_UNREACHABLE`. The original error stays as `cause`.
 */
export function classifyUndiciError(error: unknown): UpstreamError {
  if (isUpstreamError(error)) return error;
  const found = new Set<UpstreamErrorCode>();
  for (const inner of errorChain(error)) {
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
  return new FleetError(code, { cause: error });
}
