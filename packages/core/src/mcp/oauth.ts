import { constants, createHash, type KeyObject, randomUUID, sign } from 'node:crypto';
import {
  ClientCredentialsProvider,
  PrivateKeyJwtProvider,
  discoverOAuthServerInfo,
  extractWWWAuthenticateParams,
  fetchToken,
  InsecureTokenEndpointError,
  OAuthError,
  resourceUrlFromServerUrl,
  selectResourceURL,
  type AuthorizationServerMetadata,
  type FetchLike,
  type OAuthProtectedResourceMetadata,
} from '@modelcontextprotocol/client';
import { FleetError, type UpstreamError } from '../errors/fleet-error.js';
import { algorithmsFor, jwkKeyId, type JwtAlgorithm, readPrivateKey } from '../registry/private-key.js';
import { networkFailure } from './errors.js';

/** The oauth2 authentication of a server configuration (docs/http-api.md "Server"): a client secret or a private key. */
export interface OAuth2Credentials {
  client_id: string;
  client_secret?: string | undefined;
  /** `private_key_jwt` (RFC 7523): a PEM or JWK private key that signs the client assertion. */
  private_key?: string | undefined;
  /** The `kid` of the assertion's header. @default the JWK's `kid`, else none */
  key_id?: string | undefined;
  /** @default by the key: RS256 (RSA), ES256/ES384/ES512 (EC by curve), EdDSA (Ed25519) */
  algorithm?: JwtAlgorithm | undefined;
  token_url?: string | undefined;
  scope?: string | undefined;
}

/** An access token as cached: `expiresAt` is Unix ms, absent when the token endpoint gave no `expires_in`. */
export interface CachedToken {
  accessToken: string;
  expiresAt?: number;
}

/**
 * Where client-credentials tokens live between probes and calls. One per fleet, shared by every server:
 * entries are keyed by a hash of endpoint, token URL, client id, secret and scope, so a changed secret never
 * reuses an old token and the secret itself is never a key.
 */
export interface TokenCache {
  get(key: string): CachedToken | undefined;
  set(key: string, token: CachedToken): void;
  delete(key: string): void;
}

export interface MemoryTokenCacheOptions {
  /** Most tokens kept; the oldest is dropped first. @default 10_000 */
  maxEntries?: number;
}

/** The in-process `TokenCache`. */
export class MemoryTokenCache implements TokenCache {
  private readonly entries = new Map<string, CachedToken>();
  private readonly maxEntries: number;

  constructor(options: MemoryTokenCacheOptions = {}) {
    this.maxEntries = options.maxEntries ?? 10_000;
  }

  get(key: string): CachedToken | undefined {
    return this.entries.get(key);
  }

  set(key: string, token: CachedToken): void {
    this.entries.delete(key);
    this.entries.set(key, token);
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
  }

  delete(key: string): void {
    this.entries.delete(key);
  }
}

/** A token is refreshed this long before it expires: a tenth of its lifetime, at most a minute. */
const MAX_EXPIRY_MARGIN_MS = 60_000;

export interface ClientCredentialsOptions {
  /** The MCP server's endpoint (`http(s)://` or `ws(s)://`): discovery starts there and it is the token's resource. */
  endpoint: string;
  credentials: OAuth2Credentials;
  /** fetch for discovery and the token request; must not follow redirects. */
  fetch: FetchLike;
  cache: TokenCache;
  now?: () => number;
}

/** Token requests in flight per cache and key, so concurrent probes of one server share one request. */
const inFlightByCache = new WeakMap<TokenCache, Map<string, Promise<CachedToken>>>();

/**
 * Client-credentials tokens for one server: from the cache while they are fresh, else from the token endpoint
 * (`token_url`, or discovered as MCP authorization prescribes: protected-resource metadata, then
 * authorization-server metadata). The SDK does discovery, resource selection and the token request; this adds
 * the expiry-aware cache its `ClientCredentialsProvider` lacks (that one keeps a token until a 401).
 */
