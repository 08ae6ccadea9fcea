import type { HealthOptions, OAuthIssuerOptions, OAuthOptions } from '@mcp-fleet/core';
import { SCOPES, type Scope, TIERS, type Tier } from '@mcp-fleet/core/scopes';

/** The embedded default store (MCP_FLEET_STORE unset) is `sqlite` at `EMBEDDED_STORE_PATH`. */
export type StoreConfig = { kind: 'memory' } | { kind: 'sqlite'; path: string } | { kind: 'redis'; url: string } | { kind: 'postgres'; url: string; schema?: string };

export interface ServerConfig {
  host: string;
  port: number;
  store: StoreConfig;
  /**
   * From an entry's optional `:scopes=`, `:tools=`, `:prompts=` and `:resources=` parts (`|`-separated): the key's
   * scopes (absent: every scope, but `servers:write` when it has an allowlist) and allowlists (absent: no list).
   */
  apiKeys: { account: string; tier: Tier; secret: string; scopes?: Scope[]; tools?: string[]; prompts?: string[]; resources?: string[] }[];
  allowPrivateNetworks: boolean;
  stdioCommands: string[];
  /** One user for every account's stdio servers (root only); unset: each account its own uid (`stdio.uids`). */
  stdioUser: string | undefined;
  /** `MCP_FLEET_STDIO_UIDS`, `from-to`: the range accounts' stdio uids are drawn from; unset: the library's default. */
  stdioUids: { from: number; to: number } | undefined;
  /** `MCP_FLEET_STDIO_SHARED_USER=1`: several accounts' stdio servers may share one user (`stdio.sharedUser`). */
  stdioSharedUser: boolean;
  /** `MCP_FLEET_STDIO_HOMES`: the folder of the stdio users' homes; unset: beside the store file, or the library's default. */
  stdioHomes: string | undefined;
  /** `MCP_FLEET_STDIO_PATH`: the `PATH` of stdio children; unset: the library's fixed default. */
  stdioPath: string | undefined;
  webhookRetryBaseMs: number;
  /** `MCP_FLEET_RATE_LIMITS=off`: no rate limits at all, for local development. */
  rateLimits: boolean;
  /** Background health probes every this many ms; 0 turns them off. */
  healthIntervalMs: number;
  /** The fleet's `health` option from `MCP_FLEET_HEALTH_*` and `MCP_FLEET_BREAKER_*` (docs/health.md); only what was set. */
  health: HealthOptions;
  /** Reverse proxies in front of the server whose `X-Forwarded-For` is trusted (`MCP_FLEET_TRUST_PROXY`). */
  trustProxy: number;
  /** `MCP_FLEET_ENCRYPTION_KEY`: the key secrets at rest are encrypted under (base64 of 32 bytes). */
  encryptionKey: string | undefined;
  /** `MCP_FLEET_PREVIOUS_ENCRYPTION_KEYS`: keys that still decrypt, comma-separated. */
  previousEncryptionKeys: string[];
  /** `MCP_FLEET_METRICS=1`: Prometheus metrics at `/metrics`, beside `/healthz`. */
  metrics: boolean;
  /** `MCP_FLEET_METRICS_TOKEN`: the bearer token `/metrics` asks of a scraper; required off loopback. */
  metricsToken: string | undefined;
  /**
   * OAuth access tokens accepted beside API keys (docs/oauth.md): `MCP_FLEET_OAUTH_ISSUER` with `MCP_FLEET_OAUTH_AUDIENCE`
   * and `MCP_FLEET_OAUTH_ACCOUNT_CLAIM`, and/or the issuers of `MCP_FLEET_OAUTH_ISSUERS` (JSON); `undefined`: keys only.
   */
  oauth: OAuthOptions | undefined;
}

export const EMBEDDED_STORE_PATH = '.mcp-fleet/fleet.sqlite';

/** A configuration error: the message names the variable, never its value (it may hold a secret). */
export class ConfigError extends Error {}

