import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { createFleet, defaultOAuthPrincipal, type FleetOptions } from '@mcp-fleet/core';
import { exportJWK, exportSPKI, generateKeyPair, type JWK, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayUpstream, startGatewayUpstream } from '../../packages/core/src/mcp/fixtures/gateway-upstream.js';
import { oneWindow } from '../support/clock.js';
import { api, type ApiClient, expectError, httpServer, type Json } from '../support/http-client.js';
import { type AdapterName, type OAuthServed, serveOAuthFleet } from '../support/oauth-fleet.js';

// Issue 30 (CONTRACT "OAuth for the MCP endpoint"): the MCP endpoint and the HTTP API accept the access tokens of the
// embedder's identity provider beside API keys. The provider here is a small loopback server of the test's own: issuer
// metadata, a JWKS, an RFC 7662 introspection endpoint; tokens are signed in the test with jose.

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;
interface SigningKey {
  kid: string;
  pair: KeyPair;
  jwk: JWK;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const pair = await generateKeyPair('RS256', { extractable: true });
  return { kid, pair, jwk: { ...(await exportJWK(pair.publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

/** The test's identity provider: two issuers by path (`/main`: RFC 8414 metadata; `/oidc`: OpenID configuration only), and JWKS endpoints that misbehave on demand. */
interface Idp {
  origin: string;
  main: string;
  oidc: string;
  /** The keys `/main/jwks` publishes. */
  published: SigningKey[];
  jwksFetches: number;
  /** Opaque tokens the introspection endpoint knows, with their answer. */
  opaque: Map<string, Record<string, unknown>>;
  introspectionAuth: string[];
  close(): Promise<void>;
}

async function startIdp(): Promise<Idp> {
  const idp = { published: [] as SigningKey[], jwksFetches: 0, opaque: new Map<string, Record<string, unknown>>(), introspectionAuth: [] as string[] } as Idp;
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const readBody = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let text = '';
      req.on('data', (chunk) => (text += chunk));
      req.on('end', () => resolve(text));
    });
  const server: Server = createServer(async (req, res) => {
    const url = req.url ?? '';
    if (url === '/.well-known/oauth-authorization-server/main') return json(res, 200, { issuer: idp.main, jwks_uri: `${idp.origin}/main/jwks`, token_endpoint: `${idp.origin}/main/token` });
    if (url === '/oidc/.well-known/openid-configuration') return json(res, 200, { issuer: idp.oidc, jwks_uri: `${idp.origin}/main/jwks` });
    if (url === '/main/jwks') {
      idp.jwksFetches += 1;
      return json(res, 200, { keys: idp.published.map((key) => key.jwk) });
    }
    // Answers the headers, then nothing: a read that would hang without a timeout.
    if (url === '/slow/jwks') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"keys":[');
      return;
    }
    // A key set of 1 MiB, past the fleet's maxUpstreamBytes.
    if (url === '/big/jwks') return json(res, 200, { keys: idp.published.map((key) => key.jwk), padding: 'x'.repeat(1024 * 1024) });
    if (url === '/main/introspect' && req.method === 'POST') {
      idp.introspectionAuth.push(req.headers.authorization ?? '');
      const token = new URLSearchParams(await readBody(req)).get('token') ?? '';
      return json(res, 200, idp.opaque.get(token) ?? { active: false });
    }
    json(res, 404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  idp.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  idp.main = `${idp.origin}/main`;
  idp.oidc = `${idp.origin}/oidc`;
  idp.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return idp;
}

const AUDIENCE = 'https://fleet.example.test/v1/mcp';
const NOW = () => Math.floor(Date.now() / 1000);
/** Where a resource's Protected Resource Metadata is (RFC 9728 §3.1: the well-known path between origin and path). */
const metadataOf = (resource: string) => {
  const url = new URL(resource);
  return `${url.origin}/.well-known/oauth-protected-resource${url.pathname}`;
};

let idp: Idp;
let key1: SigningKey;
let key2: SigningKey;
let stranger: SigningKey;
let upstream: GatewayUpstream;
const warnings: string[] = [];
const logger = { info: () => {}, error: () => {}, warn: (_fields: unknown, message: string) => void warnings.push(message) };

beforeAll(async () => {
  [idp, key1, key2, stranger, upstream] = await Promise.all([startIdp(), signingKey('k1'), signingKey('k2'), signingKey('k1'), startGatewayUpstream('alpha')]);
  idp.published = [key1];
});
afterAll(async () => {
  await Promise.all([idp.close(), upstream.close()]);
});

interface TokenInput {
  sub?: string;
  scope?: string;
  aud?: string | string[];
  iss?: string;
  exp?: number;
  nbf?: number;
  key?: SigningKey;
  claims?: Record<string, unknown>;
}

/** A signed access token; by default for `alpha-user` of the main issuer, every MCP scope, valid for 10 minutes. */
async function token(input: TokenInput = {}): Promise<string> {
  const key = input.key ?? key1;
  const jwt = new SignJWT({ scope: input.scope ?? 'servers:read servers:write tool_calls:read tool_calls:write', ...input.claims })
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt' })
    .setIssuer(input.iss ?? idp.main)
    .setSubject(input.sub ?? 'alpha-user')
    .setAudience(input.aud ?? AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(input.exp ?? NOW() + 600);
  if (input.nbf !== undefined) jwt.setNotBefore(input.nbf);
  return jwt.sign(key.pair.privateKey);
}

type Hosted = OAuthServed;

/** The fleet served by one adapter with the well-known helper at the host's root, as docs/oauth.md shows. */
const host = (adapter: AdapterName, options: FleetOptions, mount = ''): Promise<Hosted> => serveOAuthFleet(adapter, { logger, ...options }, { mount });

const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };

/** The tool names `tools/list` answers on `url` (2026-07-28, the v2 SDK client) for a bearer credential. */
async function listTools(url: string, bearer: string): Promise<string[]> {
  const client = new V2Client({ name: 'oauth-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new V2Transport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }));
  try {
    return (await client.listTools()).tools.map((tool) => tool.name).sort();
  } finally {
    await client.close();
  }
}

describe.each(['hono', 'express'] as const)('OAuth resource server through %s', (adapter) => {
  let hosted: Hosted;
  let anonymous: ApiClient;
  beforeAll(async () => {
    hosted = await host(adapter, {
      maxUpstreamBytes: 256 * 1024,
      oauth: {
        issuers: [
          { issuer: idp.main, audiences: [AUDIENCE], introspection: { endpoint: `${idp.origin}/main/introspect`, clientId: 'fleet', clientSecret: 'fleet-secret' } },
          { issuer: idp.oidc, audiences: [AUDIENCE], accountClaim: 'account', tier: 'enterprise' },
          { issuer: `${idp.origin}/slow`, audiences: [AUDIENCE], jwksUri: `${idp.origin}/slow/jwks` },
          { issuer: `${idp.origin}/big`, audiences: [AUDIENCE], jwksUri: `${idp.origin}/big/jwks` },
        ],
        // The tool allowlist from a claim of the provider's: everything else by the default mapping.
        principal: (claims, context) => {
          const principal = defaultOAuthPrincipal(claims, context);
          return principal === null ? null : { ...principal, tools: Array.isArray(claims.fleet_tools) ? (claims.fleet_tools as string[]) : null };
        },
        jwks: { timeoutMs: 400, cooldownMs: 300 },
      },
    });
    anonymous = api(hosted, null);
  });
  afterAll(async () => {
    await hosted.close();
  });

  const as = (bearer: string) => api(hosted, bearer);

  it('accepts a valid token on the HTTP API and the MCP endpoint: the mapped account, scopes and allowlist apply', async () => {
    const sub = `user-${Math.random().toString(36).slice(2, 8)}`;
    const owner = as(await token({ sub }));
    const created = await owner.post('/servers', httpServer({ name: 'alpha', endpoint: upstream.url }));
    expect(created.status).toBe(201);
    const listed = await owner.get('/servers');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((server: Json) => server.id)).toEqual([created.body.data.id]);
    // The same account through the MCP endpoint; a token whose claim lists one tool sees only that one.
    expect(await listTools(`${hosted.url}/mcp`, await token({ sub }))).toEqual(['alpha__count', 'alpha__lookup', 'alpha__wait']);
    expect(await listTools(`${hosted.url}/mcp`, await token({ sub, claims: { fleet_tools: ['alpha__lookup'] } }))).toEqual(['alpha__lookup']);
    // A JWT of the OpenID issuer (jwks_uri from its openid-configuration), its account from the `account` claim.
    const viaOidc = await as(await token({ iss: idp.oidc, sub: 'someone-else', claims: { account: sub } })).get('/servers');
    expect(viaOidc.status).toBe(200);
    expect(viaOidc.body.data.map((server: Json) => server.id)).toEqual([created.body.data.id]);
  });

  it('refuses a bad token with 401 and changes nothing: audience, issuer, expiry, nbf, alg none, HS256 with the public key, unknown kid, token in the query', async () => {
    const sub = `victim-${Math.random().toString(36).slice(2, 8)}`;
    const publicPem = await exportSPKI(key1.pair.publicKey);
    const hs256 = await new SignJWT({ scope: 'servers:write' })
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .setIssuer(idp.main)
      .setSubject(sub)
      .setAudience(AUDIENCE)
      .setExpirationTime(NOW() + 600)
      .sign(new TextEncoder().encode(publicPem));
    const none = new UnsecuredJWT({ scope: 'servers:write' }).setIssuer(idp.main).setSubject(sub).setAudience(AUDIENCE).setExpirationTime(NOW() + 600).encode();
    const bad: Record<string, string> = {
      'wrong audience': await token({ sub, aud: 'https://other.example.test/mcp' }),
      'unknown issuer': await token({ sub, iss: 'https://evil.example.test/' }),
      expired: await token({ sub, exp: NOW() - 120 }),
      'nbf in the future': await token({ sub, nbf: NOW() + 600 }),
      'alg none': none,
      'HS256 with the public key as secret': hs256,
      'a key not in the JWKS': await token({ sub, key: await signingKey('k-unknown') }),
      'the right kid, another key': await token({ sub, key: stranger }),
      'a tampered payload': (await token({ sub })).replace(/\.([\w-]+)\./, (_m, payload: string) => `.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), sub: 'root' })).toString('base64url')}.`),
    };
    for (const [why, bearer] of Object.entries(bad)) {
      const write = await as(bearer).post('/servers', httpServer({ endpoint: upstream.url }));
      expect(write.status, why).toBe(401);
      expect(write.body.error.code, why).toBe('UNAUTHORIZED');
      const mcp = await as(bearer).post('/mcp', INITIALIZE, { headers: MCP_HEADERS });
      expect(mcp.status, why).toBe(401);
      expect(mcp.headers.get('www-authenticate'), why).toMatch(/^Bearer resource_metadata="[^"]+", scope="[^"]+", error="invalid_token"$/);
    }
    // Never from the query string, whatever the token.
    const valid = await token({ sub });
    expect((await anonymous.get(`/servers?access_token=${valid}`)).status).toBe(401);
    expect((await anonymous.post(`/mcp?access_token=${valid}`, INITIALIZE, { headers: MCP_HEADERS })).status).toBe(401);
    // Nothing was created for the account the bad tokens named.
    const listed = await as(valid).get('/servers');
    expect(listed.status).toBe(200);
    expect(listed.body.pagination.total).toBe(0);
  });

  it('picks up a rotated signing key without a restart, and a flood of unknown kids fetches the key set at most once per cooldown', async () => {
    const client = as(await token());
    expect((await client.get('/servers')).status).toBe(200);
    const made = await Promise.all(Array.from({ length: 20 }, (_, i) => token({ key: { ...key1, kid: `random-${i}-${Math.random()}` } })));
    const before = idp.jwksFetches;
    const started = performance.now();
    for (const bearer of made) expect((await as(bearer).get('/servers')).status).toBe(401);
    // At most one fetch per cooldown (300 ms here) however many kids arrive: never one per token.
    expect(idp.jwksFetches - before).toBeLessThanOrEqual(1 + Math.floor((performance.now() - started) / 300));
    expect(idp.jwksFetches - before).toBeLessThan(5);
    // The provider rotates: key 2 signs, both are published for a while.
    idp.published = [key1, key2];
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect((await as(await token({ key: key2 })).get('/servers')).status).toBe(200);
    expect((await as(await token({ key: key1 })).get('/servers')).status).toBe(200);
  });

  it('isolates accounts: one cannot see or reach the servers of another', async () => {
    const a = as(await token({ sub: `iso-a-${Math.random().toString(36).slice(2, 8)}` }));
    const b = as(await token({ sub: `iso-b-${Math.random().toString(36).slice(2, 8)}` }));
    const created = await a.post('/servers', httpServer({ name: 'alpha', endpoint: upstream.url }));
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    expect((await b.get('/servers')).body.pagination.total).toBe(0);
    expectError(await b.get(`/servers/${id}`), 404, 'SERVER_NOT_FOUND');
    expect((await b.post(`/servers/${id}/tools/call`, { name: 'lookup', arguments: { key: 'x' } })).status).toBe(404);
    expect((await b.post(`/servers/${id}/mcp`, INITIALIZE, { headers: MCP_HEADERS })).status).toBe(404);
    expect(await listTools(`${hosted.url}/mcp`, b.key as string)).toEqual([]);
    expect(await listTools(`${hosted.url}/servers/${id}/mcp`, a.key as string)).toEqual(['count', 'lookup', 'wait']);
  });

  it('answers a missing scope with 403 insufficient_scope naming what the token holds with what it lacks, and where the metadata is, on the MCP endpoint and the HTTP API', async () => {
    const reader = as(await token({ scope: 'servers:read' }));
    const mcp = await reader.post('/mcp', [{ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }], { headers: MCP_HEADERS });
    expectError(mcp, 403, 'FORBIDDEN', { required_scope: 'tool_calls:read' });
    expect(mcp.headers.get('www-authenticate')).toBe(`Bearer error="insufficient_scope", scope="servers:read tool_calls:read", resource_metadata="${metadataOf(`${hosted.url}/mcp`)}"`);
    const caller = as(await token({ scope: 'tool_calls:read' }));
    const call = await caller.post('/mcp', { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'alpha__lookup', arguments: {} } }, { headers: { ...MCP_HEADERS, 'mcp-protocol-version': '2026-07-28' } });
    expectError(call, 403, 'FORBIDDEN', { required_scope: 'tool_calls:write' });
    expect(call.headers.get('www-authenticate')).toBe(`Bearer error="insufficient_scope", scope="tool_calls:read tool_calls:write", resource_metadata="${metadataOf(`${hosted.url}/mcp`)}"`);
    const write = await reader.post('/servers', httpServer({ endpoint: upstream.url }));
    expectError(write, 403, 'FORBIDDEN', { required_scope: 'servers:write' });
    expect(write.headers.get('www-authenticate')).toBe(`Bearer error="insufficient_scope", scope="servers:read servers:write", resource_metadata="${metadataOf(hosted.url)}"`);
  });

  it('leaves API keys as they were: never challenged, and a wrong key on /mcp is told where the metadata is', async () => {
    const secret = (await hosted.fleet.keys.create({ account: `keyed-${Math.random().toString(36).slice(2, 8)}`, tier: 'pro' }))._unsafeUnwrap().secret;
    expect((await as(secret).get('/servers')).status).toBe(200);
    const init = await as(secret).post('/mcp', INITIALIZE, { headers: MCP_HEADERS });
    expect(init.status).toBe(200);
    expect(init.headers.get('www-authenticate')).toBeNull();
    expect(await listTools(`${hosted.url}/mcp`, secret)).toEqual([]);
    const reader = (await hosted.fleet.keys.create({ account: 'keyed-reader', scopes: ['servers:read'] }))._unsafeUnwrap().secret;
    const refused = await as(reader).post('/servers', httpServer());
    expectError(refused, 403, 'FORBIDDEN', { required_scope: 'servers:write' });
    expect(refused.headers.get('www-authenticate')).toBeNull();
    const wrong = await as('mcpf_not-a-key-at-all-000000').post('/mcp', INITIALIZE, { headers: MCP_HEADERS });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${hosted.origin}/.well-known/oauth-protected-resource/v1/mcp", scope="tool_calls:read tool_calls:write", error="invalid_token"`);
    // The HTTP API's 401 stays as it was.
    expect((await anonymous.get('/servers')).headers.get('www-authenticate')).toBe('Bearer');
  });

  it('checks opaque tokens by introspection: active passes (cached a while), inactive is refused', async () => {
    const active = `opaque-active-${Math.random().toString(36).slice(2)}`;
    const inactive = `opaque-inactive-${Math.random().toString(36).slice(2)}`;
    idp.opaque.set(active, { active: true, iss: idp.main, sub: 'introspected', scope: 'servers:read', exp: NOW() + 600, aud: AUDIENCE });
    const asked = idp.introspectionAuth.length;
    expect((await as(active).get('/servers')).status).toBe(200);
    expect((await as(active).get('/servers')).status).toBe(200);
    expect(idp.introspectionAuth.length - asked).toBe(1);
    expect(idp.introspectionAuth.at(-1)).toBe(`Basic ${Buffer.from('fleet:fleet-secret').toString('base64')}`);
    expect((await as(inactive).get('/servers')).status).toBe(401);
    // A wrong API key of the fleet's own format is no access token: the identity provider is not asked about it.
    const before = idp.introspectionAuth.length;
    expect((await as('mcpf_0000000000000000000000000000000000000000').get('/servers')).status).toBe(401);
    expect(idp.introspectionAuth.length).toBe(before);
    // Active, but for another resource.
    const elsewhere = `opaque-elsewhere-${Math.random().toString(36).slice(2)}`;
    idp.opaque.set(elsewhere, { active: true, sub: 'introspected', scope: 'servers:read', aud: 'https://other.example.test/' });
    expect((await as(elsewhere).get('/servers')).status).toBe(401);
  });

  it('fails closed, without hanging, when a key set is too slow or too large: 401 and a warning that says what to check', async () => {
    for (const which of ['slow', 'big'] as const) {
      const started = performance.now();
      const res = await as(await token({ iss: `${idp.origin}/${which}` })).get('/servers');
      expect(res.status).toBe(401);
      expect(performance.now() - started).toBeLessThan(3000);
    }
    expect(warnings.some((w) => w.includes(`${idp.origin}/slow`) && w.includes('oauth.jwks.timeoutMs'))).toBe(true);
    expect(warnings.some((w) => w.includes(`${idp.origin}/big`) && w.includes('maxUpstreamBytes'))).toBe(true);
    expect(warnings.join('\n')).not.toMatch(/eyJ/);
  });

  it('tells the mcp-fleet:auth channel the outcome of an OAuth credential, never the token', async () => {
    const seen: Json[] = [];
    const listener = (message: unknown) => void seen.push(message);
    subscribe('mcp-fleet:auth', listener);
    try {
      const expired = await token({ exp: NOW() - 300 });
      await as(expired).get('/servers');
      await as(await token({ sub: 'traced-user' })).get('/servers');
    } finally {
      unsubscribe('mcp-fleet:auth', listener);
    }
    expect(seen).toEqual([
      expect.objectContaining({ method: 'oauth', outcome: 'refused', issuer: idp.main, reason: 'expired' }),
      expect.objectContaining({ method: 'oauth', outcome: 'ok', issuer: idp.main, account: 'traced-user' }),
    ]);
    expect(JSON.stringify(seen)).not.toMatch(/eyJ/);
  });

  it('serves the Protected Resource Metadata of /mcp, /servers/{id}/mcp and the root form, exactly', async () => {
    const expected = (resource: string) => ({
      resource,
      authorization_servers: [idp.main, idp.oidc, `${idp.origin}/slow`, `${idp.origin}/big`],
      scopes_supported: ['tool_calls:read', 'tool_calls:write'],
      bearer_methods_supported: ['header'],
    });
    const get = async (path: string) => {
      const res = await fetch(`${hosted.origin}${path}`);
      return { status: res.status, cors: res.headers.get('access-control-allow-origin'), body: res.status === 200 ? await res.json() : undefined };
    };
    expect(await get('/.well-known/oauth-protected-resource/v1/mcp')).toEqual({ status: 200, cors: '*', body: expected(`${hosted.origin}/v1/mcp`) });
    expect(await get('/.well-known/oauth-protected-resource/v1/servers/srv_x/mcp')).toEqual({ status: 200, cors: '*', body: expected(`${hosted.origin}/v1/servers/srv_x/mcp`) });
    expect(await get('/.well-known/oauth-protected-resource')).toEqual({ status: 200, cors: '*', body: expected(hosted.origin) });
    // Anything else is the host app's (404 here).
    expect((await get('/.well-known/oauth-protected-resource/v1/servers')).status).toBe(404);
    expect((await get('/.well-known/oauth-protected-resource/elsewhere/mcp')).status).toBe(404);
    // The challenge of /servers/{id}/mcp points at its own document.
    const challenge = (await anonymous.post('/servers/srv_x/mcp', INITIALIZE, { headers: MCP_HEADERS })).headers.get('www-authenticate');
    expect(challenge).toBe(`Bearer resource_metadata="${hosted.origin}/.well-known/oauth-protected-resource/v1/servers/srv_x/mcp", scope="tool_calls:read tool_calls:write"`);
  });
});

describe.each(['hono', 'express'] as const)('OAuth with a public resource URL, mounted at /api, through %s', (adapter) => {
  let hosted: Hosted;
  const resource = 'https://fleet.example.test/api/v1';
  beforeAll(async () => {
    hosted = await host(adapter, { oauth: { issuers: [{ issuer: idp.main, audiences: [] }], resource, scopesSupported: ['mcp'] } }, '/api');
  });
  afterAll(async () => {
    await hosted.close();
  });

  it('accepts the canonical resource URLs as audiences, and writes them in the documents and challenges', async () => {
    // The mount's URL and its origin (the root document's resource) everywhere; an endpoint's resource on that endpoint only.
    for (const aud of [resource, 'https://fleet.example.test']) {
      expect((await api(hosted, await token({ aud })).get('/servers')).status, aud).toBe(200);
      expect((await api(hosted, await token({ aud })).post('/mcp', INITIALIZE, { headers: MCP_HEADERS })).status, aud).toBe(200);
    }
    expect((await api(hosted, await token({ aud: `${resource}/mcp` })).post('/mcp', INITIALIZE, { headers: MCP_HEADERS })).status).toBe(200);
    expect((await api(hosted, await token({ aud: `${resource}/mcp` })).get('/servers')).status).toBe(401);
    expect((await api(hosted, await token({ aud: `${resource}/servers/srv_a/mcp` })).post('/mcp', INITIALIZE, { headers: MCP_HEADERS })).status).toBe(401);
    expect((await api(hosted, await token({ aud: AUDIENCE })).get('/servers')).status).toBe(401);
    // The request's own host (127.0.0.1) is not what the challenge names: the configured resource is.
    const res = await fetch(`${hosted.url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, 'content-type': 'application/json' }, body: JSON.stringify(INITIALIZE) });
    expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="https://fleet.example.test/.well-known/oauth-protected-resource/api/v1/mcp", scope="mcp"`);
    const doc = await fetch(`${hosted.origin}/.well-known/oauth-protected-resource/api/v1/mcp`);
    expect(await doc.json()).toEqual({ resource: `${resource}/mcp`, authorization_servers: [idp.main], scopes_supported: ['mcp'], bearer_methods_supported: ['header'] });
    expect((await fetch(`${hosted.origin}/.well-known/oauth-protected-resource/v1/mcp`)).status).toBe(404);
  });
});

describe.each(['hono', 'express'] as const)('OAuth behind the outgoing guard, through %s', (adapter) => {
  it("sends no opaque token to the provider's introspection once the address has spent its budget of failed credentials", async () => {
    const hosted = await host(adapter, {
      // One rate-limit window for the whole test: a minute that ends between two guesses would renew the budget.
      now: oneWindow(),
      rateLimit: { unauthenticated: 3 },
      oauth: { issuers: [{ issuer: idp.main, audiences: [AUDIENCE], introspection: { endpoint: `${idp.origin}/main/introspect`, clientId: 'fleet', clientSecret: 'fleet-secret' } }] },
    });
    try {
      const before = idp.introspectionAuth.length;
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) statuses.push((await api(hosted, `guess-${i}-${Math.random().toString(36).slice(2)}`).get('/servers')).status);
      // Three guesses are asked about and refused; the fourth finds the budget spent and is not.
      expect(statuses).toEqual([401, 401, 401, 429, 429, 429, 429, 429]);
      expect(idp.introspectionAuth.length - before).toBe(3);
      // An opaque token the fleet has not cached is not asked about either, for the rest of the window (one the
      // provider knows too: the fleet cannot tell it from a guess without asking). A JWT is checked here, without the
      // provider, and passes: a valid key or JWT is never refused for its address.
      const known = `opaque-known-${Math.random().toString(36).slice(2)}`;
      idp.opaque.set(known, { active: true, iss: idp.main, sub: 'introspected', scope: 'servers:read', exp: NOW() + 600, aud: AUDIENCE });
      expect((await api(hosted, known).get('/servers')).status).toBe(429);
      expect(idp.introspectionAuth.length - before).toBe(3);
      expect((await api(hosted, await token()).get('/servers')).status).toBe(200);
    } finally {
      await hosted.close();
    }
  });

  it('refuses every token of a loopback identity provider unless allowPrivateNetworks lets the fleet reach it, and says so', async () => {
    const hosted = await host(adapter, { allowPrivateNetworks: false, oauth: { issuers: [{ issuer: idp.main, audiences: [AUDIENCE] }] } });
    try {
      const seen = warnings.length;
      expect((await api(hosted, await token()).get('/servers')).status).toBe(401);
      const said = warnings.slice(seen).join('\n');
      expect(said).toContain('DESTINATION_NOT_ALLOWED');
      expect(said).toContain('allowPrivateNetworks');
    } finally {
      await hosted.close();
    }
  });
});

describe('the oauth option at start', () => {
  it('refuses what cannot work, naming the field', () => {
    const make = (oauth: unknown) => () => createFleet({ oauth: oauth as FleetOptions['oauth'] });
    expect(make({ issuers: [] })).toThrow(/oauth\.issuers must list 1 to 20 issuers/);
    expect(make({ issuers: [{ issuer: 'not a url', audiences: ['a'] }] })).toThrow(/oauth\.issuers\[0\]\.issuer must be an http\(s\) URL/);
    expect(make({ issuers: [{ issuer: 'https://idp.example/', audiences: [] }] })).toThrow(/audiences is empty and oauth\.resource is not set/);
    expect(make({ issuers: [{ issuer: 'https://idp.example/', audiences: ['a'], algorithms: ['none'] }] })).toThrow(/"none" is never accepted/);
    expect(make({ issuers: [{ issuer: 'https://idp.example/', audiences: ['a'], introspection: { endpoint: 'https://idp.example/i', clientId: 'c' } }] })).toThrow(/introspection\.clientSecret must be set/);
    expect(make({ issuers: [{ issuer: 'https://idp.example/', audiences: ['a'] }], resource: 'ftp://x' })).toThrow(/oauth\.resource must be an http\(s\) URL/);
    expect(make({ issuers: [{ issuer: 'https://idp.example/', audiences: ['a'], accountPrefix: 'gh:' }] })).toThrow(/oauth\.issuers\[0\]\.accountPrefix must be 1 to 32 letters/);
  });

  it('warns when two issuers would map their subjects into one account space, naming accountPrefix', async () => {
    const said = async (oauth: FleetOptions['oauth']) => {
      const seen: string[] = [];
      const fleet = createFleet({ oauth, logger: { info: () => {}, error: () => {}, warn: (_fields: unknown, message: string) => void seen.push(message) } });
      await fleet.close();
      return seen.filter((message) => message.includes('accountPrefix'));
    };
    const a = { issuer: 'https://a.example/', audiences: ['fleet'] };
    const b = { issuer: 'https://b.example/', audiences: ['fleet'] };
    const [warning] = await said({ issuers: [a, b] });
    expect(warning).toContain('oauth.issuers[0] and oauth.issuers[1] take the account from the same claim without an accountPrefix');
    expect(await said({ issuers: [a, { ...b, accountClaim: 'sub' }] })).toHaveLength(1);
    expect(await said({ issuers: [{ ...a, accountPrefix: 'a-' }, { ...b, accountPrefix: 'b-' }] })).toEqual([]);
    expect(await said({ issuers: [a, { ...b, accountClaim: 'org_id' }] })).toEqual([]);
    expect(await said({ issuers: [a] })).toEqual([]);
    // A principal function of the embedder's decides the accounts itself.
    expect(await said({ issuers: [a, b], principal: defaultOAuthPrincipal })).toHaveLength(1);
    expect(await said({ issuers: [a, b], principal: (claims, context) => defaultOAuthPrincipal(claims, context) })).toEqual([]);
  });

  it('the default principal puts the issuer\'s accountPrefix before the claim, within the 64 characters of an account', () => {
    const context = (accountPrefix?: string) => ({ issuer: { issuer: 'https://gh.example/', audiences: ['fleet'], ...(accountPrefix !== undefined && { accountPrefix }) }, kind: 'jwt' as const });
    expect(defaultOAuthPrincipal({ sub: '12345', scope: 'servers:read' }, context('gh-'))).toMatchObject({ account: 'gh-12345', scopes: ['servers:read'] });
    expect(defaultOAuthPrincipal({ sub: '12345' }, context())).toMatchObject({ account: '12345' });
    expect(defaultOAuthPrincipal({ sub: 'x'.repeat(62) }, context('gh-'))).toBeNull();
    expect(defaultOAuthPrincipal({ sub: 'x'.repeat(61) }, context('gh-'))?.account).toHaveLength(64);
  });
});