export class ClientCredentialsSource {
  private readonly key: string;
  private readonly now: () => number;
  /** What the server's latest 401 said; undefined before one. */
  private challenge: { resourceMetadataUrl?: URL; scope?: string } | undefined;
  /** Whether the latest discovery failed (no protected-resource metadata found where it looked). */
  private discoveryMissed = false;

  constructor(private readonly options: ClientCredentialsOptions) {
    const { endpoint, credentials } = options;
    this.key = createHash('sha256')
      .update(
        JSON.stringify([
          endpoint,
          credentials.token_url ?? '',
          credentials.client_id,
          credentials.client_secret ?? '',
          credentials.private_key ?? '',
          credentials.key_id ?? '',
          credentials.algorithm ?? '',
          credentials.scope ?? '',
        ]),
      )
      .digest('base64url');
    this.now = options.now ?? Date.now;
  }

  /** A token valid for a while yet, fetching one if the cache has none. */
  async token(): Promise<string> {
    const cached = this.options.cache.get(this.key);
    if (cached !== undefined && (cached.expiresAt === undefined || this.now() < cached.expiresAt)) return cached.accessToken;
    let inFlight = inFlightByCache.get(this.options.cache);
    if (inFlight === undefined) {
      inFlight = new Map();
      inFlightByCache.set(this.options.cache, inFlight);
    }
    let pending = inFlight.get(this.key);
    if (pending === undefined) {
      const requests = inFlight;
      pending = this.fetchToken().finally(() => requests.delete(this.key));
      requests.set(this.key, pending);
    }
    return (await pending).accessToken;
  }

  /** Drops the cached token: the server refused it, so the next `token()` fetches a new one. */
  invalidate(): void {
    this.options.cache.delete(this.key);
  }

  /**
   * For a request that may go without a token: `undefined` while discovery found no protected-resource metadata at
   * the well-known URLs and the server has not yet answered 401, whose `WWW-Authenticate` may name it
   * (`resource_metadata`, RFC 9728); `challenged` then records it and the retry discovers with it.
   */
  async tokenOrChallenge(): Promise<string | undefined> {
    try {
      return await this.token();
    } catch (error) {
      if (this.discoveryMissed && this.challenge === undefined) return undefined;
      throw error;
    }
  }

  /**
   * The server answered 401, or 403 `insufficient_scope`: its `WWW-Authenticate` `resource_metadata` (where discovery
   * starts) and `scope` (asked for with the configured one) are used from now on, and the refused token is dropped.
   */
  challenged(response: Response): void {
    const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(response);
    this.challenge = { ...(resourceMetadataUrl === undefined ? {} : { resourceMetadataUrl }), ...(scope === undefined ? {} : { scope }) };
    this.invalidate();
  }

  private async fetchToken(): Promise<CachedToken> {
    const { credentials, fetch } = this.options;
    const serverUrl = httpUrlOf(this.options.endpoint);
    const startedAt = this.now();
    let tokens;
    try {
      let endpoint: TokenEndpoint;
      if (credentials.token_url === undefined) {
        this.discoveryMissed = false;
        endpoint = await discover(serverUrl, fetch, this.challenge?.resourceMetadataUrl).catch((error: unknown) => {
          this.discoveryMissed = true;
          throw error;
        });
      } else endpoint = configured(credentials.token_url);
      const { authorizationServerUrl, metadata, resourceMetadata } = endpoint;
      // The configured scope with the one the server's challenge asked for, else every scope its metadata supports.
      const scope = unionOfScopes(credentials.scope, this.challenge?.scope) ?? resourceMetadata?.scopes_supported?.join(' ');
      const provider = clientProvider(credentials, scope, metadata.issuer);
      // The RFC 8707 resource: the protected-resource metadata's, once the SDK has checked it names this server, sent as
      // that metadata writes it (a URL object would add a `/` to a resource without a path).
      const selected = await selectResourceURL(serverUrl, provider, resourceMetadata);
      const resource = selected === undefined ? resourceUrlFromServerUrl(serverUrl) : (resourceMetadata?.resource ?? selected);
      tokens = await fetchToken(provider, authorizationServerUrl, { metadata, resource, scope, fetchFn: fetch });
    } catch (error) {
      throw tokenFailure(error);
    }
    const token: CachedToken = { accessToken: tokens.access_token };
    if (typeof tokens.expires_in === 'number' && tokens.expires_in > 0) {
      const lifetime = tokens.expires_in * 1000;
      token.expiresAt = startedAt + lifetime - Math.min(MAX_EXPIRY_MARGIN_MS, lifetime / 10);
    }
    this.options.cache.set(this.key, token);
    return token;
  }
}

