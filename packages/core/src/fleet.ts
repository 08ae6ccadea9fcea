import { ApiKeys } from './auth/api-keys.js';
import { FleetError } from './errors/fleet-error.js';
import { EventBus, type EventSource } from './events/bus.js';
import { ChangeWriter } from './events/change-writer.js';
import { HealthLog } from './health/health-log.js';
import { HealthService } from './health/health-service.js';
import { CircuitBreaker } from './health/breaker.js';
import { createMcpProber } from './health/mcp-prober.js';
import { HealthMonitor } from './health/monitor.js';
import { createDashboard } from './http/dashboard.js';
import { createOpenApiHandler, type OpenApiDocument, openApiDocument } from './http/openapi.js';
import { createHandler, type FleetHandler, type RequestLogEntry } from './http/handler.js';
import { createWellKnownHandler, type WellKnownHandler } from './http/resource-metadata.js';
import { OAuthResourceServer } from './auth/oauth.js';
import { buildRoutes, operationLimits } from './http/routes.js';
import { MemoryTokenCache } from './mcp/oauth.js';
import { UpstreamCatalog } from './mcp-endpoint/catalog.js';
import { McpEndpoint } from './mcp-endpoint/endpoint.js';
import { CLIENT_INFO } from './mcp/connect.js';
import { createGuardedFetch } from './net/guarded-fetch.js';
import { createOperations, embedderApi, type ServersApi, type ToolCallsApi, type ToolsApi } from './operations/index.js';
import { checkStoreKeys, createSecrets, type SecretsApi } from './operations/secrets.js';
import { tracedOperations } from './trace/operations.js';
import { type FleetOptions, resolveOptions } from './options.js';
import { RateLimiter } from './ratelimit/limiter.js';
import { ServerRegistry } from './registry/registry.js';
import { ServerValidator } from './registry/schema.js';
import { stdioTransportFor, stopWithServers } from './stdio/stdio-transport.js';
import { type ContainmentKind, createStdioSupervisor } from './stdio/supervisor.js';
import { sharedUserWarning, stdioAccessCheck, StdioUsers } from './stdio/stdio-users.js';
import { IndexCalls } from './storage/index-calls.js';
import { RecordStore } from './storage/records.js';
import type { Logger } from './util/logger.js';
import { SecretBox } from './util/secret-box.js';
import { ConnectionPool } from './toolcalls/connection-pool.js';
import { ToolCallExpiry } from './toolcalls/tool-call-expiry.js';
import { ToolCallLog } from './toolcalls/tool-call-log.js';
import { ToolService } from './toolcalls/tool-service.js';
import { ListingCache } from './toolcalls/listings.js';
import { createWebhooks, type WebhooksApi, type WebhooksOptions } from './webhooks/service.js';

/**
 * The embedder's handle on a fleet: the operations (as `fleet.servers`…), API keys, events and the HTTP API.
 * `W` is what `fleet.webhooks` is: `createFleet` infers it from its options (`WebhooksApi` unless `webhooks: false`
 * is written), and a bare `Fleet`, as adapters take it, accepts every fleet.
 */
