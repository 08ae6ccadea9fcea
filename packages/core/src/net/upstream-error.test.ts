import { errors } from 'undici';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, isErrorCode, isUpstreamErrorCode } from '../errors/codes.js';
import { FleetError } from '../errors/fleet-error.js';
import { classifyUndiciError, destinationNotAllowed } from './upstream-error.js';

/** The upstream codes and their default messages: the `upstream` category of the one code table. */
const UPSTREAM_ERROR_CODES = Object.fromEntries(
  Object.entries(ERROR_CODES).filter(([, entry]) => entry.category === 'upstream').map(([code, entry]) => [code, entry.message]),
) as Record<string, string>;

/** How undici's fetch reports a failure: a bare TypeError with the real error as its cause. */
const fetchFailed = (cause: unknown) => new TypeError('fetch failed', { cause });
const withCode = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('upstream errors', () => {
  it('has exactly the upstream codes of docs/http-api.md "Health"; each is also the 502/504 answer of GET /servers/{id}/tools', () => {
    expect(Object.keys(UPSTREAM_ERROR_CODES).sort()).toEqual(
      // UPSTREAM_INPUT_REQUIRED (issue 14): a 2026-07-28 input_required answer, which the fleet cannot fulfil.
      // UPSTREAM_UNAVAILABLE (issue 32): a tool call to a server whose circuit breaker is open, failed fast (503).
      [
        'DESTINATION_NOT_ALLOWED',
        'UPSTREAM_AUTH_FAILED',
        'UPSTREAM_INPUT_REQUIRED',
        'UPSTREAM_PROTOCOL_ERROR',
        'UPSTREAM_RESPONSE_TOO_LARGE',
        'UPSTREAM_TIMEOUT',
        'UPSTREAM_UNAVAILABLE',
        'UPSTREAM_UNREACHABLE',
      ].sort(),
    );
    for (const code of Object.keys(UPSTREAM_ERROR_CODES)) {
      expect(isUpstreamErrorCode(code)).toBe(true);
      // A tools listing writes no record, so its upstream failure is the HTTP answer itself (issue 5).
      expect(isErrorCode(code)).toBe(true);
      expect(ERROR_CODES[code as keyof typeof ERROR_CODES].status).toBe(code === 'UPSTREAM_TIMEOUT' ? 504 : code === 'UPSTREAM_UNAVAILABLE' ? 503 : 502);
    }
    expect(isUpstreamErrorCode('toString')).toBe(false);
    expect(isUpstreamErrorCode('INTERNAL_ERROR')).toBe(false);
  });

  it('serializes as { code, message } and keeps the cause out of it', () => {
    const cause = new Error('<html>upstream body</html>');
    const error = new FleetError('UPSTREAM_PROTOCOL_ERROR', { cause });
    expect(error.cause).toBe(cause);
    expect(error.name).toBe('FleetError');
    expect(error.category).toBe('upstream');
    expect(JSON.parse(JSON.stringify(error))).toEqual({ code: 'UPSTREAM_PROTOCOL_ERROR', message: UPSTREAM_ERROR_CODES.UPSTREAM_PROTOCOL_ERROR });
  });

  it('the refusal names no address', () => {
    const error = destinationNotAllowed();
    expect(error.code).toBe('DESTINATION_NOT_ALLOWED');
    expect(error.message).not.toMatch(/\d+\.\d+\.\d+\.\d+|::/);
  });
});

describe('classifyUndiciError', () => {
  const cases: [string, unknown, string][] = [
    ['the guard refusal inside fetch failed', fetchFailed(destinationNotAllowed()), 'DESTINATION_NOT_ALLOWED'],
    ['a refusal-shaped error from another copy of this module', fetchFailed(withCode('DESTINATION_NOT_ALLOWED')), 'DESTINATION_NOT_ALLOWED'],
    ['ECONNREFUSED', fetchFailed(withCode('ECONNREFUSED')), 'UPSTREAM_UNREACHABLE'],
    ['ENOTFOUND', fetchFailed(withCode('ENOTFOUND')), 'UPSTREAM_UNREACHABLE'],
    ['EAI_AGAIN', fetchFailed(withCode('EAI_AGAIN')), 'UPSTREAM_UNREACHABLE'],
    ['ECONNRESET', fetchFailed(withCode('ECONNRESET')), 'UPSTREAM_UNREACHABLE'],
    ['a socket closed by the other side', fetchFailed(new errors.SocketError('other side closed')), 'UPSTREAM_UNREACHABLE'],
    ['a certificate that does not match', fetchFailed(withCode('ERR_TLS_CERT_ALTNAME_INVALID')), 'UPSTREAM_UNREACHABLE'],
    ['a self-signed certificate', fetchFailed(withCode('DEPTH_ZERO_SELF_SIGNED_CERT')), 'UPSTREAM_UNREACHABLE'],
    ['undici connect timeout', fetchFailed(new errors.ConnectTimeoutError()), 'UPSTREAM_TIMEOUT'],
    ['undici headers timeout', fetchFailed(new errors.HeadersTimeoutError()), 'UPSTREAM_TIMEOUT'],
    ['undici body timeout', fetchFailed(new errors.BodyTimeoutError()), 'UPSTREAM_TIMEOUT'],
    ['ETIMEDOUT', fetchFailed(withCode('ETIMEDOUT')), 'UPSTREAM_TIMEOUT'],
    ['AbortSignal.timeout', new DOMException('The operation was aborted due to timeout', 'TimeoutError'), 'UPSTREAM_TIMEOUT'],
    ['an abort', new DOMException('This operation was aborted', 'AbortError'), 'UPSTREAM_TIMEOUT'],
    ['happy eyeballs: refused and timed out', fetchFailed(new AggregateError([withCode('ECONNREFUSED'), withCode('ETIMEDOUT')])), 'UPSTREAM_TIMEOUT'],
    ['happy eyeballs: all refused', fetchFailed(new AggregateError([withCode('ECONNREFUSED'), withCode('ENETUNREACH')])), 'UPSTREAM_UNREACHABLE'],
    ['an HTTP parse error', fetchFailed(withCode('HPE_INVALID_CONSTANT')), 'UPSTREAM_PROTOCOL_ERROR'],
    ['a content-length mismatch', fetchFailed(new errors.ResponseContentLengthMismatchError()), 'UPSTREAM_PROTOCOL_ERROR'],
    ['an unknown error', new Error('something'), 'UPSTREAM_UNREACHABLE'],
    ['a thrown string', 'boom', 'UPSTREAM_UNREACHABLE'],
    ['undefined', undefined, 'UPSTREAM_UNREACHABLE'],
  ];

  it.each(cases)('%s', (_name, error, code) => {
    const classified = classifyUndiciError(error);
    expect(classified).toBeInstanceOf(FleetError);
    expect(classified.code).toBe(code);
    expect(classified.message).toBe(UPSTREAM_ERROR_CODES[classified.code]);
    expect(classified.cause).toBe(error);
  });

  it('returns an upstream FleetError as it is', () => {
    const error = new FleetError('UPSTREAM_AUTH_FAILED');
    expect(classifyUndiciError(error)).toBe(error);
  });

  it('never echoes what the upstream sent', () => {
    const leak = withCode('HPE_INVALID_CONSTANT', 'Expected HTTP/, got <html>secret-token-123</html>');
    expect(JSON.stringify(classifyUndiciError(fetchFailed(leak)))).not.toContain('secret-token-123');
  });

  it('stops on a cause cycle', () => {
    const a: Error & { cause?: unknown } = new Error('a');
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(classifyUndiciError(a).code).toBe('UPSTREAM_UNREACHABLE');
  });
});
