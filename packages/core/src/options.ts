import type { McpEndpointOptions } from './mcp-endpoint/endpoint.js';
import { readFileSync } from 'node:fs';
import type { Authenticate, ErrorHook } from './http/handler.js';
import type { Principal, Tier } from './auth/scopes.js';
import { DEFAULT_BODY_LIMIT } from './http/body.js';
import type { Prober } from './health/health-service.js';
import type { HealthMonitorOptions } from './health/monitor.js';
import { type HealthOptions, type ResolvedHealth, resolveHealth } from './health/states.js';
import type { DashboardOptions } from './http/dashboard.js';
import { DEFAULT_MAX_UPSTREAM_BYTES } from './net/guarded-fetch.js';
import type { RateLimitOptions } from './ratelimit/limiter.js';
import { DEFAULT_SERVERS_PER_ACCOUNT } from './registry/registry.js';
import { DEFAULT_STDIO_PATH, type StdioCommandRule } from './registry/stdio-policy.js';
import { defaultHomes, type StdioUserMode } from './stdio/stdio-users.js';
import { createMemoryStore, type FleetStore } from './store.js';
import type { BackoffOptions } from './toolcalls/retry.js';
import type { ToolCallRecording } from './toolcalls/tool-service.js';
import { type ListingsOptions, type ResolvedListings, resolveListings } from './toolcalls/listings.js';
import type { Logger } from './util/logger.js';
import { checkOption, integerIn, positiveInteger, positiveNumber } from './util/options.js';
import { type ResolvedOAuth, resolveOAuth } from './auth/oauth.js';
import type { WebhooksOptions } from './webhooks/service.js';
import { MAX_WEBHOOKS_PER_ACCOUNT } from './webhooks/subscriptions.js';

