import { generateKeyPairSync } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { HttpServerConfig, WebSocketServerConfig } from '../registry/schema.js';
import { closedAfterEach } from './fixtures/listen.js';
import { startAuthServer, type AuthServer } from './fixtures/misc-servers.js';
import { startV2Server } from './fixtures/v2-server.js';
import { startWsServer } from './fixtures/ws-server.js';
import { MemoryTokenCache } from './oauth.js';
import { probeServer } from './probe.js';

const CLIENT = { clientId: 'fleet-client', clientSecret: 'fleet-secret' };

const started = closedAfterEach();

function oauth(endpoint: string, extra: { token_url?: string; scope?: string; client_secret?: string } = {}): HttpServerConfig {
  return {
    name: 'oauth-test',
    type: 'http',
    endpoint,
    timeout: 3000,
    authentication: { type: 'oauth2', client_id: CLIENT.clientId, client_secret: extra.client_secret ?? CLIENT.clientSecret, token_url: extra.token_url, scope: extra.scope },
  };
}

/**
 * An MCP server that accepts only the tokens `auth` issued, and records the Authorization headers it saw.
 * `discoverable`: its protected-resource metadata at the path-based well-known URL; `metadata`: at `path` instead, with
 * the document `document(url)` (the 401 challenge names it either way).
 */
async function protectedServer(
  auth: AuthServer,
  options: { discoverable?: boolean; metadata?: { path: string; document: (url: string) => Record<string, unknown> } } = {},
) {
  const seen: (string | undefined)[] = [];
  let url = '';
  const metadata =
    options.metadata ??
    (options.discoverable === true
      ? { path: '/.well-known/oauth-protected-resource/mcp', document: (at: string) => ({ resource: at, authorization_servers: [auth.origin] }) }
      : undefined);
  const server = await started(
    startV2Server({
      authorize: (header) => {
        seen.push(header);
        return auth.accepts(header);
      },
      get resourceMetadata() {
        return metadata === undefined ? undefined : `${new URL(url).origin}${metadata.path}`;
      },
      get documents() {
        return metadata === undefined ? undefined : { [metadata.path]: metadata.document(url) };
      },
    }),
  );
  url = server.url;
  return { server, seen };
}

