import { newId } from '../util/ids.js';
import type { Pagination } from '../util/pagination.js';

export interface SuccessBody<T> {
  success: true;
  data: T;
  pagination?: Pagination;
  meta: Meta;
}

export interface ErrorBody {
  success: false;
  error: { code: string; message: string; details: Record<string, unknown> };
  meta: Meta;
}

export interface Meta {
  timestamp: string;
  request_id: string;
}

/** What an error answer is made of: a `FleetError`, and the webhook receiver's `WebhookVerificationError` alike. */
export interface AnsweredError {
  code: string;
  status: number;
  message: string;
  details: Record<string, unknown>;
  /** Extra response headers the error needs (`Allow`, `WWW-Authenticate`…). */
  headers?: Readonly<Record<string, string>>;
}

const REQUEST_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The request id of an answer: the client's `X-Request-Id` when it has the allowed form, else a new `req_…`. */
export function requestIdOf(headers: Headers): string {
  const incoming = headers.get('x-request-id');
  return incoming !== null && REQUEST_ID.test(incoming) ? incoming : newId('request');
}

const BASE_HEADERS = {
  'content-type': 'application/json; charset=utf-8',
  // Responses describe an account's servers; no shared cache may keep them.
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};

function json(status: number, body: unknown, meta: Meta, extra: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { ...BASE_HEADERS, ...extra, 'x-request-id': meta.request_id },
  });
}

export function successResponse<T>(status: number, data: T, meta: Meta, page?: Pagination, headers?: Record<string, string>): Response {
  const body: SuccessBody<T> = page === undefined ? { success: true, data, meta } : { success: true, data, pagination: page, meta };
  return json(status, body, meta, headers);
}

export function errorBody(error: AnsweredError, meta: Meta): ErrorBody {
  return { success: false, error: { code: error.code, message: error.message, details: error.details }, meta };
}

export function errorResponse(error: AnsweredError, meta: Meta, headers?: Record<string, string>): Response {
  return json(error.status, errorBody(error, meta), meta, { ...error.headers, ...headers });
}