/**
 * The SDK's client-credentials provider for the configured client authentication: `ClientCredentialsProvider`
 * (client_secret_basic or _post, as the server's metadata supports), or `PrivateKeyJwtProvider` (private_key_jwt)
 * whose assertion `signAssertion` makes. `expectedIssuer` is the issuer fetchToken checks the credentials against:
 * the one just discovered or configured.
 */
function clientProvider(credentials: OAuth2Credentials, scope: string | undefined, expectedIssuer: string) {
  const common = { clientId: credentials.client_id, clientName: 'mcp-fleet', expectedIssuer, ...(scope === undefined ? {} : { scope }) };
  if (credentials.private_key === undefined) return new ClientCredentialsProvider({ ...common, clientSecret: credentials.client_secret ?? '' });
  const key = readPrivateKey(credentials.private_key);
  if (key === undefined) throw new FleetError('UPSTREAM_AUTH_FAILED', { message: 'The private_key of this server cannot be read as a PEM or JWK private key; set it again.' });
  const algorithm = credentials.algorithm ?? algorithmsFor(key)[0];
  if (algorithm === undefined) throw new FleetError('UPSTREAM_AUTH_FAILED', { message: 'The private_key of this server is of a type no JWT algorithm signs with; use an RSA, EC or Ed25519 key.' });
  const keyId = credentials.key_id ?? jwkKeyId(credentials.private_key);
  const provider = new PrivateKeyJwtProvider({ ...common, privateKey: credentials.private_key, algorithm });
  // The SDK's signer (jose) sets no `kid` and reads PKCS#8 PEM only; node:crypto signs with any PEM or JWK, with the kid.
  provider.addClientAuthentication = async (_headers, params, url, metadata) => {
    const audience = metadata?.issuer ?? String(url);
    params.set('client_assertion', signAssertion({ clientId: credentials.client_id, audience, key, algorithm, ...(keyId === undefined ? {} : { keyId }) }));
    params.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
  };
  return provider;
}

/** Lifetime of a client assertion (RFC 7523: short; the SDK's default). */
const ASSERTION_LIFETIME_S = 300;

const base64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

const HASH_OF: Readonly<Record<string, string>> = { '256': 'sha256', '384': 'sha384', '512': 'sha512' };

/**
 * A JWT client assertion (RFC 7523 section 2.2): `iss` and `sub` the client id, `aud` the authorization server's
 * issuer, a `jti` of its own, five minutes of life; signed as JWS `algorithm` with `key`, `kid` in the header when known.
 */