export interface FleetOptions {
  /**
   * Everything the fleet stores, as one object (docs/configuration.md, "Store"): `createMemoryStore()`,
   * `createSqliteStore(…)` from `@mcp-fleet/sqlite`, `createRedisStore(…)` from `@mcp-fleet/redis`, or a store of
   * your own. A store passed here is yours: `fleet.close()` leaves it open; close it after the fleet.
   * @default a `createMemoryStore()` of the fleet's own (nothing survives a restart), closed by `fleet.close()`
   */
  store?: FleetStore;
  /** Mount point that `handle` strips when the adapter gives no path. @default '/v1' */
  prefix?: string;
  /**
   * Largest request body in bytes; larger ones get 413 before parsing. `POST /servers/import` reads up to 1 MiB, or
   * this if larger (docs/import.md). @default 65536
   */
  bodyLimit?: number;
  /** Accept only `https:` and `wss:` endpoints. @default false */
  requireTls?: boolean;
  stdio?: {
    /**
     * Commands stdio servers may run (exact match), checked at create and at spawn; an entry
     * `{ command, args, extraArgs }` pins the arguments' first items (and with `extraArgs: false`, all of them).
     * Empty: stdio is off. @default []
     */
    commands?: readonly StdioCommandRule[];
    /**
     * One user for every account's stdio children, instead of a uid of each account's own (`uids`), when the service
     * runs as root: a name from `/etc/passwd` or `{ uid, gid }`; `false` keeps root (not advised: a child could read
     * every tenant's secrets from the service). A shared user serves one account only unless `sharedUser` is set.
     * Ignored when the service does not run as root. @default none: each account gets its own uid from `uids`
     */
    user?: string | { uid: number; gid: number } | false;
    /**
     * Running as root, each account's children run as a uid (and gid) of that account's own, drawn from this range
     * and kept in the store, so that every process and restart agrees; children of two accounts cannot read each
     * other's `/proc/<pid>/environ` nor signal each other. The uids need no `/etc/passwd` entry; pick a range no
     * other user of the host has. @default { from: 200000, to: 265535 }
     */
    uids?: { from: number; to: number };
    /**
     * Lets stdio servers of several accounts run as one user: where the service cannot switch users (it does not
     * run as root), or with `user`. Their children can then read each other's environment (`env` secrets) and
     * signal each other: a warning says so at start. Without it, the first account to run a stdio server keeps
     * stdio to itself and others are refused (400 at create). @default false
     */
    sharedUser?: boolean;
    /**
     * The folder holding a private home (0700, owned by that user) per stdio user, set as the children's `HOME`
     * (npm's and uv's caches go there, so `npx -y` and `uvx` work). Made 0711 if missing; must be the service
     * user's and not writable by others. @default `<os.tmpdir()>/mcp-fleet-stdio-homes` (the reference server: a
     * folder beside its store file)
     */
    homes?: string;
    /** The `PATH` every stdio child gets (never the service's own). @default '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' */
    path?: string;
    /**
     * With a list, the only environment variable names a stdio server may set, replacing the default denylist of
     * names that steer a loader, an interpreter, TLS, proxies or package registries (docs/configuration.md). @default none
     */
    envAllow?: readonly string[];
    /** Rewrites each child's command line after the allowlist check, to run it in a sandbox of yours. @default none */
    wrap?: (command: string, args: readonly string[]) => { command: string; args: readonly string[] };
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
  /**
   * Largest answer read from any upstream, in bytes: an MCP reply or its SSE stream, a discovery or token document, a
   * stdio line. Past it the probe or call fails with `UPSTREAM_RESPONSE_TOO_LARGE` and memory stays bounded.
   * @default 4194304 (4 MiB)
   */
  maxUpstreamBytes?: number;
  /**
   * Bounds of the upstream listings (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`): of
   * one server's listing over all its pages, of the one cache that keeps them (per account and over all), and of how
   * often an upstream's `list_changed` is heeded (docs/configuration.md, "Listings").
   * @default { maxBytes: maxUpstreamBytes, maxItems: 10000, cacheBytesPerAccount: 16 MiB, cacheBytes: 128 MiB, relistIntervalMs: 1000, maxListChangedPerMinute: 60 }
   */
  listings?: ListingsOptions;
  /** Replaces the health probe (tests, or a probe of your own). @default a real MCP exchange over the server's transport */
  prober?: Prober;
  /**
   * Probes every server in the background, once per interval; with several processes sharing a store whose `leases`
   * are shared (Redis), each server is probed by one of them. `true` for the defaults. @default false (off)
   */
  monitor?: boolean | HealthMonitorOptions;
  /**
   * What makes a server `degraded` rather than `healthy`, how long a new state must hold before it is announced, and
   * each server's circuit breaker (docs/health.md).
   * @default { degradedLatencyMs: 2000, degradedErrorRate: 0.1, errorRateWindowMs: 900000, errorRateMinRequests: 3, announceAfter: 2, breaker: { failures: 5, backoffMs: 30000, maxBackoffMs: 600000 } }
   */
  health?: HealthOptions;
  /**
   * Rate limits per account (operation and tier, per minute) and per client address for 401s, counted in the store's
   * `rateLimits`; `false` turns them off. See docs/rate-limits.md. @default {} (on, the contract's limits)
   */
  rateLimit?: FleetRateLimitOptions | false;
  /** Replaces the built-in API key check. @default the API keys issued through `fleet.keys` */
  authenticate?: Authenticate;
  /**
   * Where the fleet logs, in pino's shape (pass `pino()` as it is): one `info` line per request (`method`, the route's
   * template as `route`, `status`, `duration_ms`, `request_id`, `account`: never a header, body or query), and an `error`
   * line for each 5xx and each failure of background work (with the cause of a 500/503 as `err`; an upstream's answer
   * never). @default no request lines; 5xx and background failures as one line each on stderr
   */
  logger?: Logger;
  /** Sees every 5xx error, with its cause, before it is answered. @default logs through `logger` (see there) */
  onError?: ErrorHook;
  /**
   * Webhooks (docs/webhooks.md): subscriptions, a durable outbox in the `store`, and a delivery worker in
   * this process. `false` turns the feature off (no routes, no events staged). See docs/webhooks.md.
   * @default {} (on, with the worker)
   */
  webhooks?: WebhooksOptions | false;
  /** Tool calls through the service (`POST /servers/{id}/tools/call`, `fleet.tools`). */
  toolCalls?: ToolCallsOptions;
  /**
   * How many of each resource an account may hold; beyond, a create answers 409 `QUOTA_EXCEEDED`. Held by the store's
   * atomic commit, so across every process sharing the `store`.
   */
  quotas?: QuotasOptions;
  /**
   * Serves the web dashboard (docs/dashboard.md) at `/dashboard/` below the mount (`/v1/dashboard/`): static files
   * that sign in with an API key and use this HTTP API. `true` for the files shipped in the package. @default false
   */
  dashboard?: boolean | DashboardOptions;
  /**
   * Serves the HTTP API's OpenAPI 3.1 document at `/openapi.json` below the mount (`/v1/openapi.json`), without a key:
   * it holds no data, only the routes' declared shapes (docs/http-api.md). `false` turns it off. @default true
   */
  openapi?: boolean;
  /**
   * Encrypts secrets at rest (docs/security.md, "Secrets at rest"): server `authentication.token` and
   * `client_secret`, stdio `env` values and webhook secrets are stored AES-256-GCM encrypted under this key, 32 bytes
   * (a Uint8Array, or their base64: `openssl rand -base64 32`). A key that does not open the store's secrets fails
   * the start (`fleet.ready()`). Without one the fleet warns once at start that secrets are stored in plaintext.
   * @default none (plaintext)
   */
  encryptionKey?: Uint8Array | string;
  /**
   * Keys that secrets may still be encrypted with: they decrypt, never encrypt. After a key change, list the old key
   * here and run `fleet.secrets.rotate()`; then it may go. @default []
   */
  previousKeys?: readonly (Uint8Array | string)[];
  /**
   * The MCP endpoint (docs/mcp-endpoint.md): `/mcp` and `/servers/{id}/mcp` below the mount serve the account's
   * servers as one Streamable HTTP MCP server. `false` turns it off (those paths answer 404). @default {}
   */
  mcp?: McpEndpointOptions | false;
  /**
   * Accepts OAuth 2.1 access tokens from your identity provider beside API keys, on the MCP endpoint and the HTTP API
   * (docs/oauth.md): the fleet is a resource server (it verifies tokens, it issues none), and serves the Protected
   * Resource Metadata (RFC 9728) agents discover it by (`fleet.wellKnown`, and the adapters' helpers). A request with
   * a valid API key is never challenged. @default none (API keys only)
   */
  oauth?: OAuthOptions;
  /** Clock, for tests. @default Date.now */
  now?: () => number;
}

/** The `oauth` option: the identity providers whose access tokens the fleet accepts (docs/oauth.md). */
export interface OAuthOptions {
  /** The authorization servers whose tokens are accepted: 1 to 20, each with a distinct `issuer`. */
  issuers: readonly OAuthIssuerOptions[];
  /**
   * The public URL of the fleet's mount point as agents reach it, prefix included (`https://fleet.example.com/v1`;
   * mounted at `/api` by the host app: `https://fleet.example.com/api/v1`). The MCP endpoint's resource is this +
   * `/mcp` (and + `/servers/{id}/mcp`); a token whose `aud` names that resource (or this URL, or its origin) is
   * accepted beside `audiences`. Set it behind a proxy that terminates TLS.
   * @default made from each request's URL (Host and protocol) for the metadata documents and challenges only: a Host
   * header is the client's to write, so it never widens the audiences accepted
   */
  resource?: string;
  /**
   * The scopes the Protected Resource Metadata lists (`scopes_supported`) and a 401 on the MCP endpoint asks for
   * (`scope="…"`). @default ['tool_calls:read', 'tool_calls:write'] (what `tools/list` and `tools/call` need)
   */
  scopesSupported?: readonly string[];
  /**
   * Maps a verified token's claims to the principal it acts for (account, tier, scopes, allowlists), or `null` to
   * refuse it (401). Downstream, the principal is treated as an API key's is. @default `defaultOAuthPrincipal`: the
   * issuer's `accountClaim` (`sub`) as the account, the `scope` (or `scp`) claim's fleet scopes, the issuer's `tier`
   */
  principal?: OAuthPrincipalMapper;
  /** Tolerated clock skew on `exp`, `nbf` and `iat`, in seconds. @default 30 */
  clockToleranceSeconds?: number;
  /** How the issuers' key sets (JWKS) are fetched and kept. */
  jwks?: OAuthJwksOptions;
}

/** One authorization server whose access tokens the fleet accepts. */
export interface OAuthIssuerOptions {
  /** The issuer identifier, exactly as the tokens' `iss` claim and the server's metadata write it (`https://idp.example.com/`). */
  issuer: string;
  /**
   * The `aud` values accepted (any one of them in the token's `aud`): the API identifier or audience you configured at
   * the identity provider. May be empty when `oauth.resource` is set: then only the canonical resource URLs pass.
   */
  audiences: readonly string[];
  /**
   * Where the issuer's signing keys are. @default discovered from the issuer's metadata:
   * `/.well-known/oauth-authorization-server` (RFC 8414), then `/.well-known/openid-configuration`
   */
  jwksUri?: string;
  /**
   * The JWS algorithms accepted. `none` is never accepted; an HMAC algorithm (`HS256`…) only when listed here.
   * @default ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']
   */
  algorithms?: readonly string[];
  /** Checks opaque (non-JWT) tokens with this issuer's RFC 7662 introspection endpoint. @default none: only JWTs */
  introspection?: OAuthIntrospectionOptions;
  /** The claim holding the account id (1–64 of letters, digits, `_`, `.`, `-`), for the default `principal`. @default 'sub' */
  accountClaim?: string;
  /**
   * Put before the claim's value to make the account (`github-` + `12345`), for the default `principal`: so that the
   * same subject at two identity providers is two accounts. 1–32 of letters, digits, `_`, `.`, `-`; the account it
   * makes must still be at most 64. @default none: the claim's value is the account
   */
  accountPrefix?: string;
  /** The tier of this issuer's principals, for the default `principal`. @default 'free' */
  tier?: Tier;
}

/** An RFC 7662 token introspection endpoint, called with HTTP Basic client authentication (`client_secret_basic`). */
export interface OAuthIntrospectionOptions {
  endpoint: string;
  clientId: string;
  clientSecret: string;
  /** How long an active answer is kept, in ms (never past the token's `exp`). @default 60000 */
  cacheMs?: number;
}

/** How the issuers' JWKS are fetched (through the outgoing guard: `allowPrivateNetworks`, `maxUpstreamBytes`). */
export interface OAuthJwksOptions {
  /** A fetch of a key set or a metadata document that takes longer fails, in ms. @default 5000 */
  timeoutMs?: number;
  /** A key set is fetched again after this long, in ms. @default 600000 */
  cacheMaxAgeMs?: number;
  /**
   * The least time between two fetches of one issuer's key set, in ms: a token with an unknown `kid` fetches it again
   * at most this often, so a flood of made-up `kid`s cannot make the fleet hammer the identity provider. @default 30000
   */
  cooldownMs?: number;
}

/** The verified claims of an access token (a JWT's payload, or an introspection answer). */
export interface OAuthClaims {
  iss?: string;
  sub?: string;
  aud?: string | string[];
  exp?: number;
  scope?: string;
  [claim: string]: unknown;
}

/** What `oauth.principal` is told beside the claims. */
export interface OAuthPrincipalContext {
  /** The issuer that vouched for the token, as configured. */
  issuer: OAuthIssuerOptions;
  /** `jwt`: a signed access token; `introspection`: an opaque one the issuer said is active. */
  kind: 'jwt' | 'introspection';
}

/** Maps a verified token's claims to the principal it acts for; `null` refuses it (401). */
export type OAuthPrincipalMapper = (claims: OAuthClaims, context: OAuthPrincipalContext) => Principal | null | Promise<Principal | null>;

export interface QuotasOptions {
  /** Servers per account. @default 1000 */
  serversPerAccount?: number;
  /** Webhooks per account; every event's fan-out reads them all. @default 100 */
  webhooksPerAccount?: number;
}

export interface ToolCallsOptions {
  /** Keep the calls' `arguments` and/or MCP results with their records (`GET /tool-calls/{id}`). @default { arguments: false, results: false } */
  record?: ToolCallRecording;
  /** Waits between retry attempts (servers with `retry.enabled`). @default { baseMs: 200, maxMs: 10000 } */
  backoff?: BackoffOptions;
  /** A kept http connection (or websocket without heartbeat) unused this long is closed, in ms. @default 60000 */
  idleMs?: number;
  /** A call's attempts and the waits between them together never take longer, in ms. @default 120000 */
  maxTotalMs?: number;
  /** Tool calls in flight at once per account in this process; beyond, 429 `RATE_LIMITED` with `scope: "concurrency"`. @default 32 */
  maxConcurrentPerAccount?: number;
  /**
   * Days a tool-call record is kept (fractions allowed): older ones are removed with their listing entries by a
   * background sweep, so `GET /tool-calls` totals stay exact. @default 30
   */
  retentionDays?: number;
  /** How often the expiry sweep runs, in ms. @default 60000 */
  expirySweepMs?: number;
}

/** The rate limiter's options in a fleet: its counters are the store's `rateLimits`. */
export type FleetRateLimitOptions = Omit<RateLimitOptions, 'store'>;

/**
 * The options `createFleet` checked, with their defaults filled in, one group per capability: `fleet.ts` reads these
 * and never `FleetOptions`. Misconfiguration throws here, at start, with a TypeError naming the option.
 */
export interface ResolvedOptions {
  store: FleetStore;
  /** The fleet made `store` itself (none was passed): `fleet.close()` closes it. */
  ownsStore: boolean;
  prefix: string;
  bodyLimit: number;
  now: () => number;
  logger: Logger | undefined;
  onError: ErrorHook;
  authenticate: Authenticate | undefined;
  /** `undefined`: no dashboard. */
  dashboard: DashboardOptions | undefined;
  openapi: boolean;
  secrets: { current: Uint8Array | string | undefined; previous: readonly (Uint8Array | string)[] | undefined };
  requireTls: boolean;
  allowPrivateNetworks: boolean | readonly string[];
  maxUpstreamBytes: number;
  listings: ResolvedListings;
  prober: Prober | undefined;
  stdio: ResolvedStdio;
  toolCalls: ResolvedToolCalls;
  /** `undefined`: the monitor is off. */
  monitor: HealthMonitorOptions | undefined;
  health: ResolvedHealth;
  /** `undefined`: rate limits are off. */
  rateLimit: FleetRateLimitOptions | undefined;
  /** `undefined`: webhooks are off. Their own options are checked by `createWebhooks`. */
  webhooks: WebhooksOptions | undefined;
  /** `undefined`: the MCP endpoint is off. Its own options are checked by `McpEndpoint`. */
  mcp: McpEndpointOptions | undefined;
  quotas: Required<QuotasOptions>;
  /** `undefined`: API keys only. */
  oauth: ResolvedOAuth | undefined;
}

export interface ResolvedStdio {
  commands: readonly StdioCommandRule[];
  /** Who stdio children run as: a uid per account, or one shared user. */
  users: StdioUserMode;
  envAllow: readonly string[] | undefined;
  path: string;
  homes: string;
  maxProcessesPerAccount: number | undefined;
  idleTimeoutMs: number | undefined;
  wrap: NonNullable<FleetOptions['stdio']>['wrap'];
}

export interface ResolvedToolCalls extends Omit<ToolCallsOptions, 'retentionDays' | 'expirySweepMs'> {
  retentionMs: number;
  expirySweepMs: number;
}

/**
 * An upstream's failure (502/504) is the upstream's, not a fault of this process: one line with the code and our
 * message. Anything else (500, 503) keeps its cause, stack included, for whoever has to fix it.
 */
const defaultOnError: ErrorHook = (error, { requestId, method, path }) => {
  const line = `[mcp-fleet] ${error.code} on ${method} ${path} (${requestId})`;
  if (error.category !== 'request') console.error(`${line}: ${error.message}`);
  else console.error(line, error.cause ?? '');
};

/** 5xx and background failures through the embedder's logger: the cause only of our own failures (500, 503). */
function loggedError(logger: Logger): ErrorHook {
  return (error, { requestId, method, path }) => {
    const fields = { code: error.code, status: error.status, request_id: requestId, method, path };
    logger.error(error.category === 'request' && error.cause !== undefined ? { ...fields, err: error.cause } : fields, error.message);
  };
}

export function resolveOptions(options: FleetOptions): ResolvedOptions {
  refuseRemovedOptions(options);
  if (options.store !== undefined && !options.store.records.throwOnErrors) {
    throw new TypeError(
      'mcp-fleet: create the Keyv of the store\'s `records` with `{ throwOnErrors: true }`; otherwise a storage outage would look like missing data.',
    );
  }
  const now = options.now ?? Date.now;
  if (options.openapi !== undefined && typeof options.openapi !== 'boolean') throw new TypeError(`createFleet: openapi must be true or false, got ${typeof options.openapi}`);
  const maxUpstreamBytes = checkOption('maxUpstreamBytes', options.maxUpstreamBytes ?? DEFAULT_MAX_UPSTREAM_BYTES, positiveInteger);
  const resolved: Omit<ResolvedOptions, 'store' | 'ownsStore'> = {
    prefix: normalizePrefix(options.prefix ?? '/v1'),
    bodyLimit: checkOption('bodyLimit', options.bodyLimit ?? DEFAULT_BODY_LIMIT, positiveInteger),
    now,
    logger: options.logger,
    onError: options.onError ?? (options.logger === undefined ? defaultOnError : loggedError(options.logger)),
    authenticate: options.authenticate,
    dashboard: options.dashboard ? (options.dashboard === true ? {} : options.dashboard) : undefined,
    openapi: options.openapi ?? true,
    secrets: { current: options.encryptionKey, previous: options.previousKeys },
    requireTls: options.requireTls ?? false,
    allowPrivateNetworks: options.allowPrivateNetworks ?? false,
    maxUpstreamBytes,
    listings: resolveListings(options.listings, maxUpstreamBytes),
    prober: options.prober,
    stdio: resolveStdio(options.stdio ?? {}),
    toolCalls: resolveToolCalls(options.toolCalls ?? {}),
    health: resolveHealth(options.health),
    monitor: options.monitor === undefined || options.monitor === false ? undefined : options.monitor === true ? {} : options.monitor,
    rateLimit: options.rateLimit === false ? undefined : (options.rateLimit ?? {}),
    webhooks: options.webhooks === false ? undefined : (options.webhooks ?? {}),
    mcp: options.mcp === false ? undefined : (options.mcp ?? {}),
    oauth: options.oauth === undefined ? undefined : resolveOAuth(options.oauth),
    quotas: {
      serversPerAccount: checkOption('quotas.serversPerAccount', options.quotas?.serversPerAccount ?? DEFAULT_SERVERS_PER_ACCOUNT, positiveInteger),
      webhooksPerAccount: checkOption('quotas.webhooksPerAccount', options.quotas?.webhooksPerAccount ?? MAX_WEBHOOKS_PER_ACCOUNT, positiveInteger),
    },
  };
  // Last, once every option passed: a refused configuration leaves nothing open.
  return { ...resolved, store: options.store ?? createMemoryStore({ now }), ownsStore: options.store === undefined };
}

/**
 * The storage options before the store seam, each with what to write instead (docs/upgrading.md). A JavaScript
 * caller, or one past a cast, would otherwise have them ignored without a word and the fleet would run in memory.
 */
function refuseRemovedOptions(options: FleetOptions): void {
  const given = options as Record<string, unknown>;
  const removed: [boolean, string][] = [
    [given.storage !== undefined, '`storage` is gone: pass `store: createMemoryStore({ records: yourKeyv })`, or the store of your package (`createSqliteStore`, `createRedisStore`) as `store`'],
    [given.index !== undefined, '`index` is gone: the index is the store\'s (`store.index`); pass the whole store as `store`'],
    [given.keyPrefix !== undefined, '`keyPrefix` is gone: it is the store\'s, e.g. `store: createMemoryStore({ records, keyPrefix })` or `createRedisStore({ url, keyPrefix })`'],
    [
      typeof options.rateLimit === 'object' && (options.rateLimit as Record<string, unknown>).store !== undefined,
      '`rateLimit.store` is gone: rate-limit counters are the store\'s (`store.rateLimits`); pass the whole store as `store`',
    ],
    [
      typeof options.monitor === 'object' && (options.monitor as Record<string, unknown>).leases !== undefined,
      '`monitor.leases` is gone: leases are the store\'s (`store.leases`); pass the whole store as `store`',
    ],
  ];
  for (const [present, message] of removed) if (present) throw new TypeError(`mcp-fleet: ${message} (docs/upgrading.md)`);
}

function resolveStdio(stdio: NonNullable<FleetOptions['stdio']>): ResolvedStdio {
  return {
    commands: stdio.commands ?? [],
    users: resolveStdioUsers(stdio),
    envAllow: stdio.envAllow,
    path: stdio.path ?? DEFAULT_STDIO_PATH,
    homes: stdio.homes ?? defaultHomes(),
    maxProcessesPerAccount: stdio.maxProcessesPerAccount,
    idleTimeoutMs: stdio.idleTimeoutMs,
    wrap: stdio.wrap,
  };
}

function resolveToolCalls(toolCalls: ToolCallsOptions): ResolvedToolCalls {
  const { retentionDays = 30, expirySweepMs = 60_000, ...rest } = toolCalls;
  return {
    ...rest,
    retentionMs: checkOption('toolCalls.retentionDays', retentionDays, positiveNumber) * 86_400_000,
    expirySweepMs: checkOption('toolCalls.expirySweepMs', expirySweepMs, positiveNumber),
  };
}

/**
 * Who stdio children run as: running as root, a uid per account from `uids` unless one `user` is named; otherwise
 * (no switch possible, or one user named) a shared user, for one account unless `sharedUser`.
 */
function resolveStdioUsers(stdio: NonNullable<FleetOptions['stdio']>): StdioUserMode {
  const allowMany = stdio.sharedUser ?? false;
  if (typeof allowMany !== 'boolean') throw new TypeError('mcp-fleet: stdio.sharedUser must be true or false');
  const uids = stdio.uids ?? { from: 200_000, to: 265_535 };
  const from = checkOption('stdio.uids.from', uids.from, integerIn(1, 4_294_967_294));
  const to = checkOption('stdio.uids.to', uids.to, integerIn(from, 4_294_967_294));
  if (process.getuid?.() !== 0) return { kind: 'shared', user: undefined, allowMany };
  if (stdio.user === undefined) return { kind: 'per-account', from, to };
  return { kind: 'shared', user: resolveStdioUser(stdio.user), allowMany };
}

/** The one uid and gid stdio children switch to (root only); `undefined` for `false`: root itself. */
function resolveStdioUser(user: string | { uid: number; gid: number } | false): { uid: number; gid: number } | undefined {
  if (user === false) return undefined;
  if (typeof user === 'object') {
    if (!Number.isInteger(user.uid) || !Number.isInteger(user.gid) || user.uid < 0 || user.gid < 0) {
      throw new TypeError('mcp-fleet: stdio.user must be a user name or { uid, gid } of non-negative integers');
    }
    return user;
  }
  const entry = passwdEntry(user);
  if (entry === undefined) {
    throw new TypeError(
      `mcp-fleet: stdio.user "${user}" is not in /etc/passwd: create that user, name another one (reference server: MCP_FLEET_STDIO_USER), or set stdio.user to false to run stdio servers as root`,
    );
  }
  return entry;
}

function passwdEntry(name: string): { uid: number; gid: number } | undefined {
  let passwd: string;
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && uid !== undefined && gid !== undefined && /^\d+$/.test(uid) && /^\d+$/.test(gid)) return { uid: Number(uid), gid: Number(gid) };
  }
  return undefined;
}

export function normalizePrefix(prefix: string): string {
  const trimmed = prefix.trim().replace(/\/+$/, '');
  if (trimmed === '') return '';
  // "." and ".." segments never reach the handler (URL parsing resolves them), so such a prefix would match nothing.
  if (!/^(\/(?!\.{1,2}(?:\/|$))[A-Za-z0-9._~-]+)+$/.test(trimmed.startsWith('/') ? trimmed : `/${trimmed}`)) {
    throw new TypeError(`mcp-fleet: prefix must be a path like "/v1", got ${JSON.stringify(prefix)}`);
  }
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}
