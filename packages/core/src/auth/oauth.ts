import { createHash } from 'node:crypto';
import type { JWTVerifyGetKey } from 'jose';
import type { GuardedFetch } from '../net/guarded-fetch.js';
import type { OAuthClaims, OAuthIssuerOptions, OAuthOptions, OAuthPrincipalContext, OAuthPrincipalMapper } from '../options.js';
import { checkOption, nonNegativeNumber, positiveInteger } from '../util/options.js';
import { ACCOUNT_PATTERN, type Principal, SCOPES, type Scope, TIERS } from './scopes.js';

/** The JWS algorithms accepted unless an issuer lists its own: asymmetric ones only. */
export const DEFAULT_OAUTH_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
/** What a 401 on the MCP endpoint asks for: what `tools/list` and `tools/call` need. */
export const DEFAULT_OAUTH_SCOPES = ['tool_calls:read', 'tool_calls:write'] as const;

/** Why a token was refused: on the `mcp-fleet:auth` channel, never the token. */
export type OAuthRefusal =
  | 'malformed'
  | 'unknown_issuer'
  | 'invalid_signature'
  | 'unknown_key'
  | 'invalid_claims'
  | 'expired'
  | 'audience'
  | 'algorithm'
  | 'keys_unavailable'
  | 'inactive'
  | 'introspection_unavailable'
  /** An opaque token from a client address that has spent its budget of failed credentials: not introspected. */
  | 'address_limited'
  | 'no_principal';

export type OAuthOutcome = { principal: Principal; issuer: string } | { refused: OAuthRefusal; issuer?: string };

/** `oauth` as checked at start. */
export interface ResolvedOAuth {
  issuers: readonly ResolvedIssuer[];
  /** The mount's public URL, without a trailing slash; `undefined`: made from each request. */
  resource: string | undefined;
  scopesSupported: readonly string[];
  principal: OAuthPrincipalMapper;
  clockToleranceSeconds: number;
  timeoutMs: number;
  cacheMaxAgeMs: number;
  cooldownMs: number;
}

interface ResolvedIssuer {
  options: OAuthIssuerOptions;
  algorithms: string[];
  introspectionCacheMs: number;
}

const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/;

type Jose = typeof import('jose');
let loading: Promise<Jose> | undefined;
/**
 * jose, loaded at the first token: it is published as ES modules only, which the CommonJS build reaches through
 * `import()` on every Node it supports (a `require` would need Node 20.19's require(esm)).
 */
const jose = (): Promise<Jose> => (loading ??= import('jose'));
const MAX_TOKEN_LENGTH = 16_384;
const ALWAYS = async () => true;

/**
 * The default `oauth.principal`: the issuer's `accountClaim` (`sub`) after its `accountPrefix` as the account
 * (refused unless it is 1–64 of letters, digits, `_`, `.` and `-`), the fleet scopes named by the `scope` claim (space-separated) or `scp` (a list,
 * as Okta and Entra write it), the issuer's `tier`, and the token's `exp` as the principal's expiry. No allowlist.
 */
export function defaultOAuthPrincipal(claims: OAuthClaims, context: OAuthPrincipalContext): Principal | null {
  const claimed = claims[context.issuer.accountClaim ?? 'sub'];
  if (typeof claimed !== 'string') return null;
  const account = (context.issuer.accountPrefix ?? '') + claimed;
  if (!ACCOUNT_PATTERN.test(account)) return null;
  return {
    account,
    tier: context.issuer.tier ?? 'free',
    scopes: fleetScopesOf(claims),
    expiresAt: typeof claims.exp === 'number' ? new Date(claims.exp * 1000).toISOString() : null,
  };
}

/** The fleet scopes a token's `scope` (space-separated) or `scp` (a list or a string) names; others are ignored. */
export function fleetScopesOf(claims: OAuthClaims): Scope[] {
  const raw = typeof claims.scope === 'string' ? claims.scope.split(' ') : Array.isArray(claims.scp) ? claims.scp : typeof claims.scp === 'string' ? claims.scp.split(' ') : [];
  return [...new Set(raw.filter((scope): scope is Scope => (SCOPES as readonly unknown[]).includes(scope)))];
}

