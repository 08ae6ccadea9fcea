import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ADAPTERS } from '../support/adapters.js';
import {
  type ApiResponse,
  createServer,
  expectError,
  expectInvalid,
  expectSuccess,
  freshClient,
  httpServer,
  serveForSuite,
  stdioServer,
  wsServer,
} from '../support/http-client.js';

const TOKEN = 'SeCrEt-bearer-token-7f3a91';
const CLIENT_SECRET = 'SeCrEt-client-secret-c0ffee';
const ENV_VALUE = 'SeCrEt-env-value-5ad1e';
const ENV_VALUE_2 = 'SeCrEt-env-other-77b2';
const NEW_TOKEN = 'SeCrEt-rotated-token-0a0a';
const EC_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
/** A private_key_jwt key (write-only like client_secret): a PEM, and the private part `d` of the same key as a JWK. */
const PRIVATE_KEY_PEM = EC_KEY.export({ format: 'pem', type: 'pkcs8' }).toString();
const PRIVATE_KEY_D = EC_KEY.export({ format: 'jwk' }).d as string;
const PEM_BODY = PRIVATE_KEY_PEM.split('\n')[1] as string;
const SECRETS = [TOKEN, CLIENT_SECRET, ENV_VALUE, ENV_VALUE_2, NEW_TOKEN, PEM_BODY, PRIVATE_KEY_D];

/** No response text, and no header, carries any of the secrets (nor their common encodings). */
function expectNoSecrets(responses: readonly ApiResponse[]): void {
  for (const res of responses) {
    const headers = [...res.headers.entries()].map(([k, v]) => `${k}: ${v}`).join('\n');
    for (const secret of SECRETS) {
      for (const form of [secret, secret.toLowerCase(), encodeURIComponent(secret), Buffer.from(secret).toString('base64')]) {
        expect(res.text, `status ${res.status} body leaks ${secret}`).not.toContain(form);
        expect(headers).not.toContain(form);
      }
    }
  }
}

