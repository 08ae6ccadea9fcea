import Keyv from 'keyv';
import type { ResultAsync } from 'neverthrow';
import { ApiKeys } from './auth/api-keys.js';
import { FleetError } from './errors/fleet-error.js';
import { type Authenticate, createHandler, type ErrorHook, type FleetHandler } from './http/handler.js';
import { DEFAULT_BODY_LIMIT } from './http/body.js';
import { buildRoutes } from './http/routes.js';
import { EventBus } from './events/bus.js';
import { HealthLog, type HealthRecord } from './health/health-log.js';
import { HealthService, type Prober } from './health/health-service.js';
import { createMcpProber } from './health/mcp-prober.js';
import { HealthMonitor, type HealthMonitorOptions } from './health/monitor.js';
import { MemoryRateLimitStore } from './ratelimit/memory-rate-limit-store.js';
import { MemoryTokenCache } from './mcp/oauth.js';
import { createGuardedFetch } from './net/guarded-fetch.js';
import { createStdioSupervisor } from './stdio/supervisor.js';
import { RateLimiter, type RateLimitOptions } from './ratelimit/limiter.js';
import { type ListServersQuery, ServerRegistry } from './registry/registry.js';
import { type ServerPatch, type ServerInput, ServerValidator } from './registry/schema.js';
import { type ServerDetail, toDetail } from './registry/views.js';
import { IndexCalls } from './storage/index-calls.js';
import type { IndexStore } from './storage/index-store.js';
import { MemoryIndexStore } from './storage/memory-index-store.js';
import { RecordStore } from './storage/records.js';
import { ConnectionPool } from './toolcalls/connection-pool.js';
import type { BackoffOptions } from './toolcalls/retry.js';
import { type ListToolCallsQuery, ToolCallLog, type ToolCallDetail, type ToolCallRecord } from './toolcalls/tool-call-log.js';
import { type ToolCallOutcome, type ToolCallRecording, ToolService } from './toolcalls/tool-service.js';
import { stdioTransportFor } from './stdio/stdio-transport.js';
import type { Tool } from '@modelcontextprotocol/client';
import { type Page, type PageQuery, withPageDefaults } from './util/pagination.js';
import { webhookRoutes } from './webhooks/routes.js';
import { createWebhooks, type Webhooks, type WebhooksApi, type WebhooksOptions } from './webhooks/service.js';

export interface FleetOptions {
  /**
   * Where records live: any Keyv, created with `throwOnErrors: true` so that a storage outage is answered
   * 503 instead of looking like missing data. Every key mcp-fleet writes starts with `keyPrefix`.
   * @default an in-memory Keyv (nothing survives a restart)
   */
  storage?: Keyv;
  /**
   * The atomic side of storage: name claims and ordered listings. Must be as durable as `storage`.
   * @default a MemoryIndexStore
   */
  index?: IndexStore;
  /** Prefix of every key mcp-fleet writes to `storage`, so it never touches the host's own keys. @default 'mcp-fleet:' */
  keyPrefix?: string;
  /** Mount point that `handle` strips when the adapter gives no path. @default '/v1' */
  prefix?: string;
  /** Largest request body in bytes; larger ones get 413 before parsing. @default 65536 */
  bodyLimit?: number;
  /** Accept only `https:` and `wss:` endpoints. @default false */
  requireTls?: boolean;
  stdio?: {
    /** Commands stdio servers may run (exact match), checked at create and at spawn. Empty: stdio is off. @default [] */
    commands?: readonly string[];
    /** Live stdio processes per account. @default 5 */
    maxProcessesPerAccount?: number;
    /** A stdio process unused this long is stopped, in ms. @default 300000 */
    idleTimeoutMs?: number;
  };
  /**
   * Lets probes, tool calls and webhooks reach private, loopback, link-local and metadata addresses: `true` for all,
   * or a list of CIDRs and hostnames. Checked on the resolved address at connect time. @default false
   */
  allowPrivateNetworks?: boolean | readonly string[];
  /** Replaces the health probe (tests, or a probe of your own). @default a real MCP exchange over the server's transport */
  prober?: Prober;
  /**
   * Probes every server in the background, once per interval; with several processes sharing `monitor.leases` (or
   * the rate limiter's store), each server is probed by one of them. `true` for the defaults. @default false (off)
   */
  monitor?: boolean | HealthMonitorOptions;
  /**
   * Rate limits per account (operation and tier, per minute) and per client address for 401s; `false` turns them
   * off. See docs/rate-limits.md. @default {} (on, the contract's limits, counted in memory)
   */
  rateLimit?: RateLimitOptions | false;
  /** Replaces the built-in API key check. @default the API keys issued through `fleet.keys` */
  authenticate?: Authenticate;
  /** Sees every 5xx error, with its cause, before it is answered. @default logs code, request id and cause to stderr */
  onError?: ErrorHook;
  /**
   * Webhooks (CONTRACT "Webhooks"): subscriptions, a durable outbox in `storage`/`index`, and a delivery worker in
   * this process. `false` turns the feature off (no routes, no events staged). See docs/webhooks.md.
   * @default {} (on, with the worker)
   */
  webhooks?: WebhooksOptions | false;
  /** Tool calls through the service (`POST /servers/{id}/tools/call`, `fleet.tools`). */
  toolCalls?: ToolCallsOptions;
  /** Clock, for tests. @default Date.now */
  now?: () => number;
}