/** Checks `oauth` at start: a TypeError naming the field for anything that cannot work. */
export function resolveOAuth(options: OAuthOptions): ResolvedOAuth {
  const fail = (message: string): never => {
    throw new TypeError(`mcp-fleet: oauth.${message} (docs/oauth.md)`);
  };
  if (typeof options !== 'object' || options === null) fail('must be an object with `issuers`');
  if (!Array.isArray(options.issuers) || options.issuers.length === 0 || options.issuers.length > 20) fail('issuers must list 1 to 20 issuers');
  const resource = options.resource === undefined ? undefined : httpUrl(options.resource, 'resource', fail).replace(/\/+$/, '');
  if (resource !== undefined && (resource.includes('?') || resource.includes('#'))) fail('resource must be a URL without a query or fragment');
  const seen = new Set<string>();
  const issuers = options.issuers.map((issuer, i): ResolvedIssuer => {
    const at = `issuers[${i}]`;
    if (typeof issuer !== 'object' || issuer === null) fail(`${at} must be an object`);
    if (typeof issuer.issuer !== 'string' || issuer.issuer.length === 0) fail(`${at}.issuer must be the issuer identifier (a URL)`);
    httpUrl(issuer.issuer, `${at}.issuer`, fail);
    if (seen.has(issuer.issuer)) fail(`${at}.issuer repeats ${issuer.issuer}`);
    seen.add(issuer.issuer);
    if (!Array.isArray(issuer.audiences) || !issuer.audiences.every((audience) => typeof audience === 'string' && audience.length > 0)) {
      fail(`${at}.audiences must be a list of audience strings`);
    }
    if (issuer.audiences.length === 0 && resource === undefined) fail(`${at}.audiences is empty and oauth.resource is not set: no token could ever pass; name the audience your identity provider writes in \`aud\``);
    if (issuer.jwksUri !== undefined) httpUrl(issuer.jwksUri, `${at}.jwksUri`, fail);
    const algorithms = issuer.algorithms === undefined ? [...DEFAULT_OAUTH_ALGORITHMS] : [...issuer.algorithms];
    if (algorithms.length === 0 || algorithms.some((alg) => typeof alg !== 'string' || alg.length === 0 || alg.toLowerCase() === 'none')) {
      fail(`${at}.algorithms must list JWS algorithms; "none" is never accepted`);
    }
    if (issuer.accountClaim !== undefined && (typeof issuer.accountClaim !== 'string' || issuer.accountClaim.length === 0)) fail(`${at}.accountClaim must be a claim name`);
    if (issuer.accountPrefix !== undefined && (typeof issuer.accountPrefix !== 'string' || !/^[\w.-]{1,32}$/.test(issuer.accountPrefix))) {
      fail(`${at}.accountPrefix must be 1 to 32 letters, digits, _, . or -`);
    }
    if (issuer.tier !== undefined && !(TIERS as readonly string[]).includes(issuer.tier)) fail(`${at}.tier must be one of ${TIERS.join(', ')}`);
    let introspectionCacheMs = 60_000;
    const { introspection } = issuer;
    if (introspection !== undefined) {
      if (typeof introspection !== 'object' || introspection === null) fail(`${at}.introspection must be { endpoint, clientId, clientSecret }`);
      httpUrl(introspection.endpoint, `${at}.introspection.endpoint`, fail);
      if (typeof introspection.clientId !== 'string' || introspection.clientId.length === 0) fail(`${at}.introspection.clientId must be set`);
      if (typeof introspection.clientSecret !== 'string' || introspection.clientSecret.length === 0) fail(`${at}.introspection.clientSecret must be set`);
      introspectionCacheMs = checkOption(`oauth.${at}.introspection.cacheMs`, introspection.cacheMs ?? 60_000, nonNegativeNumber);
    }
    return { options: issuer, algorithms, introspectionCacheMs };
  });
  const scopesSupported = options.scopesSupported === undefined ? [...DEFAULT_OAUTH_SCOPES] : [...options.scopesSupported];
  if (!scopesSupported.every((scope) => typeof scope === 'string' && /^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope))) fail('scopesSupported must list scope tokens (printable, no space, quote or backslash)');
  if (options.principal !== undefined && typeof options.principal !== 'function') fail('principal must be a function of (claims, context)');
  return {
    issuers,
    resource,
    scopesSupported,
    principal: options.principal ?? defaultOAuthPrincipal,
    clockToleranceSeconds: checkOption('oauth.clockToleranceSeconds', options.clockToleranceSeconds ?? 30, nonNegativeNumber),
    timeoutMs: checkOption('oauth.jwks.timeoutMs', options.jwks?.timeoutMs ?? 5000, positiveInteger),
    cacheMaxAgeMs: checkOption('oauth.jwks.cacheMaxAgeMs', options.jwks?.cacheMaxAgeMs ?? 600_000, positiveInteger),
    cooldownMs: checkOption('oauth.jwks.cooldownMs', options.jwks?.cooldownMs ?? 30_000, nonNegativeNumber),
  };
}

