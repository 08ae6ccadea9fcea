import { ApiKeys } from './auth/api-keys.js';
import { FleetError } from './errors/fleet-error.js';
import { EventBus, type EventSource } from './events/bus.js';
import { ChangeWriter } from './events/change-writer.js';
import { HealthLog } from './health/health-log.js';
import { HealthService } from './health/health-service.js';
import { createMcpProber } from './health/mcp-prober.js';
import { HealthMonitor } from './health/monitor.js';
import { createDashboard } from './http/dashboard.js';
import { createHandler, type FleetHandler, type RequestLogEntry } from './http/handler.js';
import { buildRoutes, operationLimits } from './http/routes.js';
import { MemoryTokenCache } from './mcp/oauth.js';
import { UpstreamCatalog } from './mcp-endpoint/catalog.js';
import { McpEndpoint } from './mcp-endpoint/endpoint.js';
import { CLIENT_INFO } from './mcp/connect.js';
import { createGuardedFetch } from './net/guarded-fetch.js';
import { createOperations, embedderApi, type ServersApi, type ToolCallsApi, type ToolsApi } from './operations/index.js';
import { checkStoreKeys, createSecrets, type SecretsApi } from './operations/secrets.js';
import { type FleetOptions, resolveOptions } from './options.js';
import { RateLimiter } from './ratelimit/limiter.js';
import { MemoryRateLimitStore } from './ratelimit/memory-rate-limit-store.js';
import { ServerRegistry } from './registry/registry.js';
import { ServerValidator } from './registry/schema.js';
import { stdioTransportFor, stopWithServers } from './stdio/stdio-transport.js';
import { type ContainmentKind, createStdioSupervisor } from './stdio/supervisor.js';
import { defaultHomes, sharedUserWarning, stdioAccessCheck, StdioUsers } from './stdio/stdio-users.js';
import { DEFAULT_STDIO_PATH } from './registry/stdio-policy.js';
import { IndexCalls } from './storage/index-calls.js';
import { MemoryIndexStore } from './storage/memory-index-store.js';
import { RecordStore } from './storage/records.js';
import { SecretBox } from './util/secret-box.js';
import { ConnectionPool } from './toolcalls/connection-pool.js';
import { ToolCallExpiry } from './toolcalls/tool-call-expiry.js';
import { ToolCallLog } from './toolcalls/tool-call-log.js';
import { checkOption, positiveNumber } from './util/options.js';
import { ToolService } from './toolcalls/tool-service.js';
import { ListingCache, resolveListings } from './toolcalls/listings.js';
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
  /** Changes as they land: `server.created`, `server.updated`, `server.deleted`, `server.health_changed`, `tool_call.failed`. */
  readonly events: EventSource;
  /** The HTTP API: a Web `Request` in, a `Response` out. Adapters call this. */
  readonly handle: FleetHandler;
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
   * not yet sent stay in the outbox). Storage passed in stays open. Calling it again waits for the same close.
   */
  close(): Promise<void>;
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
  const { storage, prefix, bodyLimit, now, onError, stdioCommands, stdioUsers: stdioUserMode, allowPrivateNetworks, monitor: monitorOptions, quotas } = resolveOptions(options);
  /** A failure of work no request waits for (a listener, a delivery round, a monitor round): told to `onError`. */
  const background = (method: string, message: string, path = '-') => (cause: unknown) =>
    onError(new FleetError('INTERNAL_ERROR', { message, cause }), { requestId: '-', method, path });

  // Checked before anything starts: missing files throw here.
  const dashboard = options.dashboard ? createDashboard(options.dashboard === true ? {} : options.dashboard) : undefined;
  const records = new RecordStore(storage, options.keyPrefix ?? 'mcp-fleet:');
  const secretBox = new SecretBox({ current: options.encryptionKey, previous: options.previousKeys });
  if (secretBox.current === undefined) warnPlaintext(options.logger);
  const started = secretBox.startCheck(() => checkStoreKeys(records, secretBox));
  const index = new IndexCalls(options.index ?? new MemoryIndexStore({ now }));
  const events = new EventBus((cause, type) => background('EVENT', `A listener of ${type} failed.`, type)(cause));
  const outbound = createGuardedFetch({ allowPrivateNetworks, maxResponseBytes: options.maxUpstreamBytes });
  const webhooks =
    options.webhooks === false
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
          options.webhooks,
        );
  const changes = new ChangeWriter(events, webhooks?.outbox);
  const validator = new ServerValidator({ requireTls: options.requireTls ?? false, stdioCommands, stdioEnvAllow: options.stdio?.envAllow });
  // Each account's stdio children run as a user of its own (docs/security.md), which must reach their files.
  const stdioPath = options.stdio?.path ?? DEFAULT_STDIO_PATH;
  const stdioUsers = new StdioUsers({ index, records, mode: stdioUserMode, homes: options.stdio?.homes ?? defaultHomes() });
  const checkStdio = stdioCommands.length === 0 ? undefined : stdioAccessCheck(stdioUsers, stdioPath);
  if (stdioCommands.length > 0) warnSharedUser(options.logger, sharedUserWarning(stdioUserMode));
  const registry = new ServerRegistry({ records, index, validator, now, claimGraceMs: CLAIM_GRACE_MS, changes, secrets: secretBox, maxPerAccount: quotas.serversPerAccount, checkStdio });
  const secrets = createSecrets({ records, box: secretBox, registry, webhooks });

  const { maxProcessesPerAccount, idleTimeoutMs, wrap } = options.stdio ?? {};
  const supervisor = createStdioSupervisor({
    commands: stdioCommands,
    maxProcessesPerAccount,
    idleTimeoutMs,
    wrap,
    userOf: (account) => stdioUsers.userOf(account),
    path: stdioPath,
    now,
    onContainment: (kind, description) => logContainment(options.logger, kind, description),
  });
  const tokens = new MemoryTokenCache();
  const healthLog = new HealthLog(records, now);
  const listingLimits = resolveListings(options.listings, outbound.maxResponseBytes);
  const pool = new ConnectionPool(
    { fetch: outbound, dispatcher: outbound.dispatcher, maxMessageBytes: outbound.maxResponseBytes, tokens, now, stdioTransportFor: (server) => stdioTransportFor(supervisor, server, options.maxUpstreamBytes) },
    { ...(options.toolCalls?.idleMs === undefined ? {} : { idleMs: options.toolCalls.idleMs }), maxListChangedPerMinute: listingLimits.maxListChangedPerMinute },
  );
  const listings = new ListingCache({ now, limits: listingLimits });
  const prober = options.prober ?? createMcpProber({ fetch: outbound, supervisor, tokens, now, probeStdio: (server) => pool.probe(server) });
  const health = new HealthService({ registry, log: healthLog, prober, now });
  healthLog.follow(events);
  pool.follow(events);
  listings.follow(events);
  stopWithServers(supervisor, events);

  const { record, backoff, maxTotalMs, maxConcurrentPerAccount, retentionDays = 30, expirySweepMs = 60_000 } = options.toolCalls ?? {};
  checkOption('toolCalls.retentionDays', retentionDays, positiveNumber);
  checkOption('toolCalls.expirySweepMs', expirySweepMs, positiveNumber);
  const toolCallLog = new ToolCallLog(records, index, changes, { retentionMs: retentionDays * 86_400_000, now });
  const expiry = new ToolCallExpiry(toolCallLog, {
    intervalMs: expirySweepMs,
    batch: 200,
    maxBatches: 10,
    onError: background('TOOL_CALLS', 'A sweep of expired tool calls failed.'),
  });
  expiry.start();
  const tools = new ToolService({ registry, log: toolCallLog, health: healthLog, pool, listings, now, record, backoff, maxTotalMs, maxConcurrentPerAccount });
  const operations = createOperations({ registry, health, tools, toolCalls: toolCallLog, webhooks: webhooks?.api });
  const routes = buildRoutes(operations);
  const limiter = options.rateLimit === false ? undefined : new RateLimiter(options.rateLimit ?? {}, now, operationLimits(routes));
  const limiterStore = options.rateLimit === false ? undefined : options.rateLimit?.store;
  const monitor =
    monitorOptions === undefined
      ? undefined
      : new HealthMonitor(
          {
            registry,
            health,
            leases: monitorOptions.leases ?? limiterStore ?? new MemoryRateLimitStore({ now }),
            now,
            onError: background('MONITOR', 'A health monitor round failed.'),
          },
          monitorOptions,
        );
  monitor?.start();
  const keys = new ApiKeys(records, index, now, background('KEYS', "Writing an API key's last use failed."));
  const { logger } = options;
  const onRequest = logger === undefined ? undefined : (entry: RequestLogEntry) => logger.info({ ...entry }, 'request');
  const mcp =
    options.mcp === false
      ? undefined
      : new McpEndpoint(
          {
            catalog: new UpstreamCatalog({ registry, tools, pool, listings }),
            operations,
            tools,
            version: CLIENT_INFO.version,
            records,
            index,
            events,
            bodyLimit,
            onError: (cause) => background('MCP', 'An MCP endpoint session record could not be written.')(cause),
          },
          options.mcp,
        );
  const handle = createHandler({ routes, keys, prefix, bodyLimit, authenticate: options.authenticate, limiter, onError, onRequest, now, dashboard, mcp });

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
  };
  const ready = () =>
    started.then((error) => {
      if (error !== undefined) throw error;
    });
  return { ...embedderApi(operations), prefix, keys, events, handle, secrets, ready, close: () => (closing ??= close()) };
}

