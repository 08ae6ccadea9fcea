import { SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import type { UpstreamErrorCode } from '../errors/codes.js';
import { FleetError } from '../errors/fleet-error.js';
import { backoffDelay, httpStatusOf, isRetrySafe, neverSent, parseRetryAfter } from './retry.js';

const failure = (code: UpstreamErrorCode, status?: number) => ({ error: new FleetError(code), status });

describe('retry policy', () => {
  it('retries a transient failure that never reached the server: not sent, 429, 503', () => {
    const unsent = (code: UpstreamErrorCode, status?: number) => ({ ...failure(code, status), reached: false });
    expect(isRetrySafe(unsent('UPSTREAM_UNREACHABLE'))).toBe(true);
    expect(isRetrySafe(unsent('UPSTREAM_TIMEOUT'))).toBe(true);
    expect(isRetrySafe(unsent('UPSTREAM_PROTOCOL_ERROR', 502))).toBe(true);
    expect(isRetrySafe(failure('UPSTREAM_PROTOCOL_ERROR', 503))).toBe(true);
    expect(isRetrySafe(failure('UPSTREAM_PROTOCOL_ERROR', 429))).toBe(true);
    expect(isRetrySafe(unsent('UPSTREAM_PROTOCOL_ERROR', 400))).toBe(false);
    expect(isRetrySafe(unsent('UPSTREAM_AUTH_FAILED', 401))).toBe(false);
    expect(isRetrySafe(unsent('UPSTREAM_PROTOCOL_ERROR'))).toBe(false);
    expect(isRetrySafe(unsent('DESTINATION_NOT_ALLOWED'))).toBe(false);
  });

  it('a failure after the request may have run is retried only for an idempotent or read-only tool', () => {
    for (const sent of [failure('UPSTREAM_TIMEOUT'), failure('UPSTREAM_UNREACHABLE'), failure('UPSTREAM_PROTOCOL_ERROR', 500), failure('UPSTREAM_PROTOCOL_ERROR', 504)]) {
      expect(isRetrySafe(sent)).toBe(false);
      expect(isRetrySafe(sent, { idempotentHint: false, readOnlyHint: false })).toBe(false);
      expect(isRetrySafe(sent, { idempotentHint: true })).toBe(true);
      expect(isRetrySafe(sent, { readOnlyHint: true })).toBe(true);
    }
    expect(isRetrySafe(failure('UPSTREAM_PROTOCOL_ERROR', 400), { idempotentHint: true })).toBe(false);
    expect(isRetrySafe(failure('UPSTREAM_PROTOCOL_ERROR'), { readOnlyHint: true })).toBe(false);
  });

  it('knows a request that never left: refused, unresolved, connect timeout; not a reset', () => {
    const withCode = (code: string) => new TypeError('fetch failed', { cause: Object.assign(new Error(code), { code }) });
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']) expect(neverSent(withCode(code))).toBe(true);
    for (const code of ['ECONNRESET', 'UND_ERR_SOCKET', 'UND_ERR_HEADERS_TIMEOUT']) expect(neverSent(withCode(code))).toBe(false);
  });

  it('reads the HTTP status off the cause chain', () => {
    const http = new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, 'x', { status: 502 });
    expect(httpStatusOf(new Error('outer', { cause: http }))).toBe(502);
    expect(httpStatusOf(new Error('plain'))).toBeUndefined();
  });

  it('parses Retry-After as seconds or a date', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', Date.parse('2026-01-01T00:00:00Z'))).toBe(10_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
  });

  it('backs off exponentially with jitter, capped; Retry-After wins but is capped too', () => {
    expect(backoffDelay(1, { baseMs: 100 }, undefined, () => 0)).toBe(50);
    expect(backoffDelay(1, { baseMs: 100 }, undefined, () => 1)).toBe(100);
    expect(backoffDelay(3, { baseMs: 100 }, undefined, () => 1)).toBe(400);
    expect(backoffDelay(20, { baseMs: 100, maxMs: 1000 }, undefined, () => 1)).toBe(1000);
    expect(backoffDelay(1, { maxMs: 5000 }, 2000)).toBe(2000);
    expect(backoffDelay(1, { maxMs: 5000 }, 60_000)).toBe(5000);
  });
});