export interface ToolCallsOptions {
  /** Keep the calls' `arguments` and/or MCP results with their records (`GET /tool-calls/{id}`). @default { arguments: false, results: false } */
  record?: ToolCallRecording;
  /** Waits between retry attempts (servers with `retry.enabled`). @default { baseMs: 200, maxMs: 10000 } */
  backoff?: BackoffOptions;
  /** A kept http connection (or websocket without heartbeat) unused this long is closed, in ms. @default 60000 */
  idleMs?: number;
}

/** The embedder's API to the servers of an account; responses never carry secrets. */
export interface ServersApi {
  create(account: string, input: ServerInput): ResultAsync<ServerDetail, FleetError>;
  get(account: string, id: string): ResultAsync<ServerDetail, FleetError>;
  update(account: string, id: string, patch: ServerPatch): ResultAsync<ServerDetail, FleetError>;
  delete(account: string, id: string): ResultAsync<{ id: string; deleted: true }, FleetError>;
  /** Probes the server now and answers its health record, as `GET /servers/{id}/health`. */
  health(account: string, id: string): ResultAsync<HealthRecord, FleetError>;
  list(account: string, query?: Partial<ListServersQuery>): ResultAsync<Page<ServerDetail>, FleetError>;
}

export interface ToolCallsApi {
  /** One record, with `arguments` and `result` when `toolCalls.record` keeps them. */
  get(account: string, id: string): ResultAsync<ToolCallDetail, FleetError>;
  /** Newest first; filters `server_id`, `status`, `tool`. */
  list(account: string, query?: Partial<ListToolCallsQuery>): ResultAsync<Page<ToolCallRecord>, FleetError>;
}

/** The tools of an account's servers, through their proxy settings. */
export interface ToolsApi {
  /** Calls a tool and records the call, as `POST /servers/{id}/tools/call`; a failed call is a record, not an error. */
  call(account: string, serverId: string, name: string, args?: Record<string, unknown>): ResultAsync<ToolCallOutcome, FleetError>;
  /** The server's tools (MCP `tools/list`, every page), as `GET /servers/{id}/tools`. */
  list(account: string, serverId: string): ResultAsync<Tool[], FleetError>;
}

export interface Fleet {
  /** Webhook subscriptions and their deliveries; `undefined` when `webhooks: false`. */
  readonly webhooks: WebhooksApi | undefined;
  /** The mount point given as `prefix`, normalized (`/v1`). */
  readonly prefix: string;
  readonly servers: ServersApi;
  readonly keys: ApiKeys;
  readonly toolCalls: ToolCallsApi;
  readonly tools: ToolsApi;
  /** Changes as they land: `server.created`, `server.updated`, `server.deleted`, `server.health_changed`, `tool_call.failed`. */
  readonly events: Pick<EventBus, 'on'>;
  /** The HTTP API: a Web `Request` in, a `Response` out. Adapters call this. */
  readonly handle: FleetHandler;
  /**
   * Ends every stdio process and outgoing connection, and what else the fleet started (the webhook worker: deliveries
   * not yet sent stay in the outbox). Storage passed in stays open.
   */
  close(): Promise<void>;
}

