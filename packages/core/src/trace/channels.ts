import { channel, tracingChannel, type Channel, type TracingChannel } from 'node:diagnostics_channel';

/**
 * The fleet's trace points on `node:diagnostics_channel` (docs/observability.md). A message is built only when its
 * channel has a subscriber (`hasSubscribers`), so that nothing is spent when no one listens. No message carries a
 * secret, a header, a body, an argument or a result: identifiers, names, outcomes and error codes only. The one
 * exception is `mcpContent`, which carries a tool call's arguments and result: it is published only while someone
 * subscribes to it (an explicit opt-in, such as `@mcp-fleet/otel`'s `captureContent`).
 */
export const TRACE_CHANNELS = {
  httpRequest: 'mcp-fleet:http.request',
  operation: 'mcp-fleet:operation',
  store: 'mcp-fleet:store',
  mcpServer: 'mcp-fleet:mcp.server',
  mcpClient: 'mcp-fleet:mcp.client',
  mcpContent: 'mcp-fleet:mcp.content',
  probe: 'mcp-fleet:probe',
  webhookDelivery: 'mcp-fleet:webhook.delivery',
  rateLimit: 'mcp-fleet:ratelimit',
  auth: 'mcp-fleet:auth',
} as const;

/** What every message of a TracingChannel gains as its call settles. */
export interface Settled {
  /** `ok`, or `error` (a thrown error, an `Err` result, a JSON-RPC error or an HTTP status of 500 and above). */
  outcome?: 'ok' | 'error';
  /** The fleet's error code (docs/errors.md) of an `error` outcome, when it has one. */
  error_code?: string;
  /** What failed, on the `error` event: the `FleetError` of an `Err` result, or what was thrown. */
  error?: unknown;
}

/** One request to the fleet's handler, from its arrival to its answer. */
export interface HttpRequestMessage extends Settled {
  request_id: string;
  method: string;
  /** The route's template below the mount (`/servers/:id`), once matched; `null` when no route matched. */
  route: string | null;
  /** The authenticated account; `null` until authentication succeeded. */
  account: string | null;
  /** The answer's HTTP status, at `end` (synchronous answer) or `asyncEnd`. */
  status?: number;
}

/** Which door an operation was called through. */
export type OperationDoor = 'http' | 'mcp' | 'api';

/** One run of an operation (`servers.create`, `tools.call`…), whichever door called it. */
export interface OperationMessage extends Settled {
  operation: string;
  account: string;
  via: OperationDoor;
  /** The server the operation is about, when it is about one. */
  server_id?: string;
  /** `tools.call`: the tool's name as the server knows it. */
  tool_name?: string;
}

/** One call of a storage port. */
export interface StoreMessage extends Settled {
  /** `records` (the Keyv record storage), `index` (claims, listings, quotas) or `ratelimit` (counters). */
  port: 'records' | 'index' | 'ratelimit';
  /** The port's method: `get`, `set`, `commit`, `consume`… */
  method: string;
}

/** The protocol era of an MCP exchange. */
export type McpEraName = '2024-11-05' | '2025' | '2026-07-28';

/** One JSON-RPC request served at `/mcp` or `/servers/{id}/mcp`. */
export interface McpServerMessage extends Settled {
  /** The JSON-RPC method: `tools/call`, `tools/list`… */
  method: string;
  /** The JSON-RPC request id, as the client sent it. */
  jsonrpc_id: string | number;
  era: McpEraName;
  transport: 'streamable-http';
  account: string;
  /** `/servers/{id}/mcp`: that server; absent on `/mcp`. */
  server_id?: string;
  /** 2025 sessions only. */
  session_id?: string;
  /** `tools/call`: the name the client asked for (`server__tool` on `/mcp`). */
  tool_name?: string;
  /** `tools/call`: the tool answered with `isError: true` (the outcome stays `ok`). */
  is_error?: boolean;
  /** The JSON-RPC error code of an `error` outcome. */
  jsonrpc_error_code?: number;
  /** The protocol version the exchange speaks: `2026-07-28`, or a 2025 session's `MCP-Protocol-Version` header. */
  protocol_version?: string;
  /** The W3C trace context the request carried in `params._meta` (a well-formed `traceparent` only). */
  traceparent?: string;
  tracestate?: string;
  /** The HTTP request's own `traceparent` header, when well formed (no other header is ever read). */
  http_traceparent?: string;
}

/**
 * CONTENT: what a `tools/call` served at `/mcp` or `/servers/{id}/mcp` was asked and answered, published once it is
 * answered, before its `mcp-fleet:mcp.server` action ends. Published only while this channel has a subscriber, and
 * only for requests traced on `mcp-fleet:mcp.server` (which must have one too). The arguments are what the client
 * sent; the fleet's own secrets (a server's token, headers, env) are never part of them nor of the result.
 */
