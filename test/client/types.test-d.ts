/**
 * The client's types, checked by `npm run typecheck` (tsc over test/; never run): what the methods take and answer
 * comes from the generated document types, and `error.code` narrows `details`. Each `@ts-expect-error` fails the
 * check if the line it marks stops being an error.
 */
import { createClient, type ErrorCode, FleetApiError, isFleetApiError } from '@mcp-fleet/client';
import { expectTypeOf } from 'vitest';
import type { ERROR_CODES } from '../../packages/core/src/errors/codes.js';

const client = createClient({ baseUrl: 'https://fleet.example.com/v1', apiKey: 'mcpf_x' });

export async function answers(): Promise<void> {
  const created = await client.servers.create({ name: 'docs', type: 'http', endpoint: 'https://mcp.example.com/mcp' });
  expectTypeOf(created.id).toEqualTypeOf<string>();
  expectTypeOf(created.type).toEqualTypeOf<'http' | 'websocket' | 'stdio'>();
  const listed = await client.servers.list({ health: 'healthy', limit: 10, page: '2' });
  expectTypeOf(listed.pagination).toEqualTypeOf<{ page: number; limit: number; total: number; pages: number }>();
  expectTypeOf(listed.data[0]?.name).toEqualTypeOf<string | undefined>();
  const deleted = await client.servers.delete('srv_x', { signal: AbortSignal.timeout(1000) });
  expectTypeOf(deleted).toEqualTypeOf<{ id: string; deleted: true }>();
  const call = await client.tools.call('srv_x', { name: 'echo', arguments: { text: 'hi' } });
  expectTypeOf(call.status).toEqualTypeOf<'success' | 'error' | 'timeout'>();
  for await (const server of client.paginate(client.servers.list, { type: 'stdio' })) expectTypeOf(server.id).toEqualTypeOf<string>();
  for await (const delivery of client.paginate(client.webhooks.deliveries, 'wh_x')) expectTypeOf(delivery.event_type).toBeString();
}

export async function wrongCalls(): Promise<void> {
  // @ts-expect-error: `type` is one of http, websocket, stdio
  await client.servers.create({ name: 'docs', type: 'ftp', endpoint: 'https://mcp.example.com/mcp' });
  // @ts-expect-error: `name` is required
  await client.servers.create({ type: 'http', endpoint: 'https://mcp.example.com/mcp' });
  // @ts-expect-error: not a field of a server
  await client.servers.update('srv_x', { colour: 'red' });
  // @ts-expect-error: the id is required
  await client.servers.get();
  // @ts-expect-error: a tool call needs a body with the tool's name
  await client.tools.call('srv_x', { arguments: {} });
  // @ts-expect-error: not a health value
  await client.servers.list({ health: 'fine' });
  // @ts-expect-error: a server takes no query
  await client.servers.get('srv_x', { page: 2 });
  // @ts-expect-error: only listings page
  client.paginate(client.servers.get, 'srv_x');
}

export function narrowing(error: unknown): void {
  // The union of codes is the core's one table.
  expectTypeOf<ErrorCode>().toEqualTypeOf<keyof typeof ERROR_CODES>();
  if (!(error instanceof FleetApiError)) return;
  expectTypeOf(error.status).toBeNumber();
  expectTypeOf(error.requestId).toEqualTypeOf<string | undefined>();
  expectTypeOf(error.retryAfter).toEqualTypeOf<number | undefined>();
  if (error.code === 'INVALID_REQUEST') {
    // Narrowed to what the document declares for it.
    expectTypeOf(error.details).toEqualTypeOf<{ field: string; issue: string; issues?: { field: string; issue: string }[]; hint?: string } | Record<string, never>>();
    if ('field' in error.details) expectTypeOf(error.details.field).toBeString();
  } else {
    expectTypeOf(error.code).toEqualTypeOf<Exclude<ErrorCode, 'INVALID_REQUEST'>>();
    expectTypeOf(error.details).toEqualTypeOf<{ [key: string]: unknown }>();
  }
  // @ts-expect-error: not a code of the fleet
  if (error.code === 'SERVER_GONE') return;
}

export function guard(error: unknown): void {
  if (isFleetApiError(error) && error.code === 'SERVER_NOT_FOUND') expectTypeOf(error.code).toEqualTypeOf<'SERVER_NOT_FOUND'>();
}