function parseStore(value: string | undefined, postgresSchema?: string): StoreConfig {
  if (value === undefined || value === '') return { kind: 'sqlite', path: EMBEDDED_STORE_PATH };
  if (value === 'memory://') return { kind: 'memory' };
  if (value.startsWith('sqlite://')) {
    const path = value.slice('sqlite://'.length);
    if (path === '') throw new ConfigError('MCP_FLEET_STORE: sqlite:// needs a file path, e.g. sqlite://./data/fleet.sqlite');
    return { kind: 'sqlite', path };
  }
  if (/^rediss?:\/\//.test(value)) {
    // Parsed here so that a malformed URL stops the start with a message that does not quote it (URL's would).
    if (!URL.canParse(value)) throw new ConfigError('MCP_FLEET_STORE: not a valid redis:// URL; expected redis://[:password@]host[:port][/db]');
    return { kind: 'redis', url: value };
  }
  if (/^(postgres|postgresql):\/\//.test(value)) {
    if (!URL.canParse(value)) throw new ConfigError('MCP_FLEET_STORE: not a valid postgres:// URL; expected postgres://user[:password]@host[:port]/database');
    const schema = postgresSchema?.trim() || undefined;
    if (schema !== undefined && !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
      throw new ConfigError('MCP_FLEET_POSTGRES_SCHEMA: expected a plain identifier (letters, digits, _; up to 63)');
    }
    return { kind: 'postgres', url: value, ...(schema !== undefined && { schema }) };
  }
  throw new ConfigError('MCP_FLEET_STORE: expected memory://, sqlite://PATH, redis://… or postgres://…');
}

/**
 * An entry's optional last parts, in any order, each at most once: `account:tier:secret:scopes=servers:read|tool_calls:read`,
 * `:tools=search__*|files__read_*`, `:prompts=…`, `:resources=…`; the values are `|`-separated.
 */
const ENTRY_OPTIONS = ['scopes', 'tools', 'prompts', 'resources'] as const;
type EntryOption = (typeof ENTRY_OPTIONS)[number];
const ENTRY_SHAPE = 'account:tier:secret, optionally followed by :scopes=<scope>|<scope>…, :tools=<glob>|<glob>…, :prompts=<glob>|…, :resources=<glob>|…';

/**
 * Splits the options off the end of an entry's remainder (`secret:tools=…:scopes=…`): the last `:name=` of a known name
 * starts the last option, whose value runs to the end; then again on what is left. A secret and a value may hold
 * colons (scopes do: `tool_calls:read`); neither may hold `:scopes=`, `:tools=`, `:prompts=` or `:resources=`.
 */
function splitOptions(remainder: string, entry: number): { secret: string; options: Partial<Record<EntryOption, string[]>> } {
  const options: Partial<Record<EntryOption, string[]>> = {};
  let rest = remainder;
  for (;;) {
    let last: { at: number; name: EntryOption } | undefined;
    for (const name of ENTRY_OPTIONS) {
      const at = rest.lastIndexOf(`:${name}=`);
      if (at !== -1 && (last === undefined || at > last.at)) last = { at, name };
    }
    if (last === undefined) return { secret: rest, options };
    if (options[last.name] !== undefined) throw new ConfigError(`MCP_FLEET_API_KEYS: entry ${entry} gives :${last.name}= twice`);
    options[last.name] = rest.slice(last.at + last.name.length + 2).split('|');
    rest = rest.slice(0, last.at);
  }
}

function parseApiKeys(value: string | undefined): ServerConfig['apiKeys'] {
  if (value === undefined || value.trim() === '') return [];
  return value.split(',').map((triple, i) => {
    const [account, tier, ...rest] = triple.trim().split(':');
    // A secret may hold colons; the options are what follows the known `:name=`s. fleet.keys.register judges them.
    const { secret, options } = splitOptions(rest.join(':'), i + 1);
    if (!account || !tier || !secret) throw new ConfigError(`MCP_FLEET_API_KEYS: entry ${i + 1} must be ${ENTRY_SHAPE}`);
    if (!(TIERS as readonly string[]).includes(tier)) {
      // The tier is not echoed: a comma inside a secret splits it, and a piece of it may land here.
      throw new ConfigError(`MCP_FLEET_API_KEYS: entry ${i + 1} has an unknown tier; expected free, pro or enterprise`);
    }
    const scopes = options.scopes;
    if (scopes !== undefined) {
      // Named here, with the list of scopes: the key store's own message would say only that the enum failed.
      const unknown = scopes.filter((scope) => !(SCOPES as readonly string[]).includes(scope));
      if (unknown.length > 0 || scopes.length === 0) {
        throw new ConfigError(`MCP_FLEET_API_KEYS: entry ${i + 1} has an unknown scope in :scopes=; expected some of ${SCOPES.join(', ')}`);
      }
    }
    return {
      account,
      tier: tier as Tier,
      secret,
      ...(scopes !== undefined && { scopes: scopes as Scope[] }),
      ...(options.tools !== undefined && { tools: options.tools }),
      ...(options.prompts !== undefined && { prompts: options.prompts }),
      ...(options.resources !== undefined && { resources: options.resources }),
    };
  });
}

