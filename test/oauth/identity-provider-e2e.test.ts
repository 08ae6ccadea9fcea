import { createHash, randomBytes } from 'node:crypto';
import { defaultOAuthPrincipal, type OAuthClaims, type OAuthPrincipalContext, type Principal } from '@mcp-fleet/core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type OAuthClientProvider, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { decodeJwt, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayUpstream, startGatewayUpstream } from '../../packages/core/src/mcp/fixtures/gateway-upstream.js';
import { type IdentityProvider, startIdentityProvider } from '../support/identity-provider.js';
import { ADAPTER_NAMES, type OAuthServed, serveOAuthFleet } from '../support/oauth-fleet.js';

/**
 * The MCP endpoint as an OAuth resource server (issue 30) against a real identity provider: oidc-provider on loopback
 * (test/support/identity-provider.ts) issuing JWT access tokens for the fleet's resource URL, a real upstream MCP
 * server behind the fleet, real HTTP through both adapters.
 */

/** What the identity provider lets tokens carry: the fleet's own scopes (docs/oauth.md, "Scopes"). */
const SCOPES = ['tool_calls:read', 'tool_calls:write', 'servers:read', 'servers:write'];
const USERS = { alice: { account: 'acme' }, bob: { account: 'globex' } };

let idp: IdentityProvider;
/** Another provider: its tokens name the right audience and are well signed, by the wrong issuer. */
let stranger: IdentityProvider;
let upstream: GatewayUpstream;
beforeAll(async () => {
  [idp, stranger, upstream] = await Promise.all([
    startIdentityProvider({ scopes: SCOPES, users: USERS }),
    startIdentityProvider({ scopes: SCOPES, users: USERS }),
    startGatewayUpstream('upstream'),
  ]);
});
afterAll(async () => {
  await Promise.all([idp.close(), stranger.close(), upstream.close()]);
});

/**
 * The default mapping (the issuer's `accountClaim` as the account, the fleet scopes of `scope`), plus a `tools` claim
 * as the principal's tool allowlist: how an embedder maps its identity provider's claims (docs/oauth.md).
 */
function principal(claims: OAuthClaims, context: OAuthPrincipalContext): Principal | null {
  const base = defaultOAuthPrincipal(claims, context);
  if (base === null) return null;
  const tools = Array.isArray(claims.tools) ? claims.tools.filter((tool): tool is string => typeof tool === 'string') : null;
  return { ...base, tools };
}

const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'oauth-e2e', version: '1.0.0' } },
};

/** POSTs `initialize` to the MCP endpoint with `authorization` (a whole header value) or none. */
function initialize(url: string, authorization?: string): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { ...MCP_HEADERS, ...(authorization === undefined ? {} : { authorization }) }, body: JSON.stringify(INITIALIZE) });
}

