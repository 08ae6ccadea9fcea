/**
 * A real OpenID provider on loopback for the OAuth tests: `oidc-provider` (panva's certified implementation), issuing
 * JWT access tokens for RFC 8707 resource indicators (the audience is the resource asked for), with dynamic client
 * registration, PKCE, the authorization-code flow, client credentials, opaque tokens with introspection and
 * revocation, custom claims and scopes, and signing keys that rotate at runtime. The login and consent pages are JSON endpoints the test answers with plain HTTP
 * requests (`authorize`), so no browser is needed.
 *
 * Each test file starts its own instance on port 0 (`startIdentityProvider`) and stops it in `afterAll`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';
import Provider, { type Adapter, type AdapterPayload, type Configuration, type JWKS, type KoaContextWithOIDC } from 'oidc-provider';

/** Claims a token carries beside the standard ones (e.g. `{ account: 'acme' }`). */
export type ExtraClaims = Record<string, unknown>;

export interface IdentityProviderOptions {
  /**
   * Scopes the resource servers accept (the token's `scope` is what was asked for, within these).
   * @default ['tool_calls:read', 'tool_calls:write', 'servers:read', 'servers:write'] (the fleet's own)
   */
  scopes?: readonly string[];
  /**
   * Extra claims of each end user, by the subject the test logs in as (`authorize({ subject })`); they go into the
   * access tokens issued for that user. More can be set later with `setClaims`.
   * @default {}
   */
  users?: Record<string, ExtraClaims>;
  /** Lifetime of access tokens, in seconds. @default 600 */
  accessTokenTtl?: number;
}

/** A token endpoint's answer. */
export interface TokenSet {
  access_token: string;
  token_type: string;
  expires_in: number;
  scope?: string;
  refresh_token?: string;
  id_token?: string;
}

/** A client made through dynamic client registration (RFC 7591). */
export interface RegisteredClient {
  client_id: string;
  client_secret?: string;
  [field: string]: unknown;
}

export interface MintOptions {
  /** The resource indicator: the token's `aud`. */
  resource: string;
  /** Space-separated scopes. @default every scope of `scopes` */
  scope?: string;
  /** Claims the token carries (e.g. `{ account: 'acme' }`); `sub` is the client's id. @default {} */
  claims?: ExtraClaims;
  /** `opaque`: a reference token, only the introspection endpoint can tell what it is. @default 'jwt' */
  format?: 'jwt' | 'opaque';
}

export interface AuthorizeOptions {
  /** Who logs in (the token's `sub`); their claims come from `users` / `setClaims`. */
  subject: string;
  /** `false` answers the consent step with a refusal (`access_denied`). @default true */
  consent?: boolean;
}

export interface IdentityProvider {
  /** The issuer identifier, `http://127.0.0.1:{port}`: the tokens' `iss`. */
  readonly issuer: string;
  /** Where its signing keys are published. */
  readonly jwksUri: string;
  /** The kid of the key that signs now. */
  readonly signingKid: string;
  /** Registers a client through the registration endpoint, as an agent would. */
  register(metadata: Record<string, unknown>): Promise<RegisteredClient>;
  /** A client-credentials access token for `resource`, from a client registered for the purpose. */
  mint(options: MintOptions): Promise<TokenSet>;
  /** Revokes a token `mint` issued (RFC 7009, as the client it was issued to). */
  revoke(accessToken: string): Promise<void>;
  /**
   * Plays the user in a browser: follows `authorizationUrl` through the provider's login and consent steps, answering
   * them as `subject`, and resolves with the URL the provider finally redirects to (the client's `redirect_uri` with
   * `code` and `state`, or with `error`). That last redirect is not followed.
   */
  authorize(authorizationUrl: URL | string, options: AuthorizeOptions): Promise<URL>;
  /** Sets the extra claims of an end user (replacing any). */
  setClaims(subject: string, claims: ExtraClaims): void;
  /**
   * Signs a JWT with the current signing key (`typ: at+jwt`, `iss` = this issuer, `iat` now unless given): for tokens
   * the provider would never issue (expired ones, for instance).
   */
  sign(payload: JWTPayload): Promise<string>;
  /**
   * Rotates the signing keys: a new key signs from now on and is published first in the JWKS; the previous one stays
   * published (tokens it signed still verify) unless `{ retire: true }`. The provider keeps its clients, grants and
   * sessions. Resolves with the new kid.
   */
  rotateKeys(options?: { retire?: boolean }): Promise<string>;
  close(): Promise<void>;
}

