import { createHash, randomBytes } from 'node:crypto';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type IdentityProvider, startIdentityProvider } from '../support/identity-provider.js';

/** The test identity provider itself: what the OAuth suites lean on must hold, or their failures mean nothing. */
describe('the test identity provider (oidc-provider on loopback)', () => {
  const RESOURCE = 'http://127.0.0.1:1/v1/mcp';
  let idp: IdentityProvider;
  beforeAll(async () => {
    idp = await startIdentityProvider({ users: { alice: { account: 'acme' } } });
  });
  afterAll(() => idp.close());

  const verify = (token: string) => jwtVerify(token, createRemoteJWKSet(new URL(idp.jwksUri)), { issuer: idp.issuer, audience: RESOURCE });

  it('publishes its metadata: registration, PKCE S256, client credentials, its JWKS', async () => {
    const metadata = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(metadata.issuer).toBe(idp.issuer);
    expect(metadata.jwks_uri).toBe(idp.jwksUri);
    expect(metadata.registration_endpoint).toBe(`${idp.issuer}/reg`);
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
    expect(metadata.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'client_credentials']));
  });

  it('mints a JWT access token for a resource indicator, with its claims and scopes', async () => {
    const tokens = await idp.mint({ resource: RESOURCE, scope: 'tool_calls:read', claims: { account: 'globex' } });
    const { payload, protectedHeader } = await verify(tokens.access_token);
    expect(protectedHeader).toMatchObject({ alg: 'RS256', typ: 'at+jwt', kid: idp.signingKid });
    expect(payload).toMatchObject({ iss: idp.issuer, aud: RESOURCE, scope: 'tool_calls:read', account: 'globex' });
  });

  it('runs the authorization code flow with PKCE for a registered public client, login and consent answered', async () => {
    const redirect = 'http://127.0.0.1:9/callback';
    const client = await idp.register({ redirect_uris: [redirect], token_endpoint_auth_method: 'none', grant_types: ['authorization_code'], response_types: ['code'] });
    const verifier = randomBytes(32).toString('base64url');
    const authorization = new URL(`${idp.issuer}/auth`);
    authorization.search = new URLSearchParams({
      client_id: client.client_id,
      response_type: 'code',
      redirect_uri: redirect,
      scope: 'tool_calls:write',
      state: 's1',
      resource: RESOURCE,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();
    const back = await idp.authorize(authorization, { subject: 'alice' });
    expect(`${back.origin}${back.pathname}`).toBe(redirect);
    expect(back.searchParams.get('state')).toBe('s1');
    const code = back.searchParams.get('code');
    expect(code).toBeTruthy();
    const response = await fetch(`${idp.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: code!, redirect_uri: redirect, client_id: client.client_id, code_verifier: verifier, resource: RESOURCE }),
    });
    const tokens = (await response.json()) as { access_token: string };
    expect(response.status).toBe(200);
    const { payload } = await verify(tokens.access_token);
    expect(payload).toMatchObject({ sub: 'alice', account: 'acme', scope: 'tool_calls:write', aud: RESOURCE });

    const refused = await idp.authorize(authorization, { subject: 'alice', consent: false });
    // The session from the first walk is not reused (a fresh cookie jar): login again, then refuse.
    expect(refused.searchParams.get('error')).toBe('access_denied');
  });

  it('rotates its signing key at runtime, keeping its clients and publishing both keys', async () => {
    const before = idp.signingKid;
    const kid = await idp.rotateKeys();
    expect(kid).not.toBe(before);
    const jwks = (await (await fetch(idp.jwksUri)).json()) as { keys: { kid: string }[] };
    expect(jwks.keys.map((key) => key.kid)).toEqual([kid, before]);
    const tokens = await idp.mint({ resource: RESOURCE });
    expect(decodeProtectedHeader(tokens.access_token).kid).toBe(kid);
    await verify(tokens.access_token);
    await idp.rotateKeys({ retire: true });
    const after = (await (await fetch(idp.jwksUri)).json()) as { keys: { kid: string }[] };
    expect(after.keys.map((key) => key.kid)).toEqual([idp.signingKid]);
  });
});