/** Lists the endpoint's tools with the SDK client and a bearer token (an access token or an API key). */
async function toolNames(url: string, token: string): Promise<string[]> {
  const client = new Client({ name: 'oauth-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  try {
    return (await client.listTools()).tools.map((tool) => tool.name).sort();
  } finally {
    await client.close();
  }
}

/** The parameters of a `Bearer` challenge: `{ resource_metadata, scope, error }`. */
function challengeParams(header: string | null): Record<string, string> {
  expect(header).toMatch(/^Bearer\b/);
  return Object.fromEntries([...(header ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((match) => [match[1]!, match[2]!]));
}

/** A signed JWT of a key the identity provider never published (its own `kid`, or one the provider does publish). */
async function signWithForeignKey(payload: Record<string, unknown>, kid: string): Promise<string> {
  const { privateKey } = await generateKeyPair('RS256');
  return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid, typ: 'at+jwt' }).sign(privateKey);
}

/** An unsecured JWT (`alg: none`, RFC 7519 §6): no signature at all. */
function unsecured(payload: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'at+jwt' })}.${part(payload)}.`;
}

/** An API key of `account` (tier pro), with the upstream registered in that account as `name` (its tools: `{name}__…`). */
async function accountWithUpstream(served: OAuthServed, account: string, name: string): Promise<string> {
  const key = (await served.fleet.keys.create({ account, tier: 'pro' }))._unsafeUnwrap().secret;
  const created = await fetch(`${served.url}/servers`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, type: 'http', endpoint: upstream.url }),
  });
  expect(created.status).toBe(201);
  return key;
}

/** An agent's OAuth client as the SDK asks for it: in memory, the browser step left to the test. */
class AgentOAuthClient implements OAuthClientProvider {
  readonly redirectUrl = 'http://127.0.0.1:9/callback';
  authorizationUrl: URL | undefined;
  private client: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier = '';
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'mcp-fleet e2e agent',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.client = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

describe.each(ADAPTER_NAMES)('the MCP endpoint as a resource server for oidc-provider (%s)', (adapter) => {
  let served: OAuthServed;
  /** API keys of the two accounts, each with the upstream registered under its own name. */
  const keys: Record<'acme' | 'globex', string> = { acme: '', globex: '' };

  beforeAll(async () => {
    served = await serveOAuthFleet(adapter, (url) => ({
      oauth: {
        resource: url,
        issuers: [{ issuer: idp.issuer, audiences: [], accountClaim: 'account', tier: 'pro' }],
        principal,
        // A token signed by a key the fleet has not seen fetches the key set again at once (the default waits 30 s
        // between fetches, against a flood of made-up kids).
        jwks: { cooldownMs: 0 },
      },
    }));
    for (const [account, name] of [
      ['acme', 'alpha'],
      ['globex', 'gamma'],
    ] as const) {
      keys[account] = await accountWithUpstream(served, account, name);
    }
  });
  afterAll(() => served?.close());

  const mint = (claims: Record<string, unknown>, scope = SCOPES.join(' '), resource = served.mcpUrl) => idp.mint({ resource, scope, claims }).then((tokens) => tokens.access_token);

  it('leads an agent from a bare 401 through the metadata documents to a token that works', async () => {
    const bare = await initialize(served.mcpUrl);
    expect(bare.status).toBe(401);
    await bare.body?.cancel();
    const challenge = challengeParams(bare.headers.get('www-authenticate'));
    expect(challenge).toEqual({ resource_metadata: `${served.origin}/.well-known/oauth-protected-resource/v1/mcp`, scope: 'tool_calls:read tool_calls:write' });

    const metadataAnswer = await fetch(challenge.resource_metadata!);
    expect(metadataAnswer.status).toBe(200);
    const metadata = (await metadataAnswer.json()) as { resource: string; authorization_servers: string[]; scopes_supported: string[]; bearer_methods_supported: string[] };
    expect(metadata).toEqual({
      resource: served.mcpUrl,
      authorization_servers: [idp.issuer],
      scopes_supported: ['tool_calls:read', 'tool_calls:write'],
      bearer_methods_supported: ['header'],
    });

    // RFC 8414 first, then OpenID Connect discovery, as the MCP authorization spec orders them for an issuer without a path.
    const [issuer] = metadata.authorization_servers;
    const rfc8414 = await fetch(`${issuer}/.well-known/oauth-authorization-server`);
    await rfc8414.body?.cancel();
    const discovery = rfc8414.status === 200 ? rfc8414 : await fetch(`${issuer}/.well-known/openid-configuration`);
    const as = (await discovery.json()) as { issuer: string; authorization_endpoint: string; token_endpoint: string; registration_endpoint: string; code_challenge_methods_supported: string[] };
    expect(as.issuer).toBe(issuer);
    expect(as.code_challenge_methods_supported).toContain('S256');

    // Dynamic client registration, then the authorization code with PKCE and the resource indicator.
    const redirectUri = 'http://127.0.0.1:9/callback';
    const registered = await fetch(as.registration_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', grant_types: ['authorization_code'], response_types: ['code'] }),
    });
    expect(registered.status).toBe(201);
    const { client_id } = (await registered.json()) as { client_id: string };
    const verifier = randomBytes(32).toString('base64url');
    const authorization = new URL(as.authorization_endpoint);
    authorization.search = new URLSearchParams({
      client_id,
      response_type: 'code',
      redirect_uri: redirectUri,
      scope: challenge.scope!,
      state: 'st',
      resource: metadata.resource,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();
    const back = await idp.authorize(authorization, { subject: 'alice' });
    const code = back.searchParams.get('code');
    expect(code, back.href).toBeTruthy();
    const tokenAnswer = await fetch(as.token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: code!, redirect_uri: redirectUri, client_id, code_verifier: verifier, resource: metadata.resource }),
    });
    expect(tokenAnswer.status).toBe(200);
    const { access_token } = (await tokenAnswer.json()) as { access_token: string };
    expect(decodeJwt(access_token)).toMatchObject({ iss: idp.issuer, aud: served.mcpUrl, sub: 'alice', account: 'acme', scope: 'tool_calls:read tool_calls:write' });

    expect(await toolNames(served.mcpUrl, access_token)).toEqual(['alpha__count', 'alpha__lookup', 'alpha__wait']);
  });

  it("runs the official SDK client's own OAuth flow: registration, authorization code with PKCE, then tools/list and tools/call", async () => {
    const agent = new AgentOAuthClient();
    const refused = new Client({ name: 'sdk-agent', version: '1.0.0' });
    await expect(refused.connect(new StreamableHTTPClientTransport(new URL(served.mcpUrl), { authProvider: agent }))).rejects.toBeInstanceOf(UnauthorizedError);
    // The SDK registered itself and sent the user to the identity provider, for this resource.
    expect(agent.clientInformation()?.client_id).toBeTruthy();
    const authorizationUrl = agent.authorizationUrl!;
    expect(`${authorizationUrl.origin}${authorizationUrl.pathname}`).toBe(`${idp.issuer}/auth`);
    expect(authorizationUrl.searchParams.get('resource')).toBe(served.mcpUrl);
    expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');

    const back = await idp.authorize(authorizationUrl, { subject: 'bob' });
    const code = back.searchParams.get('code');
    expect(code, back.href).toBeTruthy();
    const transport = new StreamableHTTPClientTransport(new URL(served.mcpUrl), { authProvider: agent });
    await transport.finishAuth(code!);
    expect(decodeJwt(agent.tokens()!.access_token)).toMatchObject({ iss: idp.issuer, aud: served.mcpUrl, sub: 'bob', account: 'globex' });

    const client = new Client({ name: 'sdk-agent', version: '1.0.0' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['gamma__count', 'gamma__lookup', 'gamma__wait']);
      const result = await client.callTool({ name: 'gamma__lookup', arguments: { key: 'k1' } });
      expect(result.structuredContent).toEqual({ value: 'upstream:k1' });
    } finally {
      await client.close();
    }
  });

  describe('refuses with 401 and nothing else', () => {
    const now = () => Math.floor(Date.now() / 1000);
    const claims = () => ({ sub: 'alice', account: 'acme', scope: SCOPES.join(' '), aud: served.mcpUrl, iat: now(), exp: now() + 600 });

    /** The token is refused: 401, the challenge of the endpoint (no hint of why), no session, and no tool listed. */
    async function expectRefused(authorization: string, url = served.mcpUrl): Promise<void> {
      const answer = await initialize(url, authorization);
      const text = await answer.text();
      expect(answer.status).toBe(401);
      expect(answer.headers.get('mcp-session-id')).toBeNull();
      const challenge = challengeParams(answer.headers.get('www-authenticate'));
      expect(challenge.resource_metadata).toBe(`${served.origin}/.well-known/oauth-protected-resource/v1/mcp`);
      // A token sent and refused is said to be invalid (RFC 6750 §3.1); a request that sent none gets no error code.
      expect(challenge.error).toBe(/^Bearer \S/.test(authorization) ? 'invalid_token' : undefined);
      expect(text).not.toContain('alpha');
      const token = authorization.replace(/^Bearer /, '');
      if (token.length > 0) expect(text).not.toContain(token);
    }

    it('a token the provider issued for the fleet passes (the control)', async () => {
      const answer = await initialize(served.mcpUrl, `Bearer ${await mint({ account: 'acme' })}`);
      expect(answer.status).toBe(200);
      await answer.body?.cancel();
    });

    it('a token for another resource (wrong audience)', async () => {
      await expectRefused(`Bearer ${await mint({ account: 'acme' }, SCOPES.join(' '), 'https://elsewhere.example/mcp')}`);
    });

    it('a token of another identity provider (wrong issuer), though its audience is right', async () => {
      const foreign = await stranger.mint({ resource: served.mcpUrl, scope: SCOPES.join(' '), claims: { account: 'acme' } });
      expect(decodeJwt(foreign.access_token).aud).toBe(served.mcpUrl);
      await expectRefused(`Bearer ${foreign.access_token}`);
    });

    it('an expired token signed by the provider', async () => {
      await expectRefused(`Bearer ${await idp.sign({ ...claims(), iat: now() - 7200, exp: now() - 3600 })}`);
    });

    it('a token not yet valid (nbf an hour ahead)', async () => {
      await expectRefused(`Bearer ${await idp.sign({ ...claims(), nbf: now() + 3600 })}`);
    });

    it('an unsecured token (alg: none)', async () => {
      await expectRefused(`Bearer ${unsecured({ ...claims(), iss: idp.issuer })}`);
    });

    it('a token signed by a key not in the JWKS, under a kid of its own or under the kid the provider publishes', async () => {
      await expectRefused(`Bearer ${await signWithForeignKey({ ...claims(), iss: idp.issuer }, 'not-published')}`);
      await expectRefused(`Bearer ${await signWithForeignKey({ ...claims(), iss: idp.issuer }, idp.signingKid)}`);
    });

    it('a valid token in the query string, and not in the header', async () => {
      const token = await mint({ account: 'acme' });
      await expectRefused('', `${served.mcpUrl}?access_token=${encodeURIComponent(token)}`);
      const bare = await fetch(`${served.mcpUrl}?access_token=${encodeURIComponent(token)}`, { method: 'POST', headers: MCP_HEADERS, body: JSON.stringify(INITIALIZE) });
      expect(bare.status).toBe(401);
      await bare.body?.cancel();
    });

    it('a token that is not a JWT at all, and a bearer with nothing after it', async () => {
      await expectRefused(`Bearer ${randomBytes(24).toString('base64url')}`);
      await expectRefused('Bearer ');
    });
  });

  it('picks up a rotated signing key without a restart', async () => {
    const before = await mint({ account: 'acme' });
    expect(await toolNames(served.mcpUrl, before)).toContain('alpha__lookup');
    const kid = await idp.rotateKeys();
    const after = await mint({ account: 'acme' });
    expect(decodeJwt(after).iss).toBe(idp.issuer);
    expect(JSON.parse(Buffer.from(after.split('.')[0]!, 'base64url').toString()).kid).toBe(kid);
    expect(await toolNames(served.mcpUrl, after)).toContain('alpha__lookup');
    // The old key is still published: its tokens keep working until they expire.
    expect(await toolNames(served.mcpUrl, before)).toContain('alpha__lookup');
  });

  it("maps claims to an account and its tool allowlist; two accounts see only their own servers", async () => {
    const limited = await mint({ account: 'acme', tools: ['alpha__lookup'] });
    expect(await toolNames(served.mcpUrl, limited)).toEqual(['alpha__lookup']);
    const acme = await mint({ account: 'acme' });
    const globex = await mint({ account: 'globex' });
    expect(await toolNames(served.mcpUrl, acme)).toEqual(['alpha__count', 'alpha__lookup', 'alpha__wait']);
    expect(await toolNames(served.mcpUrl, globex)).toEqual(['gamma__count', 'gamma__lookup', 'gamma__wait']);

    const client = new Client({ name: 'oauth-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(served.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${limited}` } } }));
    try {
      expect((await client.callTool({ name: 'alpha__lookup', arguments: { key: 'x' } })).structuredContent).toEqual({ value: 'upstream:x' });
      // Outside the allowlist, and another account's tool: unknown, as for an API key's allowlist.
      for (const name of ['alpha__count', 'gamma__lookup']) {
        const error = await client.callTool({ name, arguments: { key: 'x' } }).then(
          () => undefined,
          (e: { code?: number }) => e,
        );
        expect(error?.code, name).toBe(-32602);
      }
    } finally {
      await client.close();
    }

    // The HTTP API is a resource of its own (the mount's URL, RFC 8707): a token for /mcp is refused there, one for
    // the API passes, and each account lists its own servers only.
    const servers = (token: string) => fetch(`${served.url}/servers`, { headers: { authorization: `Bearer ${token}` } });
    const wrongResource = await servers(acme);
    expect(wrongResource.status).toBe(401);
    await wrongResource.body?.cancel();
    const list = async (account: string) => {
      const answer = await servers(await mint({ account }, SCOPES.join(' '), served.url));
      expect(answer.status).toBe(200);
      return ((await answer.json()) as { data: { name: string }[] }).data.map((server) => server.name);
    };
    expect(await list('acme')).toEqual(['alpha']);
    expect(await list('globex')).toEqual(['gamma']);
  });

  it('leaves API keys as they were on the same endpoint: a valid key is never challenged, a wrong one is', async () => {
    expect(await toolNames(served.mcpUrl, keys.acme)).toEqual(['alpha__count', 'alpha__lookup', 'alpha__wait']);
    const good = await initialize(served.mcpUrl, `Bearer ${keys.globex}`);
    expect(good.status).toBe(200);
    expect(good.headers.get('www-authenticate')).toBeNull();
    await good.body?.cancel();
    const revoked = `mcpf_${'0'.repeat(40)}`;
    const wrong = await initialize(served.mcpUrl, `Bearer ${revoked}`);
    expect(wrong.status).toBe(401);
    expect(challengeParams(wrong.headers.get('www-authenticate')).resource_metadata).toBe(`${served.origin}/.well-known/oauth-protected-resource/v1/mcp`);
    await wrong.body?.cancel();
  });
});

