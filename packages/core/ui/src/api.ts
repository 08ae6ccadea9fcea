import { type Body, createClient, type FleetClient, isFleetApiError, isFleetNetworkError, type OperationAt } from '../../../client/src/index.js';

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

/** A listing's items, or any other answer's `data`. */
type Unlisted<R> = R extends { data: infer D; pagination: Pagination } ? D : R;

/**
 * The typed client (`@mcp-fleet/client`) with the signed-in key. Never retried: a person is waiting, and sees a
 * refusal (429) and its message at once. Answers are never cached by the browser.
 */
function clientFor(key: string | null): FleetClient {
  const fetchFresh: typeof fetch = (input, init) => fetch(input, { ...init, cache: 'no-store' });
  return createClient({ baseUrl: `${location.origin}${apiBase}`, ...(key === null ? {} : { apiKey: key }), fetch: fetchFresh, retries: 0 });
}

/** One call of the client, as a result to render; a 401 signs out (the key was revoked or expired). */
export async function api<R>(call: (client: FleetClient) => Promise<R>, key = session.key()): Promise<ApiResult<Unlisted<R>>> {
  try {
    const value = (await call(clientFor(key))) as R & { data?: unknown; pagination?: Pagination };
    // A listing answers `{ data, pagination }`; no other answer has a `pagination`.
    if (typeof value === 'object' && value !== null && value.pagination !== undefined) return { ok: true, data: value.data as Unlisted<R>, pagination: value.pagination };
    return { ok: true, data: value as Unlisted<R> };
  } catch (error) {
    if (isFleetApiError(error)) {
      if (error.status === 401 && key === session.key()) session.signOut();
      return { ok: false, error: { status: error.status, code: error.code, message: error.message, details: error.details as Record<string, unknown> } };
    }
    if (isFleetNetworkError(error) && error.reason === 'invalid_response') {
      return { ok: false, error: { status: error.status ?? 0, code: 'BAD_RESPONSE', message: `The API answered ${error.status}.`, details: {} } };
    }
    return { ok: false, error: { status: 0, code: 'NETWORK_ERROR', message: 'The API could not be reached.', details: {} } };
  }
}

/** `params` without its empty values (an unset filter of a form). */
export function present<T extends Record<string, string | number | undefined>>(params: T): Partial<T> {
  return Object.fromEntries(Object.entries(params).filter(([, value]) => value !== undefined && value !== '')) as Partial<T>;
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

/** What `POST /servers`, `PUT /servers/{id}` and `POST /webhooks` take. */
export type ServerCreate = Body<OperationAt<'POST', '/servers'>>;
export type ServerUpdate = Body<OperationAt<'PUT', '/servers/{id}'>>;
export type WebhookCreate = Body<OperationAt<'POST', '/webhooks'>>;

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
