import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, isErrorCode } from './codes.js';
import { FleetError, invalidRequest, isFleetError, storageUnavailable, toFleetError } from './fleet-error.js';

/** docs/errors.md: every code with its status, written out here so that a change to either is seen. */
const CONTRACT_TABLE: [string, number][] = [
  ['INVALID_REQUEST', 400],
  ['UNAUTHORIZED', 401],
  ['FORBIDDEN', 403],
  ['SERVER_NOT_FOUND', 404],
  ['NOT_FOUND', 404],
  ['METHOD_NOT_ALLOWED', 405],
  ['SERVER_NAME_EXISTS', 409],
  // Second wave, "Hardening": servers or webhooks per account beyond the quota.
  ['QUOTA_EXCEEDED', 409],
  ['PAYLOAD_TOO_LARGE', 413],
  ['UNSUPPORTED_MEDIA_TYPE', 415],
  ['RATE_LIMITED', 429],
  ['INTERNAL_ERROR', 500],
  ['STORAGE_UNAVAILABLE', 503],
  // GET /servers/{id}/tools (issue 5): a listing writes no record, so an upstream failure is the answer itself.
  ['UPSTREAM_UNREACHABLE', 502],
  ['UPSTREAM_PROTOCOL_ERROR', 502],
  ['UPSTREAM_AUTH_FAILED', 502],
  ['DESTINATION_NOT_ALLOWED', 502],
  ['UPSTREAM_TIMEOUT', 504],
  // Second wave, "Hardening": an upstream answer past maxUpstreamBytes.
  ['UPSTREAM_RESPONSE_TOO_LARGE', 502],
  // Issue 14: a 2026-07-28 server answered input_required, which the fleet cannot fulfil.
  ['UPSTREAM_INPUT_REQUIRED', 502],
  // Issue 32: a tool call to a server whose circuit breaker is open fails fast.
  ['UPSTREAM_UNAVAILABLE', 503],
];

const ERRORS_DOC = fileURLToPath(new URL('../../../../docs/errors.md', import.meta.url));

describe('ERROR_CODES', () => {
  it.each(CONTRACT_TABLE)('has %s with status %i', (code, status) => {
    expect(isErrorCode(code)).toBe(true);
    expect(ERROR_CODES[code as keyof typeof ERROR_CODES].status).toBe(status);
  });

  it('has no code beyond the contract’s table among the API’s answers; the others are record, stdio or receiver codes', () => {
    const answers = Object.entries(ERROR_CODES).filter(([, entry]) => entry.category === 'request' || entry.category === 'upstream');
    expect(answers.map(([code]) => code).sort()).toEqual(CONTRACT_TABLE.map(([code]) => code).sort());
    const others = Object.entries(ERROR_CODES).filter(([, entry]) => entry.category !== 'request' && entry.category !== 'upstream');
    expect(Object.fromEntries(others.map(([code, entry]) => [code, entry.category]))).toEqual({
      STDIO_CAPACITY: 'stdio',
      TOOL_ERROR: 'tool',
      TOOL_CALL_REJECTED: 'tool',
      MISSING_HEADERS: 'receiver',
      INVALID_HEADERS: 'receiver',
      INVALID_BODY: 'receiver',
      BAD_SIGNATURE: 'receiver',
      TIMESTAMP_OUT_OF_TOLERANCE: 'receiver',
    });
  });

  it('isFleetError knows a FleetError of another copy of the package by name and code', () => {
    const foreign = Object.assign(new Error('x'), { name: 'FleetError', code: 'FORBIDDEN', status: 403 });
    expect(isFleetError(foreign)).toBe(true);
    expect(isFleetError(Object.assign(new Error('x'), { name: 'FleetError', code: 'NOPE' }))).toBe(false);
    expect(isFleetError({ code: 'FORBIDDEN' })).toBe(false);
  });

  it('codes are UPPER_SNAKE and every default message is a sentence', () => {
    for (const [code, { message }] of Object.entries(ERROR_CODES)) {
      expect(code).toMatch(/^[A-Z]+(_[A-Z]+)*$/);
      expect(message).toMatch(/^[A-Z].*[.]$/);
    }
  });

  it('5xx messages say nothing specific', () => {
    expect(ERROR_CODES.INTERNAL_ERROR.message).toBe('An unexpected error occurred.');
    expect(ERROR_CODES.STORAGE_UNAVAILABLE.message).not.toMatch(/redis|sqlite|postgres|keyv/i);
  });

  it('isErrorCode refuses anything else, including inherited names', () => {
    for (const value of ['invalid_request', 'upstream_timeout', 'toString', '__proto__', 'constructor', '', 400, null, undefined]) {
      expect(isErrorCode(value)).toBe(false);
    }
  });

  it('docs/errors.md lists every code', () => {
    expect(existsSync(ERRORS_DOC), `${ERRORS_DOC} must exist and list every error code`).toBe(true);
    const doc = readFileSync(ERRORS_DOC, 'utf8');
    const missing = Object.keys(ERROR_CODES).filter((code) => !new RegExp(`\\b${code}\\b`).test(doc));
    expect(missing, 'codes missing from docs/errors.md').toEqual([]);
  });
});

describe('FleetError', () => {
  it('takes status and default message from the table', () => {
    const error = new FleetError('RATE_LIMITED');
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('FleetError');
    expect(error.status).toBe(429);
    expect(error.message).toBe(ERROR_CODES.RATE_LIMITED.message);
    expect(error.details).toEqual({});
    expect(error.headers).toEqual({});
  });

  it('invalidRequest puts the first issue in details, and all of them under issues when there are several', () => {
    const one = invalidRequest([{ field: 'name', issue: 'must not be empty' }]);
    expect(one.details).toEqual({ field: 'name', issue: 'must not be empty' });
    expect(one.message).toBe('Invalid request: name must not be empty.');
    const two = invalidRequest([
      { field: 'name', issue: 'must not be empty' },
      { field: 'timeout', issue: 'must be at least 1' },
    ]);
    expect(two.details).toEqual({
      field: 'name',
      issue: 'must not be empty',
      issues: [
        { field: 'name', issue: 'must not be empty' },
        { field: 'timeout', issue: 'must be at least 1' },
      ],
    });
    expect(two.message).toBe('Invalid request: name must not be empty (and 1 more).');
  });

  it('storageUnavailable keeps the cause for logs, never in details', () => {
    const cause = new Error('redis down at 10.0.0.1');
    const error = storageUnavailable(cause);
    expect(error.code).toBe('STORAGE_UNAVAILABLE');
    expect(error.cause).toBe(cause);
    expect(error.details).toEqual({});
    expect(error.message).not.toContain('10.0.0.1');
  });

  it('toFleetError keeps a FleetError and wraps anything else as INTERNAL_ERROR', () => {
    const known = new FleetError('FORBIDDEN');
    expect(toFleetError(known)).toBe(known);
    for (const thrown of [new Error('x'), 'string', undefined, { code: 'FORBIDDEN' }]) {
      const wrapped = toFleetError(thrown);
      expect(wrapped.code).toBe('INTERNAL_ERROR');
      expect(wrapped.cause).toBe(thrown);
    }
  });
});
