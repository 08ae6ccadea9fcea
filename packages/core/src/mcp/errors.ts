import {
  InsecureTokenEndpointError,
  InsufficientScopeError,
  OAuthError,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import { ERROR_CODES, type UpstreamErrorCode } from '../errors/codes.js';
import { errorChain, FleetError, isUpstreamError, type UpstreamError } from '../errors/fleet-error.js';
import { classifyUndiciError } from '../net/upstream-error.js';

/** Codes of Node's sockets and undici (`ECONNREFUSED`, `EAI_AGAIN`, `UND_ERR_CONNECT_TIMEOUT`, TLS, llhttp) and the guard: a network failure. */
const NETWORK_CODE = /^(DESTINATION_NOT_ALLOWED|E[A-Z]+|EAI_[A-Z]+|UND_ERR_[A-Z_]+|ERR_TLS_[A-Z_]+|ERR_SSL_[A-Z_]+|HPE_[A-Z_]+|ERR_INVALID_HTTP_RESPONSE)$|CERT|SELF_SIGNED|UNABLE_TO_VERIFY/;

const REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'the connection was refused',
  ECONNRESET: 'the connection was reset',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
};

/**
 * A network failure (a socket error, a connect timeout, the guard's refusal) found anywhere on the cause chain, as
 * an upstream `FleetError`; `undefined` when the chain holds none. `net/`'s `classifyUndiciError` picks the code; the
 * message says which peer (`what`) and the errno, never an address or a body.
 */
export function networkFailure(error: unknown, what = 'the server'): UpstreamError | undefined {
  const chain = errorChain(error);
  const guard = chain.find(isUpstreamError);
  if (guard !== undefined) return guard;
  const errno = chain
    .map((item) => (typeof item === 'object' && item !== null ? (item as { code?: unknown }).code : undefined))
    .find((code): code is string => typeof code === 'string' && NETWORK_CODE.test(code));
  if (errno === undefined) return undefined;
  const { code } = classifyUndiciError(error);
  const reason = REASONS[errno];
  let message: string;
  switch (code) {
    case 'DESTINATION_NOT_ALLOWED':
      message = ERROR_CODES.DESTINATION_NOT_ALLOWED.message;
      break;
    case 'UPSTREAM_TIMEOUT':
      message = `Timed out connecting to ${what} (${errno}).`;
      break;
    case 'UPSTREAM_PROTOCOL_ERROR':
      message = `The HTTP response of ${what} is malformed (${errno}).`;
      break;
    default:
      message = `Could not reach ${what}${reason === undefined ? '' : `: ${reason}`} (${errno}).`;
  }
  return new FleetError(code, { message, cause: error });
}

