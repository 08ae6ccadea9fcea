import type { FleetError } from '../errors/fleet-error.js';
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

export function errorResponse(error: FleetError, meta: Meta, headers?: Record<string, string>): Response {
  const body: ErrorBody = {
    success: false,
    error: { code: error.code, message: error.message, details: error.details },
    meta,
  };
  return json(error.status, body, meta, { ...error.headers, ...headers });
}