describe('oauth2 client credentials', () => {
  it('fetches a token from token_url, sends it, and caches it: the token endpoint is hit once for two probes', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600 }));
    const { server, seen } = await protectedServer(auth);
    const tokens = new MemoryTokenCache();
    const config = oauth(server.url, { token_url: auth.tokenUrl, scope: 'mcp:probe' });

    await expect(probeServer(config, { tokens })).resolves.toMatchObject({ ok: true, era: '2026-07-28' });
    await expect(probeServer(config, { tokens })).resolves.toMatchObject({ ok: true, era: '2026-07-28' });

    expect(auth.requests).toHaveLength(1);
    expect(auth.requests[0]?.params.get('grant_type')).toBe('client_credentials');
    expect(auth.requests[0]?.params.get('scope')).toBe('mcp:probe');
    expect(auth.requests[0]?.params.get('resource')).toBe(server.url);
    expect(seen).toEqual(['Bearer fixture-token-1', 'Bearer fixture-token-1']);
  });

  it('discovers the token endpoint from protected-resource metadata, then authorization-server metadata', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600 }));
    const { server, seen } = await protectedServer(auth, { discoverable: true });
    const tokens = new MemoryTokenCache();

    await expect(probeServer(oauth(server.url), { tokens })).resolves.toMatchObject({ ok: true });
    await expect(probeServer(oauth(server.url), { tokens })).resolves.toMatchObject({ ok: true });

    expect(auth.requests).toHaveLength(1);
    expect(auth.requests[0]?.params.get('resource')).toBe(server.url);
    expect(seen).toEqual(['Bearer fixture-token-1', 'Bearer fixture-token-1']);
  });

  it('discovers from the resource_metadata of the 401 challenge when the metadata is not at a well-known URL; asks for its scopes', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600 }));
    const { server, seen } = await protectedServer(auth, {
      metadata: { path: '/metadata/prm', document: (url) => ({ resource: url, authorization_servers: [auth.origin], scopes_supported: ['mcp:tools', 'mcp:read'] }) },
    });
    await expect(probeServer(oauth(server.url), { tokens: new MemoryTokenCache() })).resolves.toMatchObject({ ok: true });
    expect(auth.requests).toHaveLength(1);
    expect(auth.requests[0]?.params.get('scope')).toBe('mcp:tools mcp:read');
    expect(auth.requests[0]?.params.get('resource')).toBe(server.url);
    expect(seen[0]).toBeUndefined();
    expect(seen.at(-1)).toBe('Bearer fixture-token-1');
  });

  it('sends the resource of protected-resource metadata without a path as written: no trailing slash', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600 }));
    const { server } = await protectedServer(auth, {
      metadata: { path: '/.well-known/oauth-protected-resource', document: (url) => ({ resource: new URL(url).origin, authorization_servers: [auth.origin] }) },
    });
    await expect(probeServer(oauth(server.url), { tokens: new MemoryTokenCache() })).resolves.toMatchObject({ ok: true });
    expect(auth.requests[0]?.params.get('resource')).toBe(new URL(server.url).origin);
  });

  it('steps up once on a 403 insufficient_scope: a token with the configured and the challenged scope, then the request again', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600 }));
    const scopeOf = (header: string | undefined) => {
      const issued = Number(header?.replace('Bearer fixture-token-', ''));
      return auth.requests[issued - 1]?.params.get('scope')?.split(' ') ?? [];
    };
    const server = await started(
      startV2Server({ authorize: (header) => auth.accepts(header), missingScope: (header) => (scopeOf(header).includes('mcp:write') ? undefined : 'mcp:write') }),
    );
    const config = oauth(server.url, { token_url: auth.tokenUrl, scope: 'mcp:read' });
    await expect(probeServer(config, { tokens: new MemoryTokenCache() })).resolves.toMatchObject({ ok: true });
    expect(auth.requests.map((request) => request.params.get('scope'))).toEqual(['mcp:read', 'mcp:read mcp:write']);

    const stubborn = await started(startV2Server({ authorize: (header) => auth.accepts(header), missingScope: () => 'mcp:admin' }));
    const refused = await probeServer(oauth(stubborn.url, { token_url: auth.tokenUrl }), { tokens: new MemoryTokenCache() });
    expect(refused).toMatchObject({ ok: false, error: { code: 'UPSTREAM_AUTH_FAILED' } });
    expect(auth.requests).toHaveLength(4);
  });

  it('steps up once on a 403 insufficient_scope WebSocket handshake too; a second refusal is final', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600 }));
    const scopeOf = (header: string | undefined) => {
      const issued = Number(header?.replace('Bearer fixture-token-', ''));
      return auth.requests[issued - 1]?.params.get('scope')?.split(' ') ?? [];
    };
    const ws = (url: string): WebSocketServerConfig => ({
      name: 'oauth-ws-scope',
      type: 'websocket',
      endpoint: url,
      timeout: 3000,
      authentication: { type: 'oauth2', client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret, token_url: auth.tokenUrl, scope: 'mcp:read' },
    });
    const server = await started(
      startWsServer({ authorize: (header) => auth.accepts(header), missingScope: (header) => (scopeOf(header).includes('mcp:write') ? undefined : 'mcp:write') }),
    );
    await expect(probeServer(ws(server.url), { tokens: new MemoryTokenCache() })).resolves.toMatchObject({ ok: true });
    expect(auth.requests.map((request) => request.params.get('scope'))).toEqual(['mcp:read', 'mcp:read mcp:write']);

    const stubborn = await started(startWsServer({ authorize: (header) => auth.accepts(header), missingScope: () => 'mcp:admin' }));
    const refused = await probeServer(ws(stubborn.url), { tokens: new MemoryTokenCache() });
    expect(refused).toMatchObject({ ok: false, error: { code: 'UPSTREAM_AUTH_FAILED' } });
    expect(auth.requests).toHaveLength(4);
  });

  it('fetches a new token shortly before the cached one expires', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 10 }));
    const { server, seen } = await protectedServer(auth);
    let now = 1_000_000;
    const deps = { tokens: new MemoryTokenCache(), now: () => now };
    const config = oauth(server.url, { token_url: auth.tokenUrl });

    await expect(probeServer(config, deps)).resolves.toMatchObject({ ok: true });
    now += 8_000; // still 2 s of its 10 s left: a tenth of the lifetime is the margin
    await expect(probeServer(config, deps)).resolves.toMatchObject({ ok: true });
    expect(auth.requests).toHaveLength(1);
    now += 1_500; // inside the margin
    await expect(probeServer(config, deps)).resolves.toMatchObject({ ok: true });
    expect(auth.requests).toHaveLength(2);
    expect(seen).toEqual(['Bearer fixture-token-1', 'Bearer fixture-token-1', 'Bearer fixture-token-2']);
  });

  it('fetches a new token when the server answers 401 to the cached one', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600 }));
    const { server, seen } = await protectedServer(auth);
    const tokens = new MemoryTokenCache();
    const config = oauth(server.url, { token_url: auth.tokenUrl });

    await expect(probeServer(config, { tokens })).resolves.toMatchObject({ ok: true });
    auth.revokeAll();
    await expect(probeServer(config, { tokens })).resolves.toMatchObject({ ok: true });
    expect(auth.requests).toHaveLength(2);
    expect(seen).toEqual(['Bearer fixture-token-1', 'Bearer fixture-token-1', 'Bearer fixture-token-2']);
  });

  it('shares one token request between concurrent probes', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600 }));
    const { server } = await protectedServer(auth);
    const tokens = new MemoryTokenCache();
    const config = oauth(server.url, { token_url: auth.tokenUrl });
    const results = await Promise.all([probeServer(config, { tokens }), probeServer(config, { tokens }), probeServer(config, { tokens })]);
    expect(results.every((r) => r.ok)).toBe(true);
    expect(auth.requests).toHaveLength(1);
  });

  it('maps refused client credentials to UPSTREAM_AUTH_FAILED without quoting the token endpoint', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600 }));
    const { server, seen } = await protectedServer(auth);
    const result = await probeServer(oauth(server.url, { token_url: auth.tokenUrl, client_secret: 'wrong' }));
    expect(result).toMatchObject({ ok: false, error: { code: 'UPSTREAM_AUTH_FAILED' } });
    if (!result.ok) {
      expect(result.error.message).not.toContain('FIXTURE-TOKEN-ERROR-TEXT');
      expect(result.error.message).not.toContain('wrong');
    }
    expect(seen).toEqual([]);
  });

  it('maps a server that refuses even a fresh token to UPSTREAM_AUTH_FAILED', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600 }));
    const server = await started(startV2Server({ authorize: () => false }));
    const result = await probeServer(oauth(server.url, { token_url: auth.tokenUrl }));
    expect(result).toMatchObject({ ok: false, error: { code: 'UPSTREAM_AUTH_FAILED' } });
    // One token, refused; one more after the 401, refused again.
    expect(auth.requests).toHaveLength(2);
  });

  it('keys the cache by the secret: a changed secret never reuses the old token', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600 }));
    const { server } = await protectedServer(auth);
    const tokens = new MemoryTokenCache();
    await expect(probeServer(oauth(server.url, { token_url: auth.tokenUrl }), { tokens })).resolves.toMatchObject({ ok: true });
    const changed = await probeServer(oauth(server.url, { token_url: auth.tokenUrl, client_secret: 'rotated' }), { tokens });
    expect(changed).toMatchObject({ ok: false, error: { code: 'UPSTREAM_AUTH_FAILED' } });
    expect(auth.requests).toHaveLength(2);
  });

  it('authenticates a WebSocket handshake with the token and refetches it after a 401', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600 }));
    const server = await started(startWsServer({ authorize: (header) => auth.accepts(header) }));
    const tokens = new MemoryTokenCache();
    const config: WebSocketServerConfig = {
      name: 'oauth-ws',
      type: 'websocket',
      endpoint: server.url,
      timeout: 3000,
      authentication: { type: 'oauth2', client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret, token_url: auth.tokenUrl },
    };
    await expect(probeServer(config, { tokens })).resolves.toMatchObject({ ok: true, era: '2025' });
    await expect(probeServer(config, { tokens })).resolves.toMatchObject({ ok: true });
    expect(auth.requests).toHaveLength(1);
    auth.revokeAll();
    await expect(probeServer(config, { tokens })).resolves.toMatchObject({ ok: true });
    expect(auth.requests).toHaveLength(2);
  });
});