const DEFAULT_SCOPES = ['tool_calls:read', 'tool_calls:write', 'servers:read', 'servers:write'] as const;
const ALG = 'RS256';

interface SigningKey {
  kid: string;
  privateJwk: JWK;
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
}

async function newSigningKey(): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair(ALG, { extractable: true });
  const kid = `k-${randomUUID()}`;
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: ALG, use: 'sig' };
  return { kid, privateJwk, privateKey };
}

/**
 * An adapter of this instance's own (oidc-provider's built-in one is one store per process, shared by every provider
 * in it): keeps clients, grants and sessions across a key rotation, which builds a new Provider over the same store.
 */
function memoryAdapterFactory(): (name: string) => Adapter {
  const store = new Map<string, { payload: AdapterPayload; expiresAt: number | undefined }>();
  const live = (key: string): AdapterPayload | undefined => {
    const entry = store.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt !== undefined && entry.expiresAt <= Date.now()) {
      store.delete(key);
      return undefined;
    }
    return entry.payload;
  };
  return (name) => {
    const keyOf = (id: string) => `${name}:${id}`;
    return {
      async upsert(id, payload, expiresIn) {
        // A client is not held to the `scope` it registered with: the SDK registers with the scope of the first
        // challenge, and a step-up must be able to ask for more (as providers whose scopes belong to the API do).
        if (name === 'Client') delete payload.scope;
        store.set(keyOf(id), { payload, expiresAt: expiresIn > 0 ? Date.now() + expiresIn * 1000 : undefined });
        if (payload.grantId !== undefined) {
          const grantKey = `grant:${payload.grantId}`;
          const members = (live(grantKey)?.members as string[] | undefined) ?? [];
          store.set(grantKey, { payload: { members: [...members, keyOf(id)] }, expiresAt: undefined });
        }
        if (payload.uid !== undefined) store.set(`sessionUid:${payload.uid}`, { payload: { id }, expiresAt: undefined });
        if (payload.userCode !== undefined) store.set(`userCode:${payload.userCode}`, { payload: { id }, expiresAt: undefined });
      },
      async find(id) {
        return live(keyOf(id));
      },
      async findByUid(uid) {
        const id = live(`sessionUid:${uid}`)?.id as string | undefined;
        return id === undefined ? undefined : live(keyOf(id));
      },
      async findByUserCode(userCode) {
        const id = live(`userCode:${userCode}`)?.id as string | undefined;
        return id === undefined ? undefined : live(keyOf(id));
      },
      async consume(id) {
        const payload = live(keyOf(id));
        if (payload !== undefined) payload.consumed = Math.floor(Date.now() / 1000);
      },
      async destroy(id) {
        store.delete(keyOf(id));
      },
      async revokeByGrantId(grantId) {
        const grantKey = `grant:${grantId}`;
        for (const key of (live(grantKey)?.members as string[] | undefined) ?? []) store.delete(key);
        store.delete(grantKey);
      },
    };
  };
}

/** Reads a request body (bounded: a test's form or JSON). */
async function readBody(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) {
    text += String(chunk);
    if (text.length > 65_536) throw new Error('interaction body too large');
  }
  return text;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** A cookie jar for one `authorize` walk: every cookie the provider sets, sent back on every request to it. */
class CookieJar {
  private readonly cookies = new Map<string, string>();
  take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      if (at > 0) this.cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
  }
  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