export interface McpContentMessage {
  /** The request's message on `mcp-fleet:mcp.server`: the same object, so that a subscriber finds its span. */
  request: McpServerMessage;
  /** `params.arguments` as the client sent them; absent when it sent none. */
  arguments?: unknown;
  /** The `CallToolResult` the client is answered with; absent when it is answered with a JSON-RPC error. */
  result?: unknown;
}

/** One request the fleet sends to an upstream MCP server, over any transport. */
export interface McpClientMessage extends Settled {
  /** The JSON-RPC method: `tools/call`, `tools/list`, `ping`… */
  method: string;
  /** `undefined` for a connection made before the server has an id (a probe of a configuration). */
  server_id?: string;
  /** The server's transport type: `http`, `websocket` or `stdio`. */
  transport: string;
  era: McpEraName;
  /** `tools/call`: the tool's name as the upstream knows it. */
  tool_name?: string;
  /** `tools/call`: the upstream answered with `isError: true`. */
  is_error?: boolean;
  /** `http` and `websocket`: the upstream's host and port, from its endpoint (never its path, query or credentials). */
  server_address?: string;
  server_port?: number;
  /**
   * Entries a subscriber adds at `start` (string values: `traceparent`, `tracestate`), merged into the request's
   * `params._meta` before it is sent: how a tracer propagates its context to the upstream, over any transport.
   */
  meta: Record<string, string>;
}

/** One probe of a server (the health monitor's, or `GET /servers/{id}/health`), published when it is done. */
export interface ProbeMessage {
  server_id: string;
  account: string;
  transport: string;
  outcome: 'ok' | 'error';
  /** The upstream error code of a failed probe (`UPSTREAM_TIMEOUT`…). */
  error_code?: string;
  /** The era the server answered in. */
  era?: McpEraName;
  duration_ms: number;
}

/** One attempt to deliver a webhook event, published when it is done. */
export interface WebhookDeliveryMessage {
  account: string;
  webhook_id: string;
  delivery_id: string;
  event_type: string;
  /** 1 for the first attempt. */
  attempt: number;
  outcome: 'ok' | 'error';
  /** The receiver's HTTP status; `null` when none came (a network failure, a timeout). */
  status_code: number | null;
  error_code?: string;
  duration_ms: number;
}

/** One rate-limit decision (each request, each body of MCP messages, each failed authentication). */
export interface RateLimitMessage {
  /** The limit that binds: `operation`, `tier` or `address` (the address's budget of failed authentications). */
  scope: 'operation' | 'tier' | 'address';
  allowed: boolean;
  /** The binding limit (requests per minute) and what is left of it. */
  limit: number;
  remaining: number;
  /** When the window ends, in Unix seconds. */
  reset: number;
  /** How many requests the decision counted (a body of MCP messages counts each). */
  cost: number;
}

/** One authentication of a request that carried a credential (or any request, with a custom `authenticate`). */
export interface AuthMessage {
  request_id: string;
  /** `api_key` (the built-in keys), `custom` (the `authenticate` option) or `oauth` (a credential no key check accepted, checked as an OAuth access token). */
  method: 'api_key' | 'custom' | 'oauth';
  outcome: 'ok' | 'refused';
  /** `oauth`: the issuer that vouched for the token, or whose token was refused (never the token). */
  issuer?: string;
  /** `oauth`, refused: why (`expired`, `audience`, `unknown_key`, `keys_unavailable`…). */
  reason?: string;
  account?: string;
  /** The API key's id (never its secret), when the built-in keys verified it. */
  key_id?: string;
}

export const httpRequestChannel: TracingChannel<unknown, HttpRequestMessage> = tracingChannel(TRACE_CHANNELS.httpRequest);
export const operationChannel: TracingChannel<unknown, OperationMessage> = tracingChannel(TRACE_CHANNELS.operation);
export const storeChannel: TracingChannel<unknown, StoreMessage> = tracingChannel(TRACE_CHANNELS.store);
export const mcpServerChannel: TracingChannel<unknown, McpServerMessage> = tracingChannel(TRACE_CHANNELS.mcpServer);
export const mcpContentChannel: Channel<unknown, McpContentMessage> = channel(TRACE_CHANNELS.mcpContent) as Channel<unknown, McpContentMessage>;
export const mcpClientChannel: TracingChannel<unknown, McpClientMessage> = tracingChannel(TRACE_CHANNELS.mcpClient);
export const probeChannel: Channel<unknown, ProbeMessage> = channel(TRACE_CHANNELS.probe) as Channel<unknown, ProbeMessage>;
export const webhookDeliveryChannel: Channel<unknown, WebhookDeliveryMessage> = channel(TRACE_CHANNELS.webhookDelivery) as Channel<unknown, WebhookDeliveryMessage>;
export const rateLimitChannel: Channel<unknown, RateLimitMessage> = channel(TRACE_CHANNELS.rateLimit) as Channel<unknown, RateLimitMessage>;
export const authChannel: Channel<unknown, AuthMessage> = channel(TRACE_CHANNELS.auth) as Channel<unknown, AuthMessage>;