/** Two issuers whose default principals could name the same account for two different subjects, by index; `undefined`: none. */
function sharedAccountSpace(issuers: readonly ResolvedIssuer[]): [number, number] | undefined {
  const seen = new Map<string, number>();
  for (const [i, { options }] of issuers.entries()) {
    const space = `${options.accountPrefix ?? ''}\u0000${options.accountClaim ?? 'sub'}`;
    const first = seen.get(space);
    if (first !== undefined) return [first, i];
    seen.set(space, i);
  }
  return undefined;
}

function httpUrl(value: unknown, name: string, fail: (message: string) => never): string {
  if (typeof value !== 'string') return fail(`${name} must be an http(s) URL`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return fail(`${name} must be an http(s) URL, got ${JSON.stringify(value.slice(0, 200))}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') fail(`${name} must be an http(s) URL`);
  if (url.username !== '' || url.password !== '') fail(`${name} must not carry credentials`);
  return value;
}

/** What the resource server needs from the fleet. */
export interface OAuthDeps {
  /** The fleet's outgoing fetch: the address guard and `maxUpstreamBytes` hold for every fetch of ours. */
  fetch: GuardedFetch;
  /** Tells the operator why an issuer's tokens cannot be checked (never a token or a secret). */
  warn: (message: string) => void;
  now: () => number;
}

/** A JWKS source that remembers its failures: after one, no fetch for `cooldownMs` (every token refused meanwhile). */
interface IssuerKeys {
  getKey: JWTVerifyGetKey | undefined;
  /** The jwks_uri being discovered. */
  discovering: Promise<JWTVerifyGetKey | undefined> | undefined;
  failedAt: number;
}

/**
 * The fleet as an OAuth 2.1 resource server: verifies the access tokens of the configured issuers (JWTs by their
 * issuer's JWKS, opaque tokens by RFC 7662 introspection) and maps them to principals. Fails closed: any doubt (a key
 * set that cannot be read, an introspection endpoint that does not answer) refuses the token.
 */
export class OAuthResourceServer {
  private readonly byIssuer = new Map<string, ResolvedIssuer>();
  private readonly keys = new Map<string, IssuerKeys>();
  /** Active introspection answers by the token's hash: bounded, each kept `introspectionCacheMs` at most. */
  private readonly introspected = new Map<string, { claims: OAuthClaims; issuer: ResolvedIssuer; until: number }>();
  /** When each warning was last given, so that a failing identity provider is reported once per cooldown, not per request. */
  private readonly warned = new Map<string, number>();

  constructor(
    readonly options: ResolvedOAuth,
    private readonly deps: OAuthDeps,
  ) {
    for (const issuer of options.issuers) this.byIssuer.set(issuer.options.issuer, issuer);
    const shared = options.principal === defaultOAuthPrincipal ? sharedAccountSpace(options.issuers) : undefined;
    if (shared !== undefined) {
      deps.warn(
        `mcp-fleet: oauth.issuers[${shared[0]}] and oauth.issuers[${shared[1]}] take the account from the same claim without an accountPrefix: ` +
          'a subject of one provider acts for the same account as that subject of the other. Unless they share one directory, set accountPrefix on each (or their own accountClaim, or oauth.principal) (docs/oauth.md)',
      );
    }
  }

  /** The authorization servers listed in the metadata documents. */
  get issuers(): string[] {
    return this.options.issuers.map((issuer) => issuer.options.issuer);
  }

  /**
   * Whether `token` is something this server can check: a JWT, or anything but the fleet's own key format (`mcpf_…`)
   * when an issuer introspects opaque tokens. Otherwise it is no access token (a wrong API key), and never looked at.
   */
  checks(token: string): boolean {
    if (JWT_SHAPE.test(token)) return true;
    // The fleet's own key format is never an identity provider's token: a wrong key costs no introspection request.
    return !token.startsWith('mcpf_') && this.options.issuers.some((issuer) => issuer.options.introspection !== undefined);
  }

  /**
   * The principal `token` acts for, or why it is refused. `canonical`: the resource URLs of the request's path that a
   * token's `aud` may name beside the issuer's `audiences` (empty without `oauth.resource`). `mayAsk`: asked before
   * an opaque token that is not in the cache is sent to an introspection endpoint; `false` refuses it unasked
   * (`address_limited`: the handler's client address has spent its budget of failed credentials).
   */
  async verify(token: string, canonical: readonly string[], mayAsk: () => Promise<boolean> = ALWAYS): Promise<OAuthOutcome> {
    if (token.length > MAX_TOKEN_LENGTH) return { refused: 'malformed' };
    if (JWT_SHAPE.test(token)) return this.verifyJwt(token, canonical);
    return this.introspect(token, canonical, mayAsk);
  }

  private async verifyJwt(token: string, canonical: readonly string[]): Promise<OAuthOutcome> {
    const { decodeJwt, errors, jwtVerify } = await jose();
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      return { refused: 'malformed' };
    }
    const issuer = typeof iss === 'string' ? this.byIssuer.get(iss) : undefined;
    if (issuer === undefined) return { refused: 'unknown_issuer' };
    const name = issuer.options.issuer;
    const getKey = await this.keySet(issuer);
    if (getKey === undefined) return { refused: 'keys_unavailable', issuer: name };
    let claims: OAuthClaims;
    try {
      const verified = await jwtVerify(token, getKey, {
        issuer: name,
        audience: [...issuer.options.audiences, ...canonical],
        algorithms: issuer.algorithms,
        clockTolerance: this.options.clockToleranceSeconds,
        currentDate: new Date(this.deps.now()),
        requiredClaims: ['exp'],
      });
      claims = verified.payload as OAuthClaims;
    } catch (error) {
      const refused = refusalOf(error, errors);
      if (refused === 'keys_unavailable') this.keySetFailed(issuer, error);
      return { refused, issuer: name };
    }
    return this.principalOf(claims, issuer, 'jwt');
  }

  /** An opaque token: asked of each issuer with an introspection endpoint, in order; the first that knows it answers. */
  private async introspect(token: string, canonical: readonly string[], mayAsk: () => Promise<boolean>): Promise<OAuthOutcome> {
    const candidates = this.options.issuers.filter((issuer) => issuer.options.introspection !== undefined);
    if (candidates.length === 0) return { refused: 'malformed' };
    const hash = createHash('sha256').update(token).digest('base64url');
    const now = this.deps.now();
    const cached = this.introspected.get(hash);
    if (cached !== undefined && cached.until > now) return this.principalOf(cached.claims, cached.issuer, 'introspection');
    if (cached !== undefined) this.introspected.delete(hash);
    // Each guess of an opaque token would cost the provider a request: none once the guesser may fail no more.
    if (!(await mayAsk())) return { refused: 'address_limited' };
    let unavailable: ResolvedIssuer | undefined;
    for (const issuer of candidates) {
      const answer = await this.ask(issuer, token);
      if (answer === undefined) {
        unavailable = issuer;
        continue;
      }
      if (answer.active !== true) continue;
      const claims = answer as OAuthClaims;
      const refused = this.checkIntrospected(claims, issuer, canonical);
      if (refused !== undefined) return { refused, issuer: issuer.options.issuer };
      const until = Math.min(now + issuer.introspectionCacheMs, typeof claims.exp === 'number' ? claims.exp * 1000 : Number.POSITIVE_INFINITY);
      if (until > now) {
        if (this.introspected.size >= 10_000) this.introspected.clear();
        this.introspected.set(hash, { claims, issuer, until });
      }
      return this.principalOf(claims, issuer, 'introspection');
    }
    return unavailable === undefined ? { refused: 'inactive' } : { refused: 'introspection_unavailable', issuer: unavailable.options.issuer };
  }

  /** An active introspection answer is held to the JWT's rules where it says anything: `iss`, `aud`, `exp`, `nbf`. */
  private checkIntrospected(claims: OAuthClaims, issuer: ResolvedIssuer, canonical: readonly string[]): OAuthRefusal | undefined {
    const now = this.deps.now() / 1000;
    const skew = this.options.clockToleranceSeconds;
    if (claims.iss !== undefined && claims.iss !== issuer.options.issuer) return 'invalid_claims';
    if (typeof claims.exp === 'number' && claims.exp + skew <= now) return 'expired';
    if (typeof claims.nbf === 'number' && claims.nbf - skew > now) return 'invalid_claims';
    const accepted = new Set([...issuer.options.audiences, ...canonical]);
    const audiences = claims.aud === undefined ? [] : Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    // An answer without `aud` passes: the issuer's introspection endpoint answers only for its own resource servers.
    if (audiences.length > 0 && !audiences.some((audience) => accepted.has(audience))) return 'audience';
    return undefined;
  }

  /** One RFC 7662 request, bounded in time and bytes; `undefined` when the endpoint did not answer usefully. */
  private async ask(issuer: ResolvedIssuer, token: string): Promise<Record<string, unknown> | undefined> {
    const introspection = issuer.options.introspection as NonNullable<OAuthIssuerOptions['introspection']>;
    const credentials = Buffer.from(`${encodeURIComponent(introspection.clientId)}:${encodeURIComponent(introspection.clientSecret)}`).toString('base64');
    try {
      const response = await this.deps.fetch(introspection.endpoint, {
        method: 'POST',
        headers: { authorization: `Basic ${credentials}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      if (response.status !== 200) {
        void response.body?.cancel().catch(() => {});
        throw new Error(`it answered HTTP ${response.status}`);
      }
      const answer: unknown = await response.json();
      if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) throw new Error('its answer is not a JSON object');
      return answer as Record<string, unknown>;
    } catch (error) {
      this.warnOnce(`introspection:${issuer.options.issuer}`, `mcp-fleet: the introspection endpoint of ${issuer.options.issuer} could not be asked (${describe(error, this.options.timeoutMs)}): its opaque tokens are refused until it answers; check oauth.issuers[].introspection and allowPrivateNetworks (reference server: MCP_FLEET_ALLOW_PRIVATE_NETWORKS)`);
      return undefined;
    }
  }

  private async principalOf(claims: OAuthClaims, issuer: ResolvedIssuer, kind: OAuthPrincipalContext['kind']): Promise<OAuthOutcome> {
    const principal = await this.options.principal(claims, { issuer: issuer.options, kind });
    if (principal === null || principal === undefined) return { refused: 'no_principal', issuer: issuer.options.issuer };
    return { principal, issuer: issuer.options.issuer };
  }

  /** The issuer's key set: discovered once (its metadata's `jwks_uri`) unless configured; `undefined` while it cannot be read. */
  private keySet(issuer: ResolvedIssuer): JWTVerifyGetKey | undefined | Promise<JWTVerifyGetKey | undefined> {
    const name = issuer.options.issuer;
    let entry = this.keys.get(name);
    if (entry === undefined) this.keys.set(name, (entry = { getKey: undefined, discovering: undefined, failedAt: Number.NEGATIVE_INFINITY }));
    // After a failure, nothing is fetched for a cooldown: every token of the issuer is refused meanwhile.
    if (this.deps.now() - entry.failedAt < this.options.cooldownMs) return undefined;
    if (entry.getKey !== undefined) return entry.getKey;
    const held = entry;
    held.discovering ??= Promise.all([this.jwksUriOf(issuer), jose()])
      .then(([uri, { createRemoteJWKSet, customFetch }]) => {
        held.getKey = createRemoteJWKSet(new URL(uri), {
          timeoutDuration: this.options.timeoutMs,
          cooldownDuration: this.options.cooldownMs,
          cacheMaxAge: this.options.cacheMaxAgeMs,
          [customFetch]: (url, init) => this.deps.fetch(url, init),
        });
        return held.getKey;
      })
      .catch((error: unknown) => {
        this.keySetFailed(issuer, error);
        return undefined;
      })
      .finally(() => {
        held.discovering = undefined;
      });
    return held.discovering;
  }

  private keySetFailed(issuer: ResolvedIssuer, error: unknown): void {
    const name = issuer.options.issuer;
    const entry = this.keys.get(name);
    if (entry !== undefined) entry.failedAt = this.deps.now();
    this.warnOnce(
      `jwks:${name}`,
      `mcp-fleet: the signing keys of ${name} could not be read (${describe(error, this.options.timeoutMs)}): its tokens are refused for oauth.jwks.cooldownMs (${this.options.cooldownMs} ms), then fetched again; check oauth.issuers[].jwksUri, maxUpstreamBytes and allowPrivateNetworks (reference server: MCP_FLEET_ALLOW_PRIVATE_NETWORKS)`,
    );
  }

  /** The configured `jwksUri`, or the `jwks_uri` of the issuer's RFC 8414 metadata, else of its OpenID configuration. */
  private async jwksUriOf(issuer: ResolvedIssuer): Promise<string> {
    if (issuer.options.jwksUri !== undefined) return issuer.options.jwksUri;
    const name = issuer.options.issuer;
    const url = new URL(name);
    const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
    const candidates = [`${url.origin}/.well-known/oauth-authorization-server${path}`, `${name.replace(/\/+$/, '')}/.well-known/openid-configuration`];
    let last: unknown;
    for (const candidate of candidates) {
      try {
        const response = await this.deps.fetch(candidate, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(this.options.timeoutMs) });
        if (response.status !== 200) {
          void response.body?.cancel().catch(() => {});
          last = new Error(`${candidate} answered HTTP ${response.status}`);
          continue;
        }
        const metadata = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown } | null;
        // RFC 8414 §3.3: the metadata must name the issuer it was fetched for, or it is not that issuer's.
        if (metadata?.issuer !== name) throw new Error(`${candidate} names another issuer`);
        if (typeof metadata.jwks_uri !== 'string') throw new Error(`${candidate} has no jwks_uri`);
        new URL(metadata.jwks_uri);
        return metadata.jwks_uri;
      } catch (error) {
        last = error;
      }
    }
    throw last;
  }

  private warnOnce(key: string, message: string): void {
    const now = this.deps.now();
    const last = this.warned.get(key);
    if (last !== undefined && now - last < Math.max(this.options.cooldownMs, 1000)) return;
    this.warned.set(key, now);
    this.deps.warn(message);
  }
}