function parseFlag(name: string, value: string | undefined): boolean {
  if (value === undefined || value === '' || value === '0') return false;
  if (value === '1') return true;
  throw new ConfigError(`${name}: expected 1 or 0`);
}

/** The host names and addresses only this machine reaches. */
function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * `/metrics` names every account's servers and tools (ids and tool names as labels): reachable beyond this machine, it
 * asks for a token. At least 16 characters, so it is not guessed.
 */
function parseMetricsToken(metrics: boolean, host: string, value: string | undefined): string | undefined {
  const token = value?.trim() || undefined;
  if (token !== undefined && token.length < 16) throw new ConfigError('MCP_FLEET_METRICS_TOKEN: expected at least 16 characters (openssl rand -hex 24 makes one)');
  if (metrics && token === undefined && !isLoopbackHost(host)) {
    throw new ConfigError(
      `MCP_FLEET_METRICS=1 with HOST=${host} would show every account's server ids and tool names to anyone who reaches the port: set MCP_FLEET_METRICS_TOKEN (the scraper sends it as a bearer token), or keep HOST on loopback`,
    );
  }
  return token;
}

function parseRateLimits(value: string | undefined): boolean {
  if (value === undefined || value === '' || value === 'on') return true;
  if (value === 'off') return false;
  throw new ConfigError('MCP_FLEET_RATE_LIMITS: expected on or off');
}

function parseInteger(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined || value === '') return fallback;
  // Digits only: Number() would also take ' ' (as 0), '0x50' and '1e3'.
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name}: expected an integer from ${min} to ${max}`);
  return n;
}

/** A decimal from 0 to below 1 (`0.25`): digits and one point only, as parseInteger reads integers. */
function parseShare(name: string, value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = /^\d+(\.\d+)?$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= 0 && n < 1)) throw new ConfigError(`${name}: expected a share from 0 to below 1, like 0.1 (one request in ten)`);
  return n;
}

/** An integer variable that is only passed on when set, so the fleet's own default holds otherwise. */
function parseOptional(name: string, value: string | undefined, min: number, max: number): number | undefined {
  return value === undefined || value === '' ? undefined : parseInteger(name, value, 0, min, max);
}

/**
 * The health rules and the circuit breaker (docs/health.md): `MCP_FLEET_HEALTH_DEGRADED_LATENCY_MS`,
 * `MCP_FLEET_HEALTH_DEGRADED_ERROR_RATE`, `MCP_FLEET_HEALTH_ANNOUNCE_AFTER`, `MCP_FLEET_BREAKER_FAILURES` (`0`: no
 * breaker) and `MCP_FLEET_BREAKER_BACKOFF_MS`. Unset variables leave the fleet's defaults.
 */
function parseHealth(env: NodeJS.ProcessEnv): HealthOptions {
  const degradedLatencyMs = parseOptional('MCP_FLEET_HEALTH_DEGRADED_LATENCY_MS', env.MCP_FLEET_HEALTH_DEGRADED_LATENCY_MS, 1, 600_000);
  const degradedErrorRate = parseShare('MCP_FLEET_HEALTH_DEGRADED_ERROR_RATE', env.MCP_FLEET_HEALTH_DEGRADED_ERROR_RATE);
  const announceAfter = parseOptional('MCP_FLEET_HEALTH_ANNOUNCE_AFTER', env.MCP_FLEET_HEALTH_ANNOUNCE_AFTER, 1, 100);
  const failures = parseOptional('MCP_FLEET_BREAKER_FAILURES', env.MCP_FLEET_BREAKER_FAILURES, 0, 1000);
  const backoffMs = parseOptional('MCP_FLEET_BREAKER_BACKOFF_MS', env.MCP_FLEET_BREAKER_BACKOFF_MS, 1000, 600_000);
  if (failures === 0 && backoffMs !== undefined) {
    throw new ConfigError('MCP_FLEET_BREAKER_BACKOFF_MS: the breaker is off (MCP_FLEET_BREAKER_FAILURES=0); unset one of the two');
  }
  const breaker = failures === 0 ? false : failures === undefined && backoffMs === undefined ? undefined : { ...(failures !== undefined && { failures }), ...(backoffMs !== undefined && { backoffMs }) };
  return {
    ...(degradedLatencyMs !== undefined && { degradedLatencyMs }),
    ...(degradedErrorRate !== undefined && { degradedErrorRate }),
    ...(announceAfter !== undefined && { announceAfter }),
    ...(breaker !== undefined && { breaker }),
  };
}

function parseHealthInterval(value: string | undefined): number {
  const ms = parseInteger('MCP_FLEET_HEALTH_INTERVAL_MS', value, 60_000, 0, 86_400_000);
  if (ms !== 0 && ms < 1000) throw new ConfigError('MCP_FLEET_HEALTH_INTERVAL_MS: expected 0 (off) or at least 1000');
  return ms;
}

/** `from-to`, two uids, for MCP_FLEET_STDIO_UIDS. */
function parseUidRange(value: string | undefined): { from: number; to: number } | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const match = /^\s*(\d{1,10})\s*-\s*(\d{1,10})\s*$/.exec(value);
  const from = Number(match?.[1]);
  const to = Number(match?.[2]);
  if (match === null || from < 1 || to < from || to > 4_294_967_294) {
    throw new ConfigError('MCP_FLEET_STDIO_UIDS: expected a range of uids like 200000-265535 (from at least 1, to not below from)');
  }
  return { from, to };
}

/** A base64 key of 32 bytes; the message names the variable, never the value. */
function parseKey(name: string, value: string): string {
  const text = value.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text) || Buffer.from(text, 'base64').length !== 32) {
    throw new ConfigError(`${name}: expected the base64 of 32 random bytes, e.g. from \`openssl rand -base64 32\``);
  }
  return text;
}

