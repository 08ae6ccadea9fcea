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

/**
 * Traces every request `client` sends (`tools/call`, `tools/list`, `ping`…: the SDK's methods all go through its
 * `request`) on `mcp-fleet:mcp.client` when anyone listens, over any transport.
 */
export function traceRequests(client: Client, transport: string, era: McpEraName, serverId: string | undefined): void {
  const request = client.request.bind(client) as (...args: unknown[]) => Promise<unknown>;
  client.request = ((...args: unknown[]) => {
    if (!mcpClientChannel.hasSubscribers) return request(...args);
    const { method, params } = args[0] as { method: string; params?: { name?: unknown } };
    const message: McpClientMessage = { method, transport, era };
    if (serverId !== undefined) message.server_id = serverId;
    if (method === 'tools/call' && typeof params?.name === 'string') message.tool_name = params.name;
    return traced(mcpClientChannel, message, () => request(...args), describeAnswered);
  }) as Client['request'];
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