/** A verification failure as a refusal reason; a key set that could not be read is the identity provider's trouble. */
function refusalOf(error: unknown, joseErrors: Jose['errors']): OAuthRefusal {
  if (error instanceof joseErrors.JWTExpired) return 'expired';
  if (error instanceof joseErrors.JWTClaimValidationFailed) return error.claim === 'aud' ? 'audience' : 'invalid_claims';
  if (error instanceof joseErrors.JWKSNoMatchingKey) return 'unknown_key';
  if (error instanceof joseErrors.JOSEAlgNotAllowed) return 'algorithm';
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 'invalid_signature';
  if (error instanceof joseErrors.JWKSTimeout || error instanceof joseErrors.JWKSInvalid || error instanceof joseErrors.JWKSMultipleMatchingKeys) return 'keys_unavailable';
  if (error instanceof joseErrors.JWTInvalid || error instanceof joseErrors.JWSInvalid || error instanceof joseErrors.JOSENotSupported) return 'malformed';
  // A failed fetch (refused by the guard, cut off past maxUpstreamBytes, not 200): the key set is unavailable.
  if (error instanceof joseErrors.JOSEError && error.code === 'ERR_JOSE_GENERIC') return 'keys_unavailable';
  if (error instanceof TypeError || (error instanceof Error && error.name === 'AbortError')) return 'keys_unavailable';
  return 'invalid_signature';
}

/** What went wrong with a fetch, for the operator: never a URL's query, a header or a body. */
function describe(error: unknown, timeoutMs: number): string {
  const causes: unknown[] = [];
  for (let at: unknown = error; at !== undefined && causes.length < 5; at = (at as { cause?: unknown } | null)?.cause) causes.push(at);
  for (const cause of causes) {
    const name = (cause as { name?: unknown; code?: unknown } | null)?.name;
    const code = (cause as { code?: unknown } | null)?.code;
    if (name === 'TimeoutError' || code === 'ERR_JWKS_TIMEOUT') return `no answer within ${timeoutMs} ms (oauth.jwks.timeoutMs)`;
    if (code === 'UPSTREAM_RESPONSE_TOO_LARGE') return 'the answer is larger than maxUpstreamBytes';
    // The guard's refusals and undici's failures name themselves (`DESTINATION_NOT_ALLOWED`, `ECONNREFUSED`…).
    if (typeof code === 'string' && /^[A-Z][A-Z_]+$/.test(code) && cause instanceof Error) return `${code}: ${cause.message.slice(0, 300)}`;
  }
  const first = causes[0];
  return first instanceof Error ? first.message.slice(0, 300) : 'failed';
}