function parseKeys(name: string, value: string | undefined): string[] {
  if (value === undefined || value.trim() === '') return [];
  return value.split(',').map((key, i) => parseKey(`${name} (entry ${i + 1})`, key));
}

const ISSUER_FIELDS = new Set(['issuer', 'audiences', 'jwksUri', 'algorithms', 'introspection', 'accountClaim', 'accountPrefix', 'tier']);
const CLAIM_NAME = /^[\w.:/-]{1,100}$/;

/** An http(s) URL; the message names the variable, and quotes no value (a URL may carry credentials). */
function parseUrl(name: string, value: string): string {
  const text = value.trim();
  if (!URL.canParse(text) || !/^https?:$/.test(new URL(text).protocol)) throw new ConfigError(`${name}: expected an http(s) URL`);
  return text;
}

/**
 * The `oauth` option from MCP_FLEET_OAUTH_ISSUER (+ _AUDIENCE, comma-separated, + _ACCOUNT_CLAIM), MCP_FLEET_OAUTH_ISSUERS
 * (a JSON array of issuers as `oauth.issuers` takes them) and MCP_FLEET_OAUTH_RESOURCE. The fleet checks the rest at
 * start; its message is then prefixed with the variables (main.ts).
 */
function parseOAuth(env: NodeJS.ProcessEnv): OAuthOptions | undefined {
  const accountClaim = env.MCP_FLEET_OAUTH_ACCOUNT_CLAIM?.trim() || 'sub';
  if (!CLAIM_NAME.test(accountClaim)) throw new ConfigError('MCP_FLEET_OAUTH_ACCOUNT_CLAIM: expected a claim name (letters, digits, _ . : / -), e.g. sub');
  const issuers: OAuthIssuerOptions[] = [];
  const resource = env.MCP_FLEET_OAUTH_RESOURCE?.trim() ? parseUrl('MCP_FLEET_OAUTH_RESOURCE', env.MCP_FLEET_OAUTH_RESOURCE) : undefined;
  const audiences = (env.MCP_FLEET_OAUTH_AUDIENCE ?? '')
    .split(',')
    .map((audience) => audience.trim())
    .filter((audience) => audience !== '');
  if (env.MCP_FLEET_OAUTH_ISSUER?.trim()) {
    if (audiences.length === 0 && resource === undefined) {
      throw new ConfigError('MCP_FLEET_OAUTH_AUDIENCE: set it with MCP_FLEET_OAUTH_ISSUER: the audience your identity provider writes in the tokens\' aud (comma-separated for several)');
    }
    issuers.push({ issuer: parseUrl('MCP_FLEET_OAUTH_ISSUER', env.MCP_FLEET_OAUTH_ISSUER), audiences, accountClaim });
  } else if (audiences.length > 0) throw new ConfigError('MCP_FLEET_OAUTH_AUDIENCE: set MCP_FLEET_OAUTH_ISSUER too (or use MCP_FLEET_OAUTH_ISSUERS)');
  if (env.MCP_FLEET_OAUTH_ISSUERS?.trim()) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(env.MCP_FLEET_OAUTH_ISSUERS);
    } catch {
      throw new ConfigError('MCP_FLEET_OAUTH_ISSUERS: expected a JSON array of issuers, e.g. [{"issuer":"https://idp.example.com/","audiences":["https://fleet.example.com/v1/mcp"]}]');
    }
    if (!Array.isArray(parsed) || parsed.length === 0) throw new ConfigError('MCP_FLEET_OAUTH_ISSUERS: expected a non-empty JSON array of issuers');
    parsed.forEach((entry: unknown, i) => {
      const at = `MCP_FLEET_OAUTH_ISSUERS: entry ${i + 1}`;
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new ConfigError(`${at} must be an object with issuer and audiences`);
      const unknown = Object.keys(entry).filter((field) => !ISSUER_FIELDS.has(field));
      if (unknown.length > 0) throw new ConfigError(`${at} has unknown fields (${unknown.map((field) => field.slice(0, 40)).join(', ')}); expected some of ${[...ISSUER_FIELDS].join(', ')}`);
      const issuer = entry as Partial<OAuthIssuerOptions>;
      if (typeof issuer.issuer !== 'string') throw new ConfigError(`${at} needs "issuer": the issuer identifier (a URL)`);
      parseUrl(`${at} "issuer"`, issuer.issuer);
      if (!Array.isArray(issuer.audiences) || !issuer.audiences.every((audience) => typeof audience === 'string' && audience !== '')) {
        throw new ConfigError(`${at} needs "audiences": a list of the aud values to accept`);
      }
      issuers.push({ accountClaim, ...(issuer as OAuthIssuerOptions) });
    });
  }
  if (issuers.length === 0) {
    if (resource !== undefined) throw new ConfigError('MCP_FLEET_OAUTH_RESOURCE: set MCP_FLEET_OAUTH_ISSUER (or MCP_FLEET_OAUTH_ISSUERS) too');
    return undefined;
  }
  return { issuers, ...(resource !== undefined && { resource }) };
}