/** Name claims older than this may be found stale; see ServerRegistry. */
const CLAIM_GRACE_MS = 60_000;

const defaultOnError: ErrorHook = (error, { requestId, method, path }) => {
  console.error(`[mcp-fleet] ${error.code} on ${method} ${path} (${requestId})`, error.cause ?? '');
};

export function normalizePrefix(prefix: string): string {
  const trimmed = prefix.trim().replace(/\/+$/, '');
  if (trimmed === '') return '';
  // "." and ".." segments never reach the handler (URL parsing resolves them), so such a prefix would match nothing.
  if (!/^(\/(?!\.{1,2}(?:\/|$))[A-Za-z0-9._~-]+)+$/.test(trimmed.startsWith('/') ? trimmed : `/${trimmed}`)) {
    throw new TypeError(`mcp-fleet: prefix must be a path like "/v1", got ${JSON.stringify(prefix)}`);
  }
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

/** The background monitor when `options.monitor` asks for one; its leases default to the rate limiter's store. */
function createMonitor(
  options: FleetOptions,
  deps: { registry: ServerRegistry; health: HealthService; now: () => number; onError: ErrorHook },
): HealthMonitor | undefined {
  if (options.monitor === undefined || options.monitor === false) return undefined;
  const monitorOptions = options.monitor === true ? {} : options.monitor;
  const limiterStore = options.rateLimit === false ? undefined : options.rateLimit?.store;
  return new HealthMonitor(
    {
      registry: deps.registry,
      health: deps.health,
      leases: monitorOptions.leases ?? limiterStore ?? new MemoryRateLimitStore({ now: deps.now }),
      now: deps.now,
      onError: (cause) =>
        deps.onError(new FleetError('INTERNAL_ERROR', { message: 'A health monitor round failed.', cause }), { requestId: '-', method: 'MONITOR', path: '-' }),
    },
    monitorOptions,
  );
}

/** Builds a fleet: the registry, API keys, health, tool-call log and the HTTP handler over one storage. */
export function createFleet(options: FleetOptions = {}): Fleet {
  const storage = options.storage ?? new Keyv({ throwOnErrors: true });
  if (!storage.throwOnErrors) {
    throw new TypeError(
      'mcp-fleet: create the Keyv passed as `storage` with `{ throwOnErrors: true }`; otherwise a storage outage would look like missing data.',
    );
  }
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  if (!Number.isInteger(bodyLimit) || bodyLimit < 1) throw new TypeError('mcp-fleet: bodyLimit must be a positive integer');
  const now = options.now ?? Date.now;
  const prefix = normalizePrefix(options.prefix ?? '/v1');
  const records = new RecordStore(storage, options.keyPrefix ?? 'mcp-fleet:');
  const index = new IndexCalls(options.index ?? new MemoryIndexStore({ now }));
  const validator = new ServerValidator({ requireTls: options.requireTls ?? false, stdioCommands: options.stdio?.commands ?? [] });
  const onError = options.onError ?? defaultOnError;
  const events = new EventBus((cause, type) =>
    onError(new FleetError('INTERNAL_ERROR', { message: `A listener of ${type} failed.`, cause }), { requestId: '-', method: 'EVENT', path: type }),
  );
  const outbound = createGuardedFetch({ allowPrivateNetworks: options.allowPrivateNetworks ?? false });
  const webhooks: Webhooks | undefined =
    options.webhooks === false
      ? undefined
      : createWebhooks(
          {
            records,
            index,
            agent: outbound.dispatcher,
            allowPrivateNetworks: options.allowPrivateNetworks ?? false,
            now,
            onError: (cause) =>
              onError(new FleetError('INTERNAL_ERROR', { message: 'A webhook delivery round failed.', cause }), { requestId: '-', method: 'WEBHOOKS', path: '-' }),
          },
          options.webhooks,
        );
  const registry = new ServerRegistry({
    records,
    index,
    validator,
    now,
    claimGraceMs: CLAIM_GRACE_MS,
    events,
    ...(webhooks !== undefined && { outbox: webhooks.outbox }),
  });
  const healthLog = new HealthLog(records, now);
  const supervisor = createStdioSupervisor({
    commands: options.stdio?.commands ?? [],
    ...(options.stdio?.maxProcessesPerAccount !== undefined && { maxProcessesPerAccount: options.stdio.maxProcessesPerAccount }),
    ...(options.stdio?.idleTimeoutMs !== undefined && { idleTimeoutMs: options.stdio.idleTimeoutMs }),
    now,
  });
  const tokens = new MemoryTokenCache();
  const prober = options.prober ?? createMcpProber({ fetch: outbound, supervisor, tokens, now });
  const pool = new ConnectionPool(
    {
      fetch: outbound,
      dispatcher: outbound.dispatcher,
      tokens,
      now,
      stdioTransportFor: (server) => stdioTransportFor(supervisor, server),
    },
    options.toolCalls?.idleMs === undefined ? {} : { idleMs: options.toolCalls.idleMs },
  );
  const health = new HealthService({ registry, log: healthLog, prober, events, now });
  const monitor = createMonitor(options, { registry, health, now, onError });
  monitor?.start();
  // CONTRACT: a deleted server's health history goes with it (its buckets would expire within a day anyway), and
  // no process outlives its server or the configuration it was started with.
  events.on('server.deleted', ({ server }) => {
    void healthLog.forget(server.id);
    void pool.drop(server.id);
    void supervisor.stop(server.id);
  });
  events.on('server.updated', ({ server }) => {
    void pool.drop(server.id);
    void supervisor.stop(server.id);
  });
  const keys = new ApiKeys(records, index, now);
  const toolCallLog = new ToolCallLog(records, index, webhooks?.outbox);
  const tools = new ToolService({
    registry,
    log: toolCallLog,
    health: healthLog,
    events,
    pool,
    now,
    ...(options.toolCalls?.record === undefined ? {} : { record: options.toolCalls.record }),
    ...(options.toolCalls?.backoff === undefined ? {} : { backoff: options.toolCalls.backoff }),
  });
  const limiter = options.rateLimit === false ? undefined : new RateLimiter(options.rateLimit ?? {}, now);
  const handle = createHandler({
    // Webhook routes are appended here rather than written into routes.ts: each capability brings its own.
    routes: [...buildRoutes({ registry, toolCalls: toolCallLog, tools, health }), ...(webhooks === undefined ? [] : webhookRoutes(webhooks.api))],
    keys,
    prefix,
    bodyLimit,
    authenticate: options.authenticate,
    limiter,
    onError,
    now,
  });

  let closing: Promise<void> | undefined;
  return {
    prefix,
    events,
    keys,
    handle,
    webhooks: webhooks?.api,
    servers: {
      create: (account, input) => registry.create(account, input).map(toDetail),
      get: (account, id) => registry.get(account, id).map(toDetail),
      update: (account, id, patch) => registry.update(account, id, patch).map(toDetail),
      delete: (account, id) => registry.delete(account, id),
      health: (account, id) => health.check(account, id),
      list: (account, query = {}) =>
        registry.list(account, withPageDefaults(query)).map((p) => ({ ...p, data: p.data.map(toDetail) })),
    },
    toolCalls: {
      get: (account, id) => toolCallLog.get(account, id),
      list: (account, query = {}) => toolCallLog.list(account, { ...query, ...withPageDefaults(query) }),
    },
    tools: {
      call: (account, serverId, name, args = {}) => tools.call(account, serverId, name, args),
      list: (account, serverId) => tools.list(account, serverId),
    },
    close: () => (closing ??= closeAll()),
  };

  async function closeAll(): Promise<void> {
    await monitor?.stop();
    // Deliveries not yet sent stay in the outbox for the next start.
    await webhooks?.close();
    // Connections first: a stdio client detaches before the supervisor ends its process.
    await pool.close();
    await supervisor.close();
    await outbound.dispatcher.close();
    await limiter?.close();
  }
}