/** `text/html; charset=utf-8` → `text/html`; anything that does not look like a media type is dropped. */
function mediaType(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const essence = value.split(';')[0]?.trim().toLowerCase() ?? '';
  return /^[a-z0-9!#$&^_.+-]{1,64}\/[a-z0-9!#$&^_.+-]{1,64}$/.test(essence) ? essence : undefined;
}

export function timeoutError(timeoutMs: number): UpstreamError {
  return new FleetError('UPSTREAM_TIMEOUT', { message: `The server did not answer within ${timeoutMs} ms.` });
}

const failure = (code: UpstreamErrorCode, message: string, cause: unknown) => new FleetError(code, { message, cause });

/**
 * Maps whatever an MCP exchange threw to an upstream `FleetError`. Messages are written here from statuses and codes
 * only: the SDK's own messages can quote the response body (`Error POSTing to endpoint: <body>`), so none is
 * passed on. `timeoutMs` is the bound the exchange ran under, for the timeout message.
 */
export function toUpstreamError(error: unknown, timeoutMs: number, transport?: unknown): UpstreamError {
  // A transport that ended the connection itself says why (a WebSocket message past maxUpstreamBytes); the SDK
  // then fails what was in flight with a bare "Connection closed".
  const ended = closedBy(transport);
  if (ended !== undefined) return ended;
  const chain = errorChain(error);

  // Classified where it happened (WebSocket handshake, token endpoint, redirect, the guard): the most specific.
  const classified = chain.find(isUpstreamError);
  if (classified !== undefined) return classified;

  for (const item of chain) {
    if (item instanceof UnauthorizedError) return failure('UPSTREAM_AUTH_FAILED', 'The server requires authorization and refused the request (HTTP 401).', error);
    if (item instanceof InsufficientScopeError) return failure('UPSTREAM_AUTH_FAILED', 'The server denied access: the token lacks a required scope (HTTP 403).', error);
    if (item instanceof InsecureTokenEndpointError) return failure('UPSTREAM_AUTH_FAILED', 'The token endpoint must use https.', error);
    if (item instanceof OAuthError) return failure('UPSTREAM_AUTH_FAILED', 'The token endpoint did not issue a token for these client credentials.', error);
    if (item instanceof SdkHttpError) {
      const status = item.data?.status;
      if (status === 401) return failure('UPSTREAM_AUTH_FAILED', 'The server refused the credentials (HTTP 401).', error);
      if (status === 403) return failure('UPSTREAM_AUTH_FAILED', 'The server denied access (HTTP 403).', error);
      if (typeof status === 'number' && status >= 300 && status < 400) {
        return failure('UPSTREAM_PROTOCOL_ERROR', `The server answered with a redirect (HTTP ${status}); redirects are not followed.`, error);
      }
      if (typeof status === 'number') return failure('UPSTREAM_PROTOCOL_ERROR', `The server answered HTTP ${status}, not an MCP response.`, error);
    }
  }

  const network = networkFailure(error);
  if (network !== undefined) return network;

  for (const item of chain) {
    if (item instanceof SdkError) {
      if (item.code === SdkErrorCode.UnsupportedResultType && (item.data as { resultType?: unknown } | undefined)?.resultType === 'input_required') {
        return failure('UPSTREAM_INPUT_REQUIRED', ERROR_CODES.UPSTREAM_INPUT_REQUIRED.message, error);
      }
      if (item.code === SdkErrorCode.RequestTimeout) return new FleetError('UPSTREAM_TIMEOUT', { message: timeoutError(timeoutMs).message, cause: error });
      if (item.code === SdkErrorCode.ClientHttpUnexpectedContent) {
        const type = mediaType((item.data as { contentType?: unknown } | undefined)?.contentType);
        return failure('UPSTREAM_PROTOCOL_ERROR', `The server's reply is not MCP${type === undefined ? '' : ` (content type ${type})`}.`, error);
      }
      if (item.code === SdkErrorCode.ConnectionClosed) return failure('UPSTREAM_UNREACHABLE', 'The connection closed before the server answered.', error);
    }
    if (item instanceof ProtocolError) return failure('UPSTREAM_PROTOCOL_ERROR', `The server answered with JSON-RPC error ${item.code}.`, error);
    if (item instanceof Error && (item.name === 'SyntaxError' || item.name === 'ZodError' || item.name === '$ZodError')) {
      return failure('UPSTREAM_PROTOCOL_ERROR', "The server's reply is not valid MCP JSON-RPC.", error);
    }
  }
  for (const item of chain) {
    if (item instanceof SdkError && item.code === SdkErrorCode.EraNegotiationFailed) {
      return failure('UPSTREAM_PROTOCOL_ERROR', 'The server answered neither server/discover (2026-07-28) nor initialize (2025) as MCP.', error);
    }
  }
  for (const item of chain) {
    if (item instanceof Error && (item.name === 'AbortError' || item.name === 'TimeoutError')) {
      return new FleetError('UPSTREAM_TIMEOUT', { message: timeoutError(timeoutMs).message, cause: error });
    }
  }
  return failure('UPSTREAM_PROTOCOL_ERROR', 'The exchange with the server failed; its reply is not MCP.', error);
}

/** Why a transport ended its connection itself (`WebSocketClientTransport.failure`), if it did. */
export function closedBy(transport: unknown): UpstreamError | undefined {
  const failure = typeof transport === 'object' && transport !== null ? (transport as { failure?: unknown }).failure : undefined;
  return isUpstreamError(failure) ? failure : undefined;
}

/** The HTTP status found on the cause chain of `error` (the SDK's `SdkHttpError`), if any. */
export function httpStatusOf(error: unknown): number | undefined {
  const found = errorChain(error).find((item) => item instanceof SdkHttpError);
  return found?.data.status;
}
