import type { ApiKeyView } from '../auth/key-views.js';
import type { UpstreamFailure } from '../errors/fleet-error.js';
import type { Health } from '../registry/schema.js';
import type { StateReason } from '../health/states.js';
import type { ServerDetail } from '../registry/views.js';
import type { ToolCallRecord } from '../toolcalls/tool-call-log.js';

/** Every event of mcp-fleet: what `fleet.events` announces and what webhooks subscribe to (docs/webhooks.md). */
export const EVENT_TYPES = ['server.created', 'server.updated', 'server.deleted', 'server.health_changed', 'tool_call.failed', 'key.created', 'key.revoked'] as const;
export type FleetEventType = (typeof EVENT_TYPES)[number];

/**
 * The `data` of each event, the same for a webhook delivery and a `fleet.events` listener. Redacted views only: a
 * listener can forward them anywhere without leaking a secret.
 */
export interface FleetEventData {
  'server.created': { server: ServerDetail };
  'server.updated': { server: ServerDetail };
  'server.deleted': { server: ServerDetail };
  /** `reason`: the rule that decided `current` (docs/health.md); `error`: the latest probe's, when it failed. */
  'server.health_changed': { server: ServerDetail; previous: Health; current: Health; reason: StateReason; error: UpstreamFailure | null };
  /** A tool call that ended `error` or `timeout`; the record never carries arguments or results. */
  'tool_call.failed': { tool_call: ToolCallRecord };
  /** An API key made (`POST /keys`, `fleet.keys.create`, a secret registered for the first time): never its secret nor its hash. */
  'key.created': { key: ApiKeyView };
  /** An API key revoked (`DELETE /keys/{id}`, `fleet.keys.revoke`), with its `revoked_at`. */
  'key.revoked': { key: ApiKeyView };
}

/** What a `fleet.events` listener receives: the event's `data` and the account it happened in. */
export type FleetEvent<T extends FleetEventType> = { account: string } & FleetEventData[T];
export type FleetEventMap = { [T in FleetEventType]: FleetEvent<T> };