describe('oauth2 private_key_jwt (RFC 7523)', () => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const ed = generateKeyPairSync('ed25519');
  const pkcs8 = (key: typeof rsa.privateKey) => key.export({ format: 'pem', type: 'pkcs8' }).toString();
  const jwk = (key: typeof rsa.privateKey, kid: string) => JSON.stringify({ ...key.export({ format: 'jwk' }), kid });

  function jwtConfig(endpoint: string, authentication: Record<string, unknown>): HttpServerConfig {
    return { name: 'jwt-test', type: 'http', endpoint, timeout: 3000, authentication: { type: 'oauth2', client_id: CLIENT.clientId, ...authentication } as never };
  }

  it.each([
    ['an RSA key in PKCS#8 PEM: RS256 by default, the configured key_id', rsa.publicKey, { private_key: pkcs8(rsa.privateKey), key_id: 'rsa-1' }, 'RS256', 'rsa-1'],
    ['an RSA key in PKCS#1 PEM, PS256 asked for', rsa.publicKey, { private_key: rsa.privateKey.export({ format: 'pem', type: 'pkcs1' }).toString(), algorithm: 'PS256' }, 'PS256', undefined],
    ['an EC P-256 key as a JWK: ES256, the JWK kid', ec.publicKey, { private_key: jwk(ec.privateKey, 'ec-jwk') }, 'ES256', 'ec-jwk'],
    ['an Ed25519 key in PEM: EdDSA', ed.publicKey, { private_key: pkcs8(ed.privateKey) }, 'EdDSA', undefined],
  ])('signs the client assertion with %s', async (_name, publicKey, authentication, alg, kid) => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600, publicKey }));
    const { server, seen } = await protectedServer(auth, { discoverable: true });
    const result = await probeServer(jwtConfig(server.url, authentication), { tokens: new MemoryTokenCache() });
    expect(result).toMatchObject({ ok: true });
    expect(auth.assertions).toHaveLength(1);
    expect(auth.assertions[0]?.header).toEqual({ alg, typ: 'JWT', ...(kid === undefined ? {} : { kid }) });
    expect(auth.assertions[0]?.claims).toMatchObject({ iss: CLIENT.clientId, sub: CLIENT.clientId, aud: auth.origin });
    expect(auth.requests[0]?.params.get('client_secret')).toBeNull();
    expect(auth.requests[0]?.authorization).toBeUndefined();
    expect(seen.at(-1)).toBe('Bearer fixture-token-1');
  });

  it('a key the authorization server does not know is UPSTREAM_AUTH_FAILED, and the message quotes no key', async () => {
    const auth = await started(startAuthServer({ ...CLIENT, expiresIn: 3600, publicKey: rsa.publicKey }));
    const { server } = await protectedServer(auth, { discoverable: true });
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const privateKey = pkcs8(other.privateKey);
    const result = await probeServer(jwtConfig(server.url, { private_key: privateKey }), { tokens: new MemoryTokenCache() });
    expect(result).toMatchObject({ ok: false, error: { code: 'UPSTREAM_AUTH_FAILED' } });
    if (!result.ok) expect(result.error.message).not.toContain(privateKey.split('\n')[1]?.slice(0, 20));
    expect(auth.assertions).toHaveLength(0);
  });
});