export async function startIdentityProvider(options: IdentityProviderOptions = {}): Promise<IdentityProvider> {
  const scopes = [...(options.scopes ?? DEFAULT_SCOPES)];
  const accessTokenTtl = options.accessTokenTtl ?? 600;
  const userClaims = new Map(Object.entries(options.users ?? {}));
  const clientClaims = new Map<string, ExtraClaims>();
  const opaqueClients = new Set<string>();
  /** The client each minted token was issued to, for `revoke`. */
  const minted = new Map<string, RegisteredClient>();
  const adapter = memoryAdapterFactory();
  const cookieKeys = [randomBytes(32).toString('base64url')];
  let keys: SigningKey[] = [await newSigningKey()];

  // The server listens first: the issuer names its port.
  let provider: Provider | undefined;
  let callback: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server = createServer((req, res) => {
    if (provider === undefined || callback === undefined) {
      res.writeHead(503).end();
      return;
    }
    const path = new URL(req.url ?? '/', 'http://idp').pathname;
    if (path.startsWith('/interaction/')) {
      interaction(provider, req, res, path).catch((error: unknown) => sendJson(res, 500, { error: String(error) }));
      return;
    }
    callback(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const configuration = (): Configuration => ({
    adapter,
    jwks: { keys: keys.map((key) => key.privateJwk) as JWKS['keys'] },
    cookies: { keys: cookieKeys },
    scopes: ['openid', 'offline_access', ...scopes],
    claims: { openid: ['sub'] },
    pkce: { required: () => true },
    clientDefaults: { grant_types: ['authorization_code'], id_token_signed_response_alg: ALG, response_types: ['code'], token_endpoint_auth_method: 'none' },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      // Any confidential client may introspect (a resource server registered for it), never a public one.
      introspection: { enabled: true, allowedPolicy: (_ctx, client) => client.clientAuthMethod !== 'none' },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // Any resource the client names, as its own audience: a test asks for the wrong one on purpose.
        defaultResource: (_ctx, _client, oneOf) => oneOf ?? '',
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resourceIndicator, client) => ({
          scope: scopes.join(' '),
          audience: resourceIndicator,
          accessTokenTTL: accessTokenTtl,
          ...(opaqueClients.has(client.clientId) ? { accessTokenFormat: 'opaque' as const } : { accessTokenFormat: 'jwt' as const, jwt: { sign: { alg: ALG } } }),
        }),
      },
    },
    extraTokenClaims: (_ctx, token) => {
      if (token.kind === 'ClientCredentials') return clientClaims.get(token.clientId as string);
      const accountId = (token as { accountId?: string }).accountId;
      return accountId === undefined ? undefined : userClaims.get(accountId);
    },
    findAccount: (_ctx: KoaContextWithOIDC, sub: string) => ({ accountId: sub, claims: () => ({ sub }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    ttl: {
      AccessToken: accessTokenTtl,
      ClientCredentials: accessTokenTtl,
      AuthorizationCode: 60,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      IdToken: 600,
      RefreshToken: 3600,
    },
    renderError: (ctx, out) => {
      ctx.type = 'json';
      ctx.body = out;
    },
  });

  const build = () => {
    provider = new Provider(issuer, configuration());
    callback = provider.callback();
  };
  build();

  const idp: IdentityProvider = {
    issuer,
    jwksUri: `${issuer}/jwks`,
    get signingKid() {
      return keys[0]!.kid;
    },
    async register(metadata) {
      const response = await fetch(`${issuer}/reg`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(metadata) });
      const body = (await response.json()) as RegisteredClient;
      if (response.status !== 201) throw new Error(`registration answered ${response.status}: ${JSON.stringify(body)}`);
      return body;
    },
    async mint({ resource, scope = scopes.join(' '), claims = {}, format = 'jwt' }) {
      const client = await idp.register({
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
      });
      clientClaims.set(client.client_id, claims);
      if (format === 'opaque') opaqueClients.add(client.client_id);
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }),
      });
      const body = (await response.json()) as TokenSet;
      if (response.status !== 200) throw new Error(`token endpoint answered ${response.status}: ${JSON.stringify(body)}`);
      minted.set(body.access_token, client);
      return body;
    },
    async revoke(accessToken) {
      const client = minted.get(accessToken);
      if (client === undefined) throw new Error('revoke: not a token this provider minted');
      const response = await fetch(`${issuer}/token/revocation`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ token: accessToken, token_type_hint: 'access_token' }),
      });
      await response.body?.cancel();
      if (response.status !== 200) throw new Error(`revocation endpoint answered ${response.status}`);
    },
    async authorize(authorizationUrl, { subject, consent = true }) {
      const jar = new CookieJar();
      let url = new URL(authorizationUrl);
      let method = 'GET';
      let body: string | undefined;
      for (let hop = 0; hop < 12; hop++) {
        if (url.origin !== issuer) return url;
        const response = await fetch(url, {
          method,
          redirect: 'manual',
          headers: { cookie: jar.header(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body }),
        });
        jar.take(response);
        const location = response.headers.get('location');
        if (response.status >= 300 && response.status < 400 && location !== null) {
          await response.body?.cancel();
          url = new URL(location, url);
          method = 'GET';
          body = undefined;
          continue;
        }
        const answer = (await response.json()) as { uid?: string; prompt?: string; error?: string; error_description?: string };
        if (response.status !== 200 || answer.uid === undefined) throw new Error(`the provider answered ${response.status}: ${JSON.stringify(answer)}`);
        // An interaction page: answer its prompt.
        method = 'POST';
        if (answer.prompt === 'login') {
          url = new URL(`/interaction/${answer.uid}/login`, issuer);
          body = JSON.stringify({ subject });
        } else if (answer.prompt === 'consent') {
          url = new URL(`/interaction/${answer.uid}/${consent ? 'confirm' : 'abort'}`, issuer);
          body = '{}';
        } else throw new Error(`unexpected prompt ${answer.prompt}`);
      }
      throw new Error('authorize: too many redirects');
    },
    setClaims(subject, claims) {
      userClaims.set(subject, claims);
    },
    async sign(payload) {
      const key = keys[0]!;
      return new SignJWT({ iat: Math.floor(Date.now() / 1000), ...payload, iss: payload.iss ?? issuer })
        .setProtectedHeader({ alg: ALG, kid: key.kid, typ: 'at+jwt' })
        .sign(key.privateKey);
    },
    async rotateKeys({ retire = false } = {}) {
      const next = await newSigningKey();
      keys = retire ? [next] : [next, ...keys];
      build();
      return next.kid;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return idp;
}

