import type { Tool } from '@modelcontextprotocol/client';
import type { ResultAsync } from 'neverthrow';
import type { ApiKeys } from '../auth/api-keys.js';
import type { FleetError } from '../errors/fleet-error.js';
import type { HealthHistory, HealthRecord } from '../health/health-log.js';
import type { HealthService } from '../health/health-service.js';
import type { ListServersQuery, ServerRegistry } from '../registry/registry.js';
import type { ServerInput, ServerPatch } from '../registry/schema.js';
import { type ServerDetail, type ServerSummary, summaryJson, toDetail } from '../registry/views.js';
import type { ListToolCallsQuery, ToolCallDetail, ToolCallLog, ToolCallRecord } from '../toolcalls/tool-call-log.js';
import type { InvokeOptions, ToolCallOutcome, ToolService } from '../toolcalls/tool-service.js';
import type { JsonText } from '../util/json-text.js';
import { type Page, withPageDefaults } from '../util/pagination.js';
import type { WebhookOperations } from '../webhooks/service.js';
import { createImporter, type ImportInput, type ImportOptions, type ImportResult } from '../import/importer.js';
import { okWith, type Ran, chainMap, toAsync } from '../util/result.js';

/**
 * The operations of mcp-fleet, once: `fleet.servers`, `fleet.tools`, `fleet.toolCalls`, `fleet.webhooks` are these
 * objects, and every HTTP route (`http/routes.ts`) is a declaration over them. Values are the embedder's shapes: a
 * server is always its `ServerDetail` (never a secret); where the HTTP contract shows less (the seed's eight fields
 * on create and list), the route's view narrows it. See docs/architecture.md "Operations".
 *
 * The doors (HTTP, MCP) see the operations with their inputs as received (`unknown`): every operation validates its
 * input, once. The embedder sees the very same functions typed (`ServersApi`, `ToolsApi`, `WebhooksApi`), each
 * answering a `ResultAsync` (`embedderApi`); the doors take what an operation ran (`Ran`): a `Result` when every
 * step answered at once, so the HTTP handler waits only for what is asynchronous.
 */
export interface Operations {
  readonly servers: ServerOperations;
  readonly tools: ToolOperations;
  readonly toolCalls: ToolCallsApi;
  /** `undefined` when webhooks are off. */
  readonly webhooks: WebhookOperations | undefined;
  /** The API keys (`fleet.keys`): the `/keys` routes call `createFor`, `list`, `get` and `revoke` with the caller's account. */
  readonly keys: ApiKeys;
}

export interface ServerOperations extends Omit<ServersApi, 'create' | 'update' | 'list' | 'import'> {
  /** The schemas `create` and `update` judge their bodies with, for the route table (`http/routes.ts`). */
  readonly bodies: ServerRegistry['bodies'];
  create(account: string, input: unknown): Ran<ServerDetail, FleetError>;
  update(account: string, id: string, patch: unknown): ResultAsync<ServerDetail, FleetError>;
  /** `charge`: the HTTP route's count of the servers against the create limit (`ImportOptions`). */
  import(account: string, input: unknown, options?: ImportOptions): ResultAsync<ImportResult, FleetError>;
  /**
   * `shape: 'summary'` lists the seed's eight fields of each server (what `GET /servers` shows) as JSON text, made
   * straight from the records rather than narrowed from details, and kept with the stored record over the fleet's own
   * memory (`summaryJson`): a listing is the hottest read there is.
   */
  list(account: string, query?: Partial<ListServersQuery>): Ran<Page<ServerDetail>, FleetError>;
  list(account: string, query: Partial<ListServersQuery>, shape: 'summary'): Ran<Page<JsonText<ServerSummary>>, FleetError>;
}

export interface ToolOperations extends ToolsApi {
  /** A call from its `{ name, arguments? }` as received (a `tools/call` body or MCP params), validated here, once. */
  invoke(account: string, serverId: string, params: unknown, options?: InvokeOptions): ResultAsync<ToolCallOutcome, FleetError>;
  /** `list` narrowed to the tools a caller's allowlist (`Principal.tools`) lets it call; `null` or absent: every tool. */
  list(account: string, serverId: string, allowlist?: readonly string[] | null): ResultAsync<Tool[], FleetError>;
}