export interface Fleet<W extends WebhooksApi | undefined = WebhooksApi | undefined> {
  readonly servers: ServersApi;
  readonly tools: ToolsApi;
  readonly toolCalls: ToolCallsApi;
  /** Webhook subscriptions and their deliveries; `undefined` when `webhooks: false`. */
  readonly webhooks: W;
  /** The mount point given as `prefix`, normalized (`/v1`). */
  readonly prefix: string;
  readonly keys: ApiKeys;
  /** Changes as they land: `server.created`, `server.updated`, `server.deleted`, `server.health_changed`, `tool_call.failed`, `key.created`, `key.revoked`. */
  readonly events: EventSource;
  /** The HTTP API: a Web `Request` in, a `Response` out. Adapters call this. */
  readonly handle: FleetHandler;
  /**
   * The fleet's documents at the host's root, outside the mount: the OAuth Protected Resource Metadata (RFC 9728) of
   * `/mcp`, `/servers/{id}/mcp` and the root form, with the `oauth` option. Answers `undefined` for any other request
   * (and for every request without `oauth`): pass it on. The adapters' `createFleetWellKnownApp` (Hono) and
   * `fleetWellKnownMiddleware` (Express) call this.
   */
  readonly wellKnown: WellKnownHandler;
  /**
   * The HTTP API as an OpenAPI 3.1 document (what `GET /openapi.json` serves), for generating clients or docs at build
   * time. `base`: `servers[0].url`. @default the prefix (`/v1`)
   */
  openapi(base?: string): OpenApiDocument;
  /**
   * What this process holds now, for gauges read at scrape time (`@mcp-fleet/otel`, `@mcp-fleet/prometheus`): two
   * counts in memory and, with webhooks, one store call. Never rejects: a store that fails leaves `outboxPending`
   * `undefined` and is told to `onError`.
   */
  stats(): Promise<FleetStats>;
  /** Secrets at rest: `rotate()` seals everything again under `encryptionKey` (docs/security.md). */
  readonly secrets: SecretsApi;
  /**
   * Resolves once the start checks passed: the keys open the store's secrets. Rejects with a FleetError that names
   * the option to set (`encryptionKey`, `previousKeys`) when they do not; await it before serving. Until it
   * resolves, operations that read or write a secret wait for it, and after a failure they fail with its error.
   */
  ready(): Promise<void>;
  /**
   * Ends every stdio process and outgoing connection, and what else the fleet started (the webhook worker: deliveries
   * not yet sent stay in the outbox), and the store it made itself when none was passed. A store passed as `store`
   * stays open: it is the embedder's to close, after the fleet. Calling it again waits for the same close.
   */
  close(): Promise<void>;
}

/** What `fleet.stats()` answers. */
export interface FleetStats {
  /** 2025-era MCP sessions at `/mcp` and `/servers/{id}/mcp` held live by this process (2026-07-28 has no sessions). */
  sessions: number;
  /** stdio server processes this process runs. */
  stdioProcesses: number;
  /**
   * Webhook deliveries neither delivered nor given up (retries waiting included), over every process sharing the
   * store; `undefined` when `webhooks: false`, or when the store did not answer.
   */
  outboxPending: number | undefined;
}

/** Name claims older than this may be found stale; see ServerRegistry. */
const CLAIM_GRACE_MS = 60_000;

/**
 * Builds a fleet: every capability over one storage, the operations over them, and the HTTP handler over those.
 * Typed by overloads (not a generic over the options, which would lose the contextual types of callbacks such as
 * `authenticate`): `fleet.webhooks` is present unless `webhooks: false` is written, so the default configuration
 * needs no check; options known only as `FleetOptions` give `WebhooksApi | undefined`.
 */