describe.each(ADAPTER_NAMES)('the unauthenticated discovery burst, with rate limits on (%s)', (adapter) => {
  let served: OAuthServed;
  beforeAll(async () => {
    served = await serveOAuthFleet(adapter, (url) => ({
      rateLimit: {},
      oauth: { resource: url, issuers: [{ issuer: idp.issuer, audiences: [], accountClaim: 'account' }] },
    }));
  });
  afterAll(() => served?.close());

  it('30 lookups of /.well-known/… from one address (as mcp-remote makes at each start), then a valid key and a valid token answer 200', async () => {
    const key = (await served.fleet.keys.create({ account: 'office', tier: 'pro' }))._unsafeUnwrap().secret;
    const paths = [
      '/v1/mcp/.well-known/openid-configuration',
      '/v1/mcp/.well-known/oauth-authorization-server',
      '/v1/.well-known/oauth-authorization-server',
      '/v1/.well-known/openid-configuration',
      '/.well-known/oauth-authorization-server',
      '/.well-known/openid-configuration',
      '/.well-known/oauth-protected-resource/v1/mcp',
      '/.well-known/oauth-protected-resource',
      '/v1/mcp/.well-known/oauth-protected-resource',
      '/v1/.well-known/oauth-protected-resource/mcp',
    ];
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      // mcp-remote restarting keeps the expired token it had: half the lookups carry one.
      const headers: Record<string, string> = i % 2 === 0 ? {} : { authorization: `Bearer ${await idp.sign({ sub: 'x', account: 'office', aud: served.mcpUrl, exp: 1 })}` };
      const answer = await fetch(`${served.origin}${paths[i % paths.length]}`, { headers });
      statuses.push(answer.status);
      await answer.body?.cancel();
    }
    expect(statuses.filter((status) => status === 401 || status === 429)).toEqual([]);
    expect(statuses.filter((status) => status === 200).length).toBe(6);

    const byKey = await initialize(served.mcpUrl, `Bearer ${key}`);
    expect(byKey.status).toBe(200);
    await byKey.body?.cancel();
    const token = (await idp.mint({ resource: served.mcpUrl, scope: SCOPES.join(' '), claims: { account: 'office' } })).access_token;
    const byToken = await initialize(served.mcpUrl, `Bearer ${token}`);
    expect(byToken.status).toBe(200);
    await byToken.body?.cancel();
  });
});