describe.each(ADAPTERS)('secrets never leave ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { stdio: { commands: ['node'] } });

  it('create, get, update, list and delete show no token, client_secret or env value', async () => {
    const client = await freshClient(suite.served);
    const seen: ApiResponse[] = [];
    const keep = (res: ApiResponse) => (seen.push(res), res);

    const http = expectSuccess(keep(await client.post('/servers', httpServer({ authentication: { type: 'bearer', token: TOKEN } }))), 201);
    const ws = expectSuccess(
      keep(await client.post('/servers', wsServer({ authentication: { type: 'oauth2', client_id: 'my-client', client_secret: CLIENT_SECRET } }))),
      201,
    );
    const stdio = expectSuccess(keep(await client.post('/servers', stdioServer({ env: { ZETA_KEY: ENV_VALUE, ALPHA_KEY: ENV_VALUE_2 } }))), 201);
    const jwtAuth = { type: 'oauth2', client_id: 'jwt-client', private_key: PRIVATE_KEY_PEM, key_id: 'k-1', algorithm: 'ES256' };
    const jwt = expectSuccess(keep(await client.post('/servers', httpServer({ name: 'jwt-server', authentication: jwtAuth }))), 201);
    expect(expectSuccess(keep(await client.get(`/servers/${jwt.id}`)), 200).authentication).toEqual({ type: 'oauth2', client_id: 'jwt-client', key_id: 'k-1', algorithm: 'ES256' });
    const jwk = JSON.stringify({ ...EC_KEY.export({ format: 'jwk' }), kid: 'k-2' });
    expectSuccess(keep(await client.put(`/servers/${jwt.id}`, { authentication: { type: 'oauth2', client_id: 'jwt-client', private_key: jwk } })), 200);

    expect(expectSuccess(keep(await client.get(`/servers/${http.id}`)), 200).authentication).toEqual({ type: 'bearer' });
    expect(expectSuccess(keep(await client.get(`/servers/${ws.id}`)), 200).authentication).toEqual({ type: 'oauth2', client_id: 'my-client' });
    const stdioDetail = expectSuccess(keep(await client.get(`/servers/${stdio.id}`)), 200);
    expect(stdioDetail.env_keys).toEqual(['ALPHA_KEY', 'ZETA_KEY']);
    expect(stdioDetail).not.toHaveProperty('env');

    expectSuccess(keep(await client.get('/servers')), 200);
    expectSuccess(keep(await client.get('/servers?type=http')), 200);
    expectSuccess(keep(await client.put(`/servers/${http.id}`, { name: 'renamed-with-secret' })), 200);
    expectSuccess(keep(await client.put(`/servers/${http.id}`, { authentication: { type: 'bearer', token: NEW_TOKEN } })), 200);
    expectSuccess(keep(await client.put(`/servers/${ws.id}`, { timeout: 5000 })), 200);
    expectSuccess(keep(await client.put(`/servers/${stdio.id}`, { args: ['--x'] })), 200);
    expectSuccess(keep(await client.delete(`/servers/${ws.id}`)), 200);

    expectNoSecrets(seen);
    expect(seen).toHaveLength(16);
  });

  it('errors show no secrets: 400 on another field, 409, 400 on the secret itself, malformed JSON, 415, 405', async () => {
    const client = await freshClient(suite.served);
    const seen: ApiResponse[] = [];
    const keep = (res: ApiResponse) => (seen.push(res), res);
    const existing = await createServer(client, httpServer({ name: 'exists', authentication: { type: 'bearer', token: TOKEN } }));
    const json = { 'content-type': 'application/json' };

    // 400 that fails on another field while the secrets are valid
    expectInvalid(keep(await client.post('/servers', httpServer({ timeout: 0, authentication: { type: 'bearer', token: TOKEN } }))), 'timeout');
    expectInvalid(
      keep(await client.post('/servers', wsServer({ endpoint: 'nope', authentication: { type: 'oauth2', client_id: 'c', client_secret: CLIENT_SECRET } }))),
      'endpoint',
    );
    expectInvalid(keep(await client.post('/servers', stdioServer({ working_directory: 'rel', env: { A: ENV_VALUE } }))), 'working_directory');
    // 400 on the secret fields themselves: the secret of the wrong shape, too long, in a wrong place
    expectInvalid(keep(await client.post('/servers', httpServer({ authentication: { type: 'bearer', token: TOKEN.repeat(400) } }))), 'authentication.token');
    expectInvalid(keep(await client.post('/servers', httpServer({ authentication: { type: 'oauth2', client_id: TOKEN } }))), 'authentication.client_secret');
    const both = { type: 'oauth2', client_id: 'c', client_secret: CLIENT_SECRET, private_key: PRIVATE_KEY_PEM };
    expectInvalid(keep(await client.post('/servers', httpServer({ authentication: both }))), 'authentication.private_key');
    const mismatch = { type: 'oauth2', client_id: 'c', private_key: PRIVATE_KEY_PEM, algorithm: 'RS256' };
    expectInvalid(keep(await client.post('/servers', httpServer({ authentication: mismatch }))), 'authentication.algorithm');
    const broken = { type: 'oauth2', client_id: 'c', private_key: PRIVATE_KEY_PEM.replace(PEM_BODY, PEM_BODY.slice(0, -4)) };
    expectInvalid(keep(await client.post('/servers', httpServer({ authentication: broken }))), 'authentication.private_key');
    expectInvalid(keep(await client.post('/servers', httpServer({ authentication: { type: TOKEN } }))), 'authentication.type');
    expectInvalid(keep(await client.post('/servers', httpServer({ authentication: { type: 'bearer', token: TOKEN, x: CLIENT_SECRET } }))), 'authentication.x');
    expectInvalid(keep(await client.post('/servers', stdioServer({ env: { NODE_OPTIONS: ENV_VALUE, OK: ENV_VALUE_2 } }))), 'env.NODE_OPTIONS');
    expectInvalid(keep(await client.post('/servers', stdioServer({ env: { B: ENV_VALUE.repeat(1600) } }))), 'env.B');
    expectInvalid(keep(await client.post('/servers', httpServer({ endpoint: `https://user:${TOKEN}@mcp.example.com/` }))), 'endpoint');
    expectInvalid(keep(await client.post('/servers', httpServer({ name: TOKEN, type: CLIENT_SECRET }))), 'type');
    // 409 with secrets in the body
    expectError(keep(await client.post('/servers', httpServer({ name: 'exists', authentication: { type: 'bearer', token: NEW_TOKEN } }))), 409, 'SERVER_NAME_EXISTS');
    // malformed JSON holding the secret
    expectInvalid(keep(await client.post('/servers', `{"authentication":{"type":"bearer","token":"${TOKEN}"`, { raw: true, headers: json })), 'body');
    expectInvalid(keep(await client.post('/servers', `{"token":"${TOKEN}",}`, { raw: true, headers: json })), 'body');
    expectInvalid(keep(await client.post('/servers', `"${CLIENT_SECRET}"`, { raw: true, headers: json })), 'body');
    expectInvalid(keep(await client.put(`/servers/${existing.id}`, `{"authentication":{"token":"${NEW_TOKEN}"}x`, { raw: true, headers: json })), 'body');
    // update failing with secrets in the patch
    expectInvalid(keep(await client.put(`/servers/${existing.id}`, { timeout: 0, authentication: { type: 'bearer', token: NEW_TOKEN } })), 'timeout');
    expectInvalid(keep(await client.put(`/servers/${existing.id}`, { authentication: { type: 'oauth2', client_secret: CLIENT_SECRET } })), 'authentication.client_id');
    // other errors with the secret in the body
    expectError(keep(await client.post('/servers', JSON.stringify({ token: TOKEN }), { raw: true, headers: { 'content-type': 'text/plain' } })), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectError(keep(await client.request('PATCH', '/servers', { body: { token: TOKEN } })), 405, 'METHOD_NOT_ALLOWED');

    expectNoSecrets(seen);
    // and the stored secret of the server is still not shown
    const detail = expectSuccess(await client.get(`/servers/${existing.id}`), 200);
    expect(detail.authentication).toEqual({ type: 'bearer' });
  });
});