/** The servers of an account; answers never carry secrets. */
export interface ServersApi {
  create(account: string, input: ServerInput): ResultAsync<ServerDetail, FleetError>;
  get(account: string, id: string): ResultAsync<ServerDetail, FleetError>;
  update(account: string, id: string, patch: ServerPatch): ResultAsync<ServerDetail, FleetError>;
  delete(account: string, id: string): ResultAsync<{ id: string; deleted: true }, FleetError>;
  /** Probes the server now and answers its health record, as `GET /servers/{id}/health`. */
  health(account: string, id: string): ResultAsync<HealthRecord, FleetError>;
  /** The last 24 hours in five-minute buckets with their uptime and error rate, as `GET /servers/{id}/health/history`; probes nothing. */
  healthHistory(account: string, id: string): ResultAsync<HealthHistory, FleetError>;
  /** Oldest first; `page` 1 and `limit` 50 unless given; filters `type`, `health`. */
  list(account: string, query?: Partial<ListServersQuery>): ResultAsync<Page<ServerDetail>, FleetError>;
  /**
   * Creates the servers of a client configuration (Claude Desktop, Claude Code, Cursor, VS Code) or a registry
   * server.json, as `POST /servers/import` (docs/import.md): the plan, with what was created, skipped, renamed and left
   * unresolved. All or nothing unless `skip_invalid`; `dry_run` creates nothing.
   */
  import(account: string, input: ImportInput): ResultAsync<ImportResult, FleetError>;
}

/** The tools of an account's servers, through their proxy settings. */
export interface ToolsApi {
  /** Calls a tool and records the call, as `POST /servers/{id}/tools/call`; a failed call is a record, not an error. */
  call(account: string, serverId: string, name: string, args?: Record<string, unknown>): ResultAsync<ToolCallOutcome, FleetError>;
  /** The server's tools (MCP `tools/list`, every page), as `GET /servers/{id}/tools`. */
  list(account: string, serverId: string): ResultAsync<Tool[], FleetError>;
}

/** The log of tool calls. */
export interface ToolCallsApi {
  /** One record, with `arguments` and `result` when `toolCalls.record` keeps them. */
  get(account: string, id: string): ResultAsync<ToolCallDetail, FleetError>;
  /** Newest first; `page` 1 and `limit` 50 unless given; filters `server_id`, `status`, `tool`. */
  list(account: string, query?: Partial<ListToolCallsQuery>): ResultAsync<Page<ToolCallRecord>, FleetError>;
}

export interface OperationServices {
  registry: ServerRegistry;
  health: HealthService;
  tools: ToolService;
  toolCalls: ToolCallLog;
  webhooks: WebhookOperations | undefined;
  keys: ApiKeys;
}

export function createOperations({ registry, health, tools, toolCalls, webhooks, keys }: OperationServices): Operations {
  const create = (account: string, input: unknown) => chainMap(registry.create(account, input), toDetail);
  const remove = (account: string, id: string) => registry.delete(account, id);
  return {
    servers: {
      bodies: registry.bodies,
      create,
      // One road: an import creates each server through `create`, and undoes through `delete`.
      import: createImporter({ registry, create, delete: remove }),
      get: (account, id) => toAsync(registry.get(account, id)).andThen(okWith(toDetail)),
      update: (account, id, patch) => registry.update(account, id, patch).andThen(okWith(toDetail)),
      delete: remove,
      health: (account, id) => health.check(account, id),
      healthHistory: (account, id) => health.history(account, id),
      list: ((account: string, query: Partial<ListServersQuery> = {}, shape?: 'summary') =>
        // The summary is made from each record as read (no copy of the whole record first): it holds strings only.
        shape === 'summary'
          ? registry.list(account, withPageDefaults(query), summaryJson)
          : chainMap(registry.list(account, withPageDefaults(query)), ({ data, pagination }) => ({ data: data.map(toDetail), pagination }))) as ServerOperations['list'],
    },
    tools: {
      call: (account, serverId, name, args = {}) => tools.call(account, serverId, name, args),
      invoke: (account, serverId, params, options) => tools.invoke(account, serverId, params, options),
      list: (account, serverId, allowlist) => tools.list(account, serverId, allowlist),
    },
    toolCalls: {
      get: (account, id) => toolCalls.get(account, id),
      list: (account, query = {}) => toolCalls.list(account, withPageDefaults(query)),
    },
    webhooks,
    keys,
  };
}

/**
 * The operations as the embedder's `fleet.*` API: the very same functions, each answering a `ResultAsync` (what the
 * doors take as it ran, the embedder always awaits).
 */
export function embedderApi(operations: Operations): Operations & { servers: ServersApi } {
  const { servers } = operations;
  return {
    ...operations,
    servers: {
      ...servers,
      create: (account: string, input: unknown) => toAsync(servers.create(account, input)),
      list: ((account: string, query?: Partial<ListServersQuery>, shape?: 'summary') =>
        shape === 'summary' ? toAsync(servers.list(account, query ?? {}, shape)) : toAsync(servers.list(account, query))) as ServersApi['list'] & ServerOperations['list'],
    },
  };
}