let warnedOnConsole = false;

/** Once per fleet through `logger`; on the console (no logger) once per process, which may start many fleets. */
function warnPlaintext(logger: FleetOptions['logger']): void {
  const message =
    'mcp-fleet: WARNING: secrets (server tokens and client secrets, stdio env values, webhook secrets) are stored in plaintext: set the encryptionKey option (reference server: MCP_FLEET_ENCRYPTION_KEY) to encrypt them';
  if (logger !== undefined) logger.warn({}, message);
  else if (!warnedOnConsole) {
    warnedOnConsole = true;
    console.warn(message);
  }
}

/** Once per fleet, at the first stdio spawn: which containment holds the processes' trees (info), or a warning when only the group does. */
function logContainment(logger: FleetOptions['logger'], kind: ContainmentKind, description: string): void {
  const message = `mcp-fleet: stdio containment: ${description}`;
  if (kind !== 'process-group') logger?.info({ containment: kind }, message);
  else if (logger !== undefined) logger.warn({ containment: kind }, `${message} (a process that calls setsid may outlive its server until its account has no stdio process left)`);
  else console.warn(`${message} (a process that calls setsid may outlive its server until its account has no stdio process left)`);
}

function warnSharedUser(logger: FleetOptions['logger'], message: string | undefined): void {
  if (message === undefined) return;
  if (logger !== undefined) logger.warn({}, message);
  else console.warn(message);
}