export function createFleet(options: FleetOptions & { webhooks: false }): Fleet<undefined>;
export function createFleet(options?: FleetOptions & { webhooks?: WebhooksOptions }): Fleet<WebhooksApi>;
export function createFleet(options?: FleetOptions): Fleet;
export function createFleet(options: FleetOptions = {}): Fleet {
  const resolved = resolveOptions(options);
  const { store, prefix, bodyLimit, now, onError, logger, allowPrivateNetworks, quotas, stdio, toolCalls } = resolved;
  /** A failure of work no request waits for (a listener, a delivery round, a monitor round): told to `onError`. */
  const background = (method: string, message: string, path = '-') => (cause: unknown) =>
    onError(new FleetError('INTERNAL_ERROR', { message, cause }), { requestId: '-', method, path });

  // Checked before anything starts: missing files throw here.
  const dashboard = resolved.dashboard === undefined ? undefined : createDashboard(resolved.dashboard);
  const records = new RecordStore(store.records, store.keyPrefix ?? 'mcp-fleet:');
  const secretBox = new SecretBox(resolved.secrets);
  if (secretBox.current === undefined) warnPlaintext(logger);
  const started = secretBox.startCheck(() => checkStoreKeys(records, secretBox));
  const index = new IndexCalls(store.index, store.records);
  const events = new EventBus((cause, type) => background('EVENT', `A listener of ${type} failed.`, type)(cause));
  const outbound = createGuardedFetch({ allowPrivateNetworks, maxResponseBytes: resolved.maxUpstreamBytes });
  const webhooks =
    resolved.webhooks === undefined
      ? undefined
      : createWebhooks(
          {
            records,
            index,
            agent: outbound.dispatcher,
            allowPrivateNetworks,
            now,
            onError: background('WEBHOOKS', 'A webhook delivery round failed.'),
            maxPerAccount: quotas.webhooksPerAccount,
            secrets: secretBox,
          },
          resolved.webhooks,
        );
  const changes = new ChangeWriter(events, webhooks?.outbox);
  const validator = new ServerValidator({ requireTls: resolved.requireTls, stdioCommands: stdio.commands, stdioEnvAllow: stdio.envAllow });
  // Each account's stdio children run as a user of its own (docs/security.md), which must reach their files.
  const stdioUsers = new StdioUsers({ index, records, mode: stdio.users, homes: stdio.homes });
  const checkStdio = stdio.commands.length === 0 ? undefined : stdioAccessCheck(stdioUsers, stdio.path);
  if (stdio.commands.length > 0) warnSharedUser(logger, sharedUserWarning(stdio.users));
  const registry = new ServerRegistry({ records, index, validator, now, claimGraceMs: CLAIM_GRACE_MS, changes, secrets: secretBox, maxPerAccount: quotas.serversPerAccount, checkStdio });
  const secrets = createSecrets({ records, box: secretBox, registry, webhooks });

  const supervisor = createStdioSupervisor({
    commands: stdio.commands,
    maxProcessesPerAccount: stdio.maxProcessesPerAccount,
    idleTimeoutMs: stdio.idleTimeoutMs,
    wrap: stdio.wrap,
    userOf: (account) => stdioUsers.userOf(account),
    path: stdio.path,
    now,
    onContainment: (kind, description) => logContainment(logger, kind, description),
  });
  const tokens = new MemoryTokenCache();
  const healthLog = new HealthLog(records, now);
  const listingLimits = resolved.listings;
  const pool = new ConnectionPool(
    { fetch: outbound, mcpFetch: outbound.direct, mcpExchange: outbound.exchange, dispatcher: outbound.dispatcher, maxMessageBytes: outbound.maxResponseBytes, tokens, now, stdioTransportFor: (server) => stdioTransportFor(supervisor, server, resolved.maxUpstreamBytes) },
    { ...(toolCalls.idleMs === undefined ? {} : { idleMs: toolCalls.idleMs }), maxListChangedPerMinute: listingLimits.maxListChangedPerMinute },
  );
  const listings = new ListingCache({ now, limits: listingLimits });
  const prober = resolved.prober ?? createMcpProber({ fetch: outbound, supervisor, tokens, now, probeStdio: (server) => pool.probe(server) });
  const breaker = new CircuitBreaker(records, store.leases, resolved.health.breaker, now);
  const health = new HealthService({ registry, log: healthLog, prober, breaker, thresholds: resolved.health, now });
  healthLog.follow(events);
  breaker.follow(events);
  pool.follow(events);
  listings.follow(events);
  stopWithServers(supervisor, events);

  const { record, backoff, maxTotalMs, maxConcurrentPerAccount } = toolCalls;
  const toolCallLog = new ToolCallLog(records, index, changes, { retentionMs: toolCalls.retentionMs, now });
  const expiry = new ToolCallExpiry(toolCallLog, {
    intervalMs: toolCalls.expirySweepMs,
    batch: 200,
    maxBatches: 10,
    onError: background('TOOL_CALLS', 'A sweep of expired tool calls failed.'),
  });
  expiry.start();
  const trial = (account: string, serverId: string) => health.check(account, serverId).map((checked) => checked.breaker.state === 'closed');
  const tools = new ToolService({ registry, log: toolCallLog, health: healthLog, breaker, trial, pool, listings, now, record, backoff, maxTotalMs, maxConcurrentPerAccount });
  const keys = new ApiKeys(records, index, now, background('KEYS', "Writing an API key's last use failed."), changes);
  const operations = createOperations({ registry, health, tools, toolCalls: toolCallLog, webhooks: webhooks?.api, keys });
  const routes = buildRoutes(operations);
  const limiter = resolved.rateLimit === undefined ? undefined : new RateLimiter({ ...resolved.rateLimit, store: store.rateLimits }, now, operationLimits(routes));
  const monitor =
    resolved.monitor === undefined
      ? undefined
      : new HealthMonitor(
          {
            registry,
            health,
            leases: store.leases,
            now,
            onError: background('MONITOR', 'A health monitor round failed.'),
          },
          resolved.monitor,
        );
  monitor?.start();
  const onRequest = logger === undefined ? undefined : (entry: RequestLogEntry) => logger.info({ ...entry }, 'request');
  const mcp =
    resolved.mcp === undefined
      ? undefined
      : new McpEndpoint(
          {
            catalog: new UpstreamCatalog({ registry, tools, pool, listings }),
            operations: tracedOperations(operations, 'mcp'),
            tools,
            version: CLIENT_INFO.version,
            records,
            index,
            events,
            bodyLimit,
            onError: (cause) => background('MCP', 'An MCP endpoint session record could not be written.')(cause),
            keyLive: (id) => keys.works(id),
          },
          resolved.mcp,
        );
  const openapi = resolved.openapi ? createOpenApiHandler(routes, prefix) : undefined;
  const oauth = resolved.oauth === undefined ? undefined : new OAuthResourceServer(resolved.oauth, { fetch: outbound, now, warn: (message) => warn(logger, message) });
  const wellKnown: WellKnownHandler = oauth === undefined ? () => undefined : createWellKnownHandler(oauth, prefix);
  const handle = createHandler({ routes, keys, prefix, bodyLimit, authenticate: resolved.authenticate, limiter, onError, onRequest, now, dashboard, openapi, mcp, oauth });

  let closing: Promise<void> | undefined;
  const close = async () => {
    await expiry.stop();
    await monitor?.stop();
    await mcp?.close();
    // Deliveries not yet sent stay in the outbox for the next start.
    await webhooks?.close();
    // Connections first: a stdio client detaches before the supervisor ends its process.
    await pool.close();
    await supervisor.close();
    await outbound.dispatcher.close();
    await limiter?.close();
    await keys.close();
    // The store the fleet made for itself; one passed in is the embedder's, and stays open.
    if (resolved.ownsStore) await store.close();
  };
  const ready = () =>
    started.then((error) => {
      if (error !== undefined) throw error;
    });
  const stats = async (): Promise<FleetStats> => {
    const pending = webhooks === undefined ? undefined : await webhooks.pending();
    if (pending?.isErr() === true) background('STATS', 'Counting the pending webhook deliveries failed.')(pending.error);
    return { sessions: mcp?.liveSessions ?? 0, stdioProcesses: supervisor.size, outboxPending: pending?.isOk() === true ? pending.value : undefined };
  };
  const document = (base = prefix || '/') => openApiDocument(routes, base);
  return { ...embedderApi(tracedOperations(operations, 'api')), prefix, keys, events, handle, wellKnown, openapi: document, stats, secrets, ready, close: () => (closing ??= close()) };
}

