/**
 * Every error code the service answers with: its HTTP status and default message.
 * The seed's codes come first, then the ones CONTRACT.md adds. `docs/errors.md` lists the same table.
 */
export const ERROR_CODES = {
  INVALID_REQUEST: { status: 400, message: 'The request is invalid.' },
  SERVER_NOT_FOUND: { status: 404, message: 'No server with this id exists.' },
  SERVER_NAME_EXISTS: { status: 409, message: 'A server with this name already exists.' },
  UNAUTHORIZED: { status: 401, message: 'A valid API key is required: send "Authorization: Bearer <API key>".' },
  FORBIDDEN: { status: 403, message: 'This API key lacks the scope this operation needs.' },
  NOT_FOUND: { status: 404, message: 'Not found.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'This method is not allowed on this path.' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is larger than the limit.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'The request body must be JSON (Content-Type: application/json).' },
  RATE_LIMITED: { status: 429, message: 'Rate limit exceeded; retry after the window resets.' },
  INTERNAL_ERROR: { status: 500, message: 'An unexpected error occurred.' },
  UPSTREAM_UNREACHABLE: { status: 502, message: 'The MCP server could not be reached.' },
  UPSTREAM_PROTOCOL_ERROR: { status: 502, message: 'The MCP server answered with something that is not MCP.' },
  UPSTREAM_AUTH_FAILED: { status: 502, message: 'The MCP server refused the credentials configured for it.' },
  DESTINATION_NOT_ALLOWED: { status: 502, message: 'The MCP server\'s address is not allowed for outgoing connections.' },
  UPSTREAM_TIMEOUT: { status: 504, message: 'The MCP server did not answer within its timeout.' },
  STORAGE_UNAVAILABLE: { status: 503, message: 'The storage backend is unavailable; nothing was changed.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}