describe.each(ADAPTER_NAMES)("opaque tokens, checked at the provider's introspection endpoint (%s)", (adapter) => {
  let served: OAuthServed;
  beforeAll(async () => {
    // The fleet introspects as a confidential client of the provider's, registered for it.
    const resourceServer = await idp.register({ grant_types: ['client_credentials'], response_types: [], redirect_uris: [], token_endpoint_auth_method: 'client_secret_basic' });
    const discovery = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as { introspection_endpoint: string };
    served = await serveOAuthFleet(adapter, (url) => ({
      oauth: {
        resource: url,
        issuers: [
          {
            issuer: idp.issuer,
            audiences: [],
            accountClaim: 'account',
            // Asked every time: a token revoked at the provider is refused at once.
            introspection: { endpoint: discovery.introspection_endpoint, clientId: resourceServer.client_id, clientSecret: resourceServer.client_secret!, cacheMs: 0 },
          },
        ],
      },
    }));
    await accountWithUpstream(served, 'initech', 'delta');
  });
  afterAll(() => served?.close());

  const opaque = (resource: string) => idp.mint({ resource, scope: SCOPES.join(' '), claims: { account: 'initech' }, format: 'opaque' }).then((tokens) => tokens.access_token);

  it('an opaque token for the fleet acts for the account its introspection names; revoked at the provider, it is refused', async () => {
    const token = await opaque(served.mcpUrl);
    expect(token.split('.')).toHaveLength(1);
    expect(await toolNames(served.mcpUrl, token)).toEqual(['delta__count', 'delta__lookup', 'delta__wait']);
    await idp.revoke(token);
    const refused = await initialize(served.mcpUrl, `Bearer ${token}`);
    expect(refused.status).toBe(401);
    expect(challengeParams(refused.headers.get('www-authenticate')).resource_metadata).toBe(`${served.origin}/.well-known/oauth-protected-resource/v1/mcp`);
    await refused.body?.cancel();
  });

  it('an opaque token for another resource, and one the provider never issued, are refused', async () => {
    for (const token of [await opaque('https://elsewhere.example/mcp'), randomBytes(32).toString('base64url')]) {
      const answer = await initialize(served.mcpUrl, `Bearer ${token}`);
      expect(answer.status).toBe(401);
      await answer.body?.cancel();
    }
  });
});