/** Reads the variables of docs/configuration.md "The reference server". */
export function readConfig(env: NodeJS.ProcessEnv): ServerConfig {
  const host = env.HOST || '127.0.0.1';
  const metrics = parseFlag('MCP_FLEET_METRICS', env.MCP_FLEET_METRICS);
  return {
    trustProxy: parseInteger('MCP_FLEET_TRUST_PROXY', env.MCP_FLEET_TRUST_PROXY, 0, 0, 10),
    host,
    port: parseInteger('PORT', env.PORT, 3000, 0, 65535),
    store: parseStore(env.MCP_FLEET_STORE, env.MCP_FLEET_POSTGRES_SCHEMA),
    apiKeys: parseApiKeys(env.MCP_FLEET_API_KEYS),
    allowPrivateNetworks: parseFlag('MCP_FLEET_ALLOW_PRIVATE_NETWORKS', env.MCP_FLEET_ALLOW_PRIVATE_NETWORKS),
    stdioCommands: (env.MCP_FLEET_STDIO_COMMANDS ?? '')
      .split(',')
      .map((c) => c.trim())
      .filter((c) => c !== ''),
    stdioUser: env.MCP_FLEET_STDIO_USER?.trim() || undefined,
    stdioUids: parseUidRange(env.MCP_FLEET_STDIO_UIDS),
    stdioSharedUser: parseFlag('MCP_FLEET_STDIO_SHARED_USER', env.MCP_FLEET_STDIO_SHARED_USER),
    stdioHomes: env.MCP_FLEET_STDIO_HOMES?.trim() || undefined,
    stdioPath: env.MCP_FLEET_STDIO_PATH?.trim() || undefined,
    healthIntervalMs: parseHealthInterval(env.MCP_FLEET_HEALTH_INTERVAL_MS),
    health: parseHealth(env),
    rateLimits: parseRateLimits(env.MCP_FLEET_RATE_LIMITS),
    encryptionKey: env.MCP_FLEET_ENCRYPTION_KEY?.trim() ? parseKey('MCP_FLEET_ENCRYPTION_KEY', env.MCP_FLEET_ENCRYPTION_KEY) : undefined,
    previousEncryptionKeys: parseKeys('MCP_FLEET_PREVIOUS_ENCRYPTION_KEYS', env.MCP_FLEET_PREVIOUS_ENCRYPTION_KEYS),
    metrics,
    metricsToken: parseMetricsToken(metrics, host, env.MCP_FLEET_METRICS_TOKEN),
    oauth: parseOAuth(env),
    webhookRetryBaseMs: parseInteger('MCP_FLEET_WEBHOOK_RETRY_BASE_MS', env.MCP_FLEET_WEBHOOK_RETRY_BASE_MS, 5000, 1, 86_400_000),
  };
}
