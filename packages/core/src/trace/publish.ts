import type { Client } from '@modelcontextprotocol/client';
import { type McpClientMessage, mcpClientChannel, type McpEraName, probeChannel, webhookDeliveryChannel } from './channels.js';
import { traced } from './traced.js';

// What the publishers read of the records they describe: their shapes, so that this low folder imports nothing above it.
interface ProbedServer {
  id: string;
  account: string;
  config: { type: string };
}
interface ProbeOutcome {
  ok: boolean;
  era: string | undefined;
  responseTimeMs: number;
  error: { code: string } | null;
}
interface Delivery {
  id: string;
  account: string;
  webhook_id: string;
  event_type: string;
  attempts: readonly unknown[];
}
interface SendOutcome {
  statusCode: number | null;
  durationMs: number;
  error: { code: string } | null;
}

/** What the client publisher reads of a server's configuration. */
interface ClientConfig {
  type: string;
  endpoint?: string;
}

/**
 * Traces every request `client` sends (`tools/call`, `tools/list`, `ping`…: the SDK's methods all go through its
 * `request`) on `mcp-fleet:mcp.client` when anyone listens, over any transport. What subscribers put in the message's
 * `meta` at `start` goes into the request's `params._meta`.
 */
export function traceRequests(client: Client, config: ClientConfig, era: McpEraName, serverId: string | undefined): void {
  const request = client.request.bind(client) as (...args: unknown[]) => Promise<unknown>;
  const target: TracedClient = { request, config, era, serverId, address: undefined };
  // With no subscriber the SDK's own `request` on the same arguments; the traced call is a function of its own, so
  // that this wrapper captures nothing per call (no context, no closure, no message) on that road.
  client.request = ((...args: unknown[]) => (mcpClientChannel.hasSubscribers ? tracedClientRequest(target, args) : request(...args))) as Client['request'];
}

/** What the traced road of a client's requests reads: the SDK's own `request`, and what the messages say of the server. */
interface TracedClient {
  request: (...args: unknown[]) => Promise<unknown>;
  config: ClientConfig;
  era: McpEraName;
  serverId: string | undefined;
  /** Worked out at the first traced request: `null` when the endpoint has none (stdio). */
  address: { server_address: string; server_port: number } | null | undefined;
}

function tracedClientRequest(target: TracedClient, args: unknown[]): Promise<unknown> {
  const { request, config, era, serverId } = target;
  const sent = args[0] as { method: string; params?: { name?: unknown; _meta?: Record<string, unknown> } };
  const { method, params } = sent;
  const message: McpClientMessage = { method, transport: config.type, era, meta: {} };
  if (serverId !== undefined) message.server_id = serverId;
  if (method === 'tools/call' && typeof params?.name === 'string') message.tool_name = params.name;
  target.address ??= addressOf(config);
  if (target.address !== null) Object.assign(message, target.address);
  return traced(
    mcpClientChannel,
    message,
    () => {
      const meta = Object.entries(message.meta).filter(([, value]) => typeof value === 'string');
      if (meta.length === 0) return request(...args);
      const withMeta = { ...sent, params: { ...params, _meta: { ...params?._meta, ...Object.fromEntries(meta) } } };
      return request(withMeta, ...args.slice(1));
    },
    describeAnswered,
  );
}

/** The host and port of an `http` or `websocket` endpoint; `null` for stdio (or an endpoint that does not parse). */
function addressOf(config: ClientConfig): { server_address: string; server_port: number } | null {
  if (config.endpoint === undefined) return null;
  try {
    const url = new URL(config.endpoint);
    const port = url.port === '' ? (url.protocol === 'https:' || url.protocol === 'wss:' ? 443 : 80) : Number(url.port);
    return { server_address: url.hostname.replace(/^\[|\]$/g, ''), server_port: port };
  } catch {
    return null;
  }
}

function describeAnswered(message: McpClientMessage, result: unknown): void {
  if ((result as { isError?: unknown } | null)?.isError === true) message.is_error = true;
}

/** Publishes a probe's outcome on `mcp-fleet:probe` and hands it on; called when `probeChannel.hasSubscribers`. */
export function publishProbe<O extends ProbeOutcome>(server: ProbedServer, outcome: O): O {
  probeChannel.publish({
    server_id: server.id,
    account: server.account,
    transport: server.config.type,
    outcome: outcome.ok ? 'ok' : 'error',
    ...(outcome.error === null ? {} : { error_code: outcome.error.code }),
    ...(outcome.era === undefined ? {} : { era: outcome.era as McpEraName }),
    duration_ms: outcome.responseTimeMs,
  });
  return outcome;
}

/** Publishes one delivery attempt on `mcp-fleet:webhook.delivery`; called when `webhookDeliveryChannel.hasSubscribers`. */
export function publishDelivery(delivery: Delivery, outcome: SendOutcome): void {
  webhookDeliveryChannel.publish({
    account: delivery.account,
    webhook_id: delivery.webhook_id,
    delivery_id: delivery.id,
    event_type: delivery.event_type,
    attempt: delivery.attempts.length + 1,
    outcome: outcome.error === null ? 'ok' : 'error',
    status_code: outcome.statusCode,
    ...(outcome.error === null ? {} : { error_code: outcome.error.code }),
    duration_ms: outcome.durationMs,
  });
}
