/**
 * The reference server's OAuth variables (docs/configuration.md "The reference server"): MCP_FLEET_OAUTH_ISSUER,
 * MCP_FLEET_OAUTH_AUDIENCE, MCP_FLEET_OAUTH_ACCOUNT_CLAIM, MCP_FLEET_OAUTH_ISSUERS and MCP_FLEET_OAUTH_RESOURCE, as a
 * real process against a loopback issuer of the test's own. Runs the built `examples/reference-server/dist/main.js`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { api, killLeftovers, removeTempDirs, runToExit, startServer, tempDir } from './support/reference-server.js';

afterEach(async () => {
  await killLeftovers();
  await removeTempDirs();
});

let issuer: string;
let server: Server;
let sign: (claims: Record<string, unknown>, audience: string) => Promise<string>;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'ref-1', alg: 'ES256', use: 'sig' };
  server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/.well-known/openid-configuration') return res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
    if (req.url === '/jwks') return res.end(JSON.stringify({ keys: [jwk] }));
    res.statusCode = 404;
    res.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  sign = (claims, audience) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'ref-1' })
      .setIssuer(issuer)
      .setAudience(audience)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(pair.privateKey);
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('the reference server with OAuth', () => {
  it('accepts the issuer\'s tokens (account from MCP_FLEET_OAUTH_ACCOUNT_CLAIM), serves the metadata and says where it is', async () => {
    const audience = 'https://fleet.example.test/v1/mcp';
    const running = await startServer({
      cwd: await tempDir(),
      env: {
        MCP_FLEET_STORE: 'memory://',
        MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1',
        MCP_FLEET_OAUTH_ISSUER: issuer,
        MCP_FLEET_OAUTH_AUDIENCE: `${audience}, https://other.example.test`,
        MCP_FLEET_OAUTH_ACCOUNT_CLAIM: 'org_id',
      },
    });
    expect(running.stdout()).toContain(`OAuth      ${running.origin}/.well-known/oauth-protected-resource/v1/mcp`);
    const bearer = await sign({ sub: 'someone|with-a-pipe', org_id: 'acme', scope: 'servers:read servers:write' }, audience);
    const created = await api(running.url, bearer, 'POST', '/servers', { name: 'via-oauth', type: 'http', endpoint: 'https://mcp.example.com/mcp' });
    expect(created.status).toBe(201);
    expect((await api(running.url, bearer, 'GET', '/servers')).body.pagination.total).toBe(1);
    // Another org's token sees nothing of acme's.
    expect((await api(running.url, await sign({ org_id: 'globex', scope: 'servers:read' }, audience), 'GET', '/servers')).body.pagination.total).toBe(0);
    expect((await api(running.url, await sign({ org_id: 'acme', scope: 'servers:read' }, 'https://nobody.example.test'), 'GET', '/servers')).status).toBe(401);
    const metadata = await fetch(`${running.origin}/.well-known/oauth-protected-resource/v1/mcp`);
    expect(await metadata.json()).toEqual({
      resource: `${running.url}/mcp`,
      authorization_servers: [issuer],
      scopes_supported: ['tool_calls:read', 'tool_calls:write'],
      bearer_methods_supported: ['header'],
    });
    const challenge = await api(running.url, null, 'POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} });
    expect(challenge.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${running.origin}/.well-known/oauth-protected-resource/v1/mcp", scope="tool_calls:read tool_calls:write"`);
    expect(running.stdout() + running.stderr()).not.toContain(bearer);
    await running.stop();
  });

  it('takes several issuers as JSON (MCP_FLEET_OAUTH_ISSUERS) and a public resource URL (MCP_FLEET_OAUTH_RESOURCE)', async () => {
    const running = await startServer({
      cwd: await tempDir(),
      env: {
        MCP_FLEET_STORE: 'memory://',
        MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1',
        MCP_FLEET_OAUTH_ISSUERS: JSON.stringify([{ issuer, audiences: [] }, { issuer: 'https://idp.example.test/', audiences: ['x'] }]),
        MCP_FLEET_OAUTH_RESOURCE: 'https://fleet.example.test/v1',
      },
    });
    expect(running.stdout()).toContain('OAuth      https://fleet.example.test/.well-known/oauth-protected-resource/v1/mcp');
    const bearer = await sign({ sub: 'ada', scope: 'servers:read' }, 'https://fleet.example.test/v1');
    expect((await api(running.url, bearer, 'GET', '/servers')).status).toBe(200);
    await running.stop();
  });

  it.each([
    ['MCP_FLEET_OAUTH_ISSUER', { MCP_FLEET_OAUTH_ISSUER: 'not a url', MCP_FLEET_OAUTH_AUDIENCE: 'a' }],
    ['MCP_FLEET_OAUTH_AUDIENCE', { MCP_FLEET_OAUTH_ISSUER: 'https://idp.example.test/' }],
    ['MCP_FLEET_OAUTH_AUDIENCE', { MCP_FLEET_OAUTH_AUDIENCE: 'a' }],
    ['MCP_FLEET_OAUTH_ACCOUNT_CLAIM', { MCP_FLEET_OAUTH_ISSUER: 'https://idp.example.test/', MCP_FLEET_OAUTH_AUDIENCE: 'a', MCP_FLEET_OAUTH_ACCOUNT_CLAIM: 'two words' }],
    ['MCP_FLEET_OAUTH_ISSUERS', { MCP_FLEET_OAUTH_ISSUERS: '[{"issuer":' }],
    ['MCP_FLEET_OAUTH_ISSUERS', { MCP_FLEET_OAUTH_ISSUERS: '[{"issuer":"https://idp.example.test/"}]' }],
    ['MCP_FLEET_OAUTH_ISSUERS', { MCP_FLEET_OAUTH_ISSUERS: '[{"issuer":"https://idp.example.test/","audiences":["a"],"algorithms":["none"]}]' }],
    ['MCP_FLEET_OAUTH_RESOURCE', { MCP_FLEET_OAUTH_RESOURCE: 'https://fleet.example.test/v1' }],
  ] as [string, Record<string, string>][])('an invalid value exits 2 naming %s, never printing a secret', async (name, env) => {
    const secret = 'introspection-secret-0123456789';
    const issuers = env.MCP_FLEET_OAUTH_ISSUERS?.replace('"audiences":["a"]', `"audiences":["a"],"introspection":{"endpoint":"https://idp.example.test/i","clientId":"c","clientSecret":"${secret}"}`);
    const exit = await runToExit({ cwd: await tempDir(), env: { MCP_FLEET_STORE: 'memory://', ...env, ...(issuers !== undefined && { MCP_FLEET_OAUTH_ISSUERS: issuers }) } });
    expect(exit.code).toBe(2);
    expect(exit.stderr).toContain(name);
    expect(exit.stderr + exit.stdout).not.toContain(secret);
  });
});