export function signAssertion(options: { clientId: string; audience: string; key: KeyObject; algorithm: JwtAlgorithm; keyId?: string; now?: number }): string {
  const { clientId, audience, key, algorithm, keyId } = options;
  const issuedAt = Math.floor((options.now ?? Date.now()) / 1000);
  const header = { alg: algorithm, typ: 'JWT', ...(keyId === undefined ? {} : { kid: keyId }) };
  const claims = { iss: clientId, sub: clientId, aud: audience, iat: issuedAt, exp: issuedAt + ASSERTION_LIFETIME_S, jti: randomUUID() };
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
  let signature: Buffer;
  if (algorithm === 'EdDSA') signature = sign(null, Buffer.from(input), key);
  else {
    const hash = HASH_OF[algorithm.slice(2)] as string;
    if (algorithm.startsWith('PS')) signature = sign(hash, Buffer.from(input), { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST });
    else if (algorithm.startsWith('ES')) signature = sign(hash, Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
    else signature = sign(hash, Buffer.from(input), key);
  }
  return `${input}.${base64url(signature)}`;
}

/** Space-separated scopes of both, each once; undefined when neither names any. */
function unionOfScopes(...lists: (string | undefined)[]): string | undefined {
  const scopes = new Set(lists.flatMap((list) => list?.split(' ').filter((scope) => scope !== '') ?? []));
  return scopes.size === 0 ? undefined : [...scopes].join(' ');
}

/**
 * Whether a 403 is an `insufficient_scope` challenge (RFC 6750) naming a scope; if so `source` records it, so the
 * next token asks for that scope too.
 */
export function stepUp(source: ClientCredentialsSource, response: Response): boolean {
  if (response.status !== 403) return false;
  const { error, scope } = extractWWWAuthenticateParams(response);
  if (error !== 'insufficient_scope' || scope === undefined) return false;
  source.challenged(response);
  return true;
}

/**
 * fetch that answers a 403 `insufficient_scope` (RFC 6750) once per request: a token with the scope the challenge
 * names is fetched and the request sent again with it; a second refusal is the answer (no step-up loop).
 */
export function withScopeStepUp(fetch: FetchLike, source: ClientCredentialsSource): FetchLike {
  return async (url, init) => {
    const response = await fetch(url, init);
    if (!stepUp(source, response)) return response;
    await response.body?.cancel().catch(() => {});
    const headers = new Headers(init?.headers);
    headers.set('Authorization', `Bearer ${await source.token()}`);
    return fetch(url, { ...init, headers });
  };
}

/** Discovery and the token request speak HTTP even for a WebSocket server: `wss://h/p` → `https://h/p`. */
function httpUrlOf(endpoint: string): URL {
  const url = new URL(endpoint);
  if (url.protocol === 'ws:') url.protocol = 'http:';
  else if (url.protocol === 'wss:') url.protocol = 'https:';
  return url;
}

interface TokenEndpoint {
  authorizationServerUrl: string;
  metadata: AuthorizationServerMetadata;
  resourceMetadata?: OAuthProtectedResourceMetadata;
}

async function discover(serverUrl: URL, fetch: FetchLike, resourceMetadataUrl: URL | undefined): Promise<TokenEndpoint> {
  const info = await discoverOAuthServerInfo(serverUrl, { fetchFn: fetch, ...(resourceMetadataUrl === undefined ? {} : { resourceMetadataUrl }) });
  if (info.authorizationServerMetadata?.token_endpoint === undefined) {
    throw new FleetError('UPSTREAM_AUTH_FAILED', { message: 'OAuth discovery found no token endpoint for this server; configure token_url.' });
  }
  return {
    authorizationServerUrl: info.authorizationServerUrl,
    metadata: info.authorizationServerMetadata,
    ...(info.resourceMetadata === undefined ? {} : { resourceMetadata: info.resourceMetadata }),
  };
}

/** A configured `token_url` as the metadata the SDK's token request reads: only `token_endpoint` matters there. */
function configured(tokenUrl: string): TokenEndpoint {
  const issuer = new URL(tokenUrl).origin;
  return {
    authorizationServerUrl: issuer,
    metadata: {
      issuer,
      token_endpoint: tokenUrl,
      authorization_endpoint: tokenUrl,
      response_types_supported: [],
      grant_types_supported: ['client_credentials'],
    },
  };
}

/** A token-endpoint failure as an upstream failure whose message names the token endpoint and quotes nothing. */
function tokenFailure(error: unknown): UpstreamError {
  const network = networkFailure(error, 'the token endpoint');
  if (network !== undefined) return network;
  const auth = (message: string) => new FleetError('UPSTREAM_AUTH_FAILED', { message, cause: error });
  if (error instanceof InsecureTokenEndpointError) return auth('The token endpoint must use https.');
  if (error instanceof OAuthError) return auth('The token endpoint did not issue a token for these client credentials.');
  return auth('Could not obtain an OAuth token: discovery or the token request failed.');
}
