/**
 * The dashboard's only way out: the documented HTTP API beside it, with the signed-in key as the Bearer header.
 * The API lives where the page does, minus `/dashboard/…`: `/v1/dashboard/` talks to `/v1`, `/api/v1/dashboard/`
 * to `/api/v1`, whatever prefix the host mounted the fleet under.
 */
export const apiBase = location.pathname.replace(/\/dashboard(\/.*)?$/, '');

const KEY = 'mcp-fleet.api-key';

export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  signIn: (key: string) => sessionStorage.setItem(KEY, key),
  signOut: () => {
    sessionStorage.removeItem(KEY);
    window.dispatchEvent(new Event('mcp-fleet:signed-out'));
  },
};

export interface Pagination {
  page: number;
  limit: number;
  total: number;
  pages: number;
}

export interface ApiError {
  status: number;
  code: string;
  message: string;
  details: Record<string, unknown>;
}

export type ApiResult<T> = { ok: true; data: T; pagination?: Pagination } | { ok: false; error: ApiError };

/** One request to the API; a 401 signs out (the key was revoked or expired). */
export async function api<T>(method: string, path: string, body?: unknown, key = session.key()): Promise<ApiResult<T>> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(`${apiBase}${path}`, { method, headers, body: body === undefined ? null : JSON.stringify(body), cache: 'no-store' });
  } catch {
    return { ok: false, error: { status: 0, code: 'NETWORK_ERROR', message: 'The API could not be reached.', details: {} } };
  }
  const envelope = (await response.json().catch(() => null)) as
    | { success: true; data: T; pagination?: Pagination }
    | { success: false; error: Omit<ApiError, 'status'> }
    | null;
  if (envelope?.success === true) return envelope.pagination ? { ok: true, data: envelope.data, pagination: envelope.pagination } : { ok: true, data: envelope.data };
  if (response.status === 401 && key === session.key()) session.signOut();
  const error = envelope?.success === false ? envelope.error : { code: 'BAD_RESPONSE', message: `The API answered ${response.status}.`, details: {} };
  return { ok: false, error: { ...error, status: response.status } };
}

/** `?page=2&status=error`, leaving out empty values. */
export function queryString(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(name, String(value));
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}

/** A 400's field issues by field (`details.issues`, or the one `details.field`/`issue`). */
export function fieldErrors(error: ApiError | undefined): Record<string, string> {
  if (error === undefined || error.code !== 'INVALID_REQUEST') return {};
  const issues = (error.details.issues as { field: string; issue: string }[] | undefined) ?? [
    { field: String(error.details.field ?? ''), issue: String(error.details.issue ?? '') },
  ];
  const byField: Record<string, string> = {};
  for (const { field, issue } of issues) byField[field] ??= `${field} ${issue}`;
  return byField;
}

// The shapes the API answers, from the core itself (type-only: nothing of the core is bundled but the event names).
export type { HealthBucket, HealthHistory, HealthRecord } from '../../src/health/health-log.js';
export type { ServerDetail, ServerSummary as Server } from '../../src/registry/views.js';
export type { ToolCallRecord as ToolCall } from '../../src/toolcalls/tool-call-log.js';
export type { DeliveryView as Delivery } from '../../src/webhooks/deliveries.js';
export type { WebhookView as Webhook } from '../../src/webhooks/subscriptions.js';
export { EVENT_TYPES as WEBHOOK_EVENTS } from '../../src/events/catalog.js';

/** `2026-11-24T01:02:03.000Z` → local, to the second. */
export function when(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}
