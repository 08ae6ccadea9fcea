/**
 * Every error code of mcp-fleet, whatever layer raises it: its HTTP status, default message and category.
 *
 * - `request`: the API's own answers (docs/errors.md, "Error codes").
 * - `upstream`: a conversation with an MCP server or a webhook receiver failed. Inside a health or tool call record
 *   these travel as `error: { code, message }` while the service answers 200; `GET /servers/{id}/tools` answers them.
 * - `stdio`: the stdio supervisor refused a process; reported to callers as `UPSTREAM_UNREACHABLE`.
 * - `tool`: how a tool call ended when the server did answer; only ever inside a tool call record.
 * - `receiver`: why a webhook receiver (`verifyWebhook`, `verify`) refused a delivery.
 */
export const ERROR_CODES = {
  INVALID_REQUEST: { status: 400, category: 'request', message: 'The request is invalid.' },
  SERVER_NOT_FOUND: { status: 404, category: 'request', message: 'No server with this id exists.' },
  SERVER_NAME_EXISTS: { status: 409, category: 'request', message: 'A server with this name already exists.' },
  QUOTA_EXCEEDED: {
    status: 409,
    category: 'request',
    message: 'The account already has as many of these as allowed: delete some, or raise the quota (the quotas option).',
  },
  UNAUTHORIZED: { status: 401, category: 'request', message: 'A valid API key is required: send "Authorization: Bearer <API key>".' },
  FORBIDDEN: { status: 403, category: 'request', message: 'This API key lacks the scope this operation needs.' },
  NOT_FOUND: { status: 404, category: 'request', message: 'Not found.' },
  METHOD_NOT_ALLOWED: { status: 405, category: 'request', message: 'This method is not allowed on this path.' },
  PAYLOAD_TOO_LARGE: { status: 413, category: 'request', message: 'The request body is larger than the limit.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, category: 'request', message: 'The request body must be JSON (Content-Type: application/json).' },
  RATE_LIMITED: { status: 429, category: 'request', message: 'Rate limit exceeded; retry after the window resets.' },
  INTERNAL_ERROR: { status: 500, category: 'request', message: 'An unexpected error occurred.' },
  STORAGE_UNAVAILABLE: { status: 503, category: 'request', message: 'The storage backend is unavailable; nothing was changed.' },

  UPSTREAM_AUTH_FAILED: { status: 502, category: 'upstream', message: 'The upstream refused the credentials (401 or 403).' },
  UPSTREAM_UNREACHABLE: { status: 502, category: 'upstream', message: 'The upstream could not be reached.' },
  UPSTREAM_TIMEOUT: { status: 504, category: 'upstream', message: 'The upstream did not answer in time.' },
  UPSTREAM_UNAVAILABLE: {
    status: 503,
    category: 'upstream',
    message: "The server's circuit breaker is open after failures in a row: calls fail fast until it is probed again (Retry-After).",
  },
  UPSTREAM_PROTOCOL_ERROR: {
    status: 502,
    category: 'upstream',
    message: 'The upstream answered with something that is not the expected protocol.',
  },
  UPSTREAM_INPUT_REQUIRED: {
    status: 502,
    category: 'upstream',
    message:
      'The server asked for input (an input_required result: elicitation, sampling or roots) before it would answer; the fleet cannot answer input requests, so the request ended there.',
  },
  UPSTREAM_RESPONSE_TOO_LARGE: {
    status: 502,
    category: 'upstream',
    message: 'The upstream answered with more bytes than the service reads (maxUpstreamBytes).',
  },
  DESTINATION_NOT_ALLOWED: {
    status: 502,
    category: 'upstream',
    message:
      'The destination is not allowed: it is, or resolves to, a loopback, private, link-local or otherwise reserved address (the allowPrivateNetworks option allows it).',
  },

  STDIO_CAPACITY: { status: 502, category: 'stdio', message: 'This account already has as many live stdio server processes as allowed.' },

  TOOL_ERROR: { status: 502, category: 'tool', message: 'The tool answered with an error (isError).' },
  TOOL_CALL_REJECTED: { status: 502, category: 'tool', message: 'The server answered the tool call with a JSON-RPC error.' },

  MISSING_HEADERS: { status: 400, category: 'receiver', message: 'The webhook-id, webhook-timestamp and webhook-signature headers are required.' },
  INVALID_HEADERS: { status: 400, category: 'receiver', message: 'The webhook signature headers are malformed.' },
  INVALID_BODY: { status: 400, category: 'receiver', message: 'The webhook body is not valid JSON.' },
  BAD_SIGNATURE: { status: 401, category: 'receiver', message: 'No webhook signature matches the body.' },
  TIMESTAMP_OUT_OF_TOLERANCE: { status: 401, category: 'receiver', message: 'The webhook timestamp is too far from the current time.' },
} as const satisfies Record<string, { status: number; category: ErrorCategory; message: string }>;

/**
 * What to change when a refusal is the service's own configuration, not the upstream's fault: the option, and the
 * reference server's variable for it. Carried as `details.hint` wherever the code is answered (docs/errors.md).
 */
export const ERROR_HINTS = {
  privateNetworks:
    'Private, loopback and metadata addresses are refused unless allowed: set the allowPrivateNetworks option (true, or a list of CIDRs and hostnames); in the reference server, MCP_FLEET_ALLOW_PRIVATE_NETWORKS=1.',
  stdioDisabled:
    'stdio servers run only commands on an allowlist, empty by default: set the stdio.commands option (e.g. ["npx"]); in the reference server, MCP_FLEET_STDIO_COMMANDS=npx,node.',
  stdioCommand:
    'This command is not on the allowlist: add it to the stdio.commands option; in the reference server, to MCP_FLEET_STDIO_COMMANDS (comma-separated).',
} as const;

export type ErrorCategory = 'request' | 'upstream' | 'stdio' | 'tool' | 'receiver';
export type ErrorCode = keyof typeof ERROR_CODES;
/** The codes of one category. */
export type CodeOf<C extends ErrorCategory> = { [K in ErrorCode]: (typeof ERROR_CODES)[K]['category'] extends C ? K : never }[ErrorCode];
/** Why an upstream conversation failed. */
export type UpstreamErrorCode = CodeOf<'upstream'>;
/** Why a webhook receiver refused a delivery; a body over the limit is `PAYLOAD_TOO_LARGE`. */
export type ReceiverErrorCode = CodeOf<'receiver'> | 'PAYLOAD_TOO_LARGE';

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

export function categoryOf(code: ErrorCode): ErrorCategory {
  return ERROR_CODES[code].category;
}

export function isUpstreamErrorCode(value: unknown): value is UpstreamErrorCode {
  return isErrorCode(value) && categoryOf(value) === 'upstream';
}