let warnedOnConsole = false;

/** Once per fleet through `logger`; on the console (no logger) once per process, which may start many fleets. */
function warnPlaintext(logger: Logger | undefined): void {
  const message =
    'mcp-fleet: WARNING: secrets (server tokens and client secrets, stdio env values, webhook secrets) are stored in plaintext: set the encryptionKey option (reference server: MCP_FLEET_ENCRYPTION_KEY) to encrypt them';
  if (logger !== undefined) logger.warn({}, message);
  else if (!warnedOnConsole) {
    warnedOnConsole = true;
    console.warn(message);
  }
}

/** Once per fleet, at the first stdio spawn: which containment holds the processes' trees (info), or a warning when only the group does. */
function logContainment(logger: Logger | undefined, kind: ContainmentKind, description: string): void {
  const message = `mcp-fleet: stdio containment: ${description}`;
  if (kind !== 'process-group') logger?.info({ containment: kind }, message);
  else if (logger !== undefined) logger.warn({ containment: kind }, `${message} (a process that calls setsid may outlive its server until its account has no stdio process left)`);
  else console.warn(`${message} (a process that calls setsid may outlive its server until its account has no stdio process left)`);
}

function warnSharedUser(logger: Logger | undefined, message: string | undefined): void {
  if (message === undefined) return;
  warn(logger, message);
}

function warn(logger: Logger | undefined, message: string): void {
  if (logger !== undefined) logger.warn({}, message);
  else console.warn(message);
}