/**
 * The login and consent pages, as JSON: `GET /interaction/{uid}` says which prompt is pending; `POST …/login` with
 * `{ subject }` logs that user in; `POST …/confirm` grants every scope and claim asked for; `POST …/abort` refuses.
 */
async function interaction(provider: Provider, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  const [, , uid, action] = path.split('/');
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) return sendJson(res, 400, { error: 'interaction mismatch' });
  if (req.method === 'GET' && action === undefined) return sendJson(res, 200, { uid: details.uid, prompt: details.prompt.name, params: details.params });
  if (req.method !== 'POST') return sendJson(res, 405, { error: 'method not allowed' });
  const input = JSON.parse((await readBody(req)) || '{}') as { subject?: string };
  if (action === 'login') {
    if (typeof input.subject !== 'string' || input.subject === '') return sendJson(res, 400, { error: 'subject is required' });
    await provider.interactionFinished(req, res, { login: { accountId: input.subject } }, { mergeWithLastSubmission: false });
    return;
  }
  if (action === 'abort') {
    await provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'the user refused' }, { mergeWithLastSubmission: false });
    return;
  }
  if (action === 'confirm') {
    const { prompt, params, session, grantId } = details;
    const missing = prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> };
    const grant = grantId === undefined ? new provider.Grant({ accountId: session!.accountId, clientId: params.client_id as string }) : await provider.Grant.find(grantId);
    if (grant === undefined) return sendJson(res, 400, { error: 'grant not found' });
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, granted] of Object.entries(missing.missingResourceScopes ?? {})) grant.addResourceScope(indicator, granted.join(' '));
    const saved = await grant.save();
    await provider.interactionFinished(req, res, { consent: grantId === undefined ? { grantId: saved } : {} }, { mergeWithLastSubmission: true });
    return;
  }
  sendJson(res, 404, { error: 'no such interaction action' });
}