describe.each(ADAPTER_NAMES)('step-up authorization with the official SDK client (%s)', (adapter) => {
  let served: OAuthServed;
  beforeAll(async () => {
    // The 401 asks for reading only: the agent's first token cannot call tools.
    served = await serveOAuthFleet(adapter, (url) => ({
      oauth: { resource: url, scopesSupported: ['tool_calls:read'], issuers: [{ issuer: idp.issuer, audiences: [], accountClaim: 'account' }] },
    }));
    await accountWithUpstream(served, 'acme', 'alpha');
  });
  afterAll(() => served?.close());

  /** The SDK agent signed in as alice with what the 401 asked for (`tool_calls:read`), connected. */
  async function readOnlyAgent(): Promise<{ agent: AgentOAuthClient; transport: StreamableHTTPClientTransport; client: Client }> {
    const agent = new AgentOAuthClient();
    await expect(new Client({ name: 'sdk-agent', version: '1.0.0' }).connect(new StreamableHTTPClientTransport(new URL(served.mcpUrl), { authProvider: agent }))).rejects.toBeInstanceOf(UnauthorizedError);
    expect(agent.authorizationUrl!.searchParams.get('scope')).toBe('tool_calls:read');
    const transport = new StreamableHTTPClientTransport(new URL(served.mcpUrl), { authProvider: agent });
    await transport.finishAuth((await idp.authorize(agent.authorizationUrl!, { subject: 'alice' })).searchParams.get('code')!);
    expect(decodeJwt(agent.tokens()!.access_token).scope).toBe('tool_calls:read');
    const client = new Client({ name: 'sdk-agent', version: '1.0.0' });
    await client.connect(transport);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('alpha__lookup');
    return { agent, transport, client };
  }

  /** `tools/call` as the agent would send it, read raw: the status and the challenge the SDK acts on. */
  async function callOutsideTheSdk(agent: AgentOAuthClient, transport: StreamableHTTPClientTransport): Promise<Response> {
    const raw = await fetch(served.mcpUrl, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${agent.tokens()!.access_token}`, 'mcp-session-id': transport.sessionId! },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'alpha__lookup', arguments: { key: 'x' } } }),
    });
    await raw.body?.cancel();
    return raw;
  }

  it('a read-only token calling a tool gets 403 with WWW-Authenticate: Bearer error="insufficient_scope" naming tool_calls:write', async () => {
    const { agent, transport, client } = await readOnlyAgent();
    try {
      const raw = await callOutsideTheSdk(agent, transport);
      expect(raw.status).toBe(403);
      const challenge = challengeParams(raw.headers.get('www-authenticate'));
      expect(challenge.error).toBe('insufficient_scope');
      expect(challenge.scope?.split(' ')).toContain('tool_calls:write');
    } finally {
      await client.close();
    }
  });

  // The challenge names the scopes the token holds with the one it lacks (MCP authorization 2025-11-25, "Scope
  // Challenge Handling"), and where the metadata is: the v1 SDK asks for exactly the challenge's scope, so a challenge
  // naming the missing scope alone would leave it with a token that can no longer list.
  it('re-authorized as the challenge says, the agent keeps what it had: it lists and calls', async () => {
    const { agent, transport, client } = await readOnlyAgent();
    try {
      const raw = await callOutsideTheSdk(agent, transport);
      expect(challengeParams(raw.headers.get('www-authenticate'))).toEqual({
        error: 'insufficient_scope',
        scope: 'tool_calls:read tool_calls:write',
        resource_metadata: `${served.origin}/.well-known/oauth-protected-resource/v1/mcp`,
      });
      // The SDK steps up by itself: it sends the user to authorize the challenge's scope, then goes on.
      agent.authorizationUrl = undefined;
      await expect(client.callTool({ name: 'alpha__lookup', arguments: { key: 'x' } })).rejects.toBeInstanceOf(UnauthorizedError);
      await transport.finishAuth((await idp.authorize(agent.authorizationUrl!, { subject: 'alice' })).searchParams.get('code')!);
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('alpha__lookup');
      expect((await client.callTool({ name: 'alpha__lookup', arguments: { key: 'x' } })).structuredContent).toEqual({ value: 'upstream:x' });
    } finally {
      await client.close();
    }
  });
});
