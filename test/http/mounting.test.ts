import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ADAPTERS } from '../support/adapters.js';
import {
  api,
  createKey,
  createServer,
  expectError,
  expectSuccess,
  httpServer,
  send,
  serveForSuite,
} from '../support/http-client.js';

/** A response the fleet did not produce: no request id, no fleet envelope. */
function expectNotFleet(res: { status: number; headers: Headers; body: unknown }): void {
  expect(res.status).toBe(404);
  expect(res.headers.get('x-request-id')).toBeNull();
  expect((res.body as { success?: unknown } | undefined)?.success).toBeUndefined();
}

describe.each(ADAPTERS)('mounting ($name)', (adapter) => {
  describe("mounted under '/api'", () => {
    const suite = serveForSuite(adapter, { mount: '/api' });

    it('serves /api/v1/servers', async () => {
      const { served } = suite;
      expect(served.url).toBe(`${served.origin}/api/v1`);
      const client = api(served, await createKey(served, { account: 'mounted' }));
      const created = await createServer(client, httpServer({ name: 'under-api' }));
      const res = await send(served.origin, 'GET', `/api/v1/servers/${created.id}`, {}, client.key);
      expect(expectSuccess(res, 200).name).toBe('under-api');
      const list = await send(served.origin, 'GET', '/api/v1/servers?limit=5', {}, client.key);
      expect(list.body.pagination).toEqual({ page: 1, limit: 5, total: 1, pages: 1 });
    });

    it('the host app still answers its own route', async () => {
      const res = await send(suite.served.origin, 'GET', '/host-route');
      expect(res.status).toBe(200);
      expect(res.text).toBe('host');
    });

    it('paths outside the prefix are not handled by the fleet', async () => {
      const key = await createKey(suite.served, { account: 'mounted' });
      expectNotFleet(await send(suite.served.origin, 'GET', '/v1/servers', {}, key));
      expectNotFleet(await send(suite.served.origin, 'GET', '/api/servers', {}, key));
      expectNotFleet(await send(suite.served.origin, 'GET', '/api/v2/servers', {}, key));
      expectNotFleet(await send(suite.served.origin, 'GET', '/api/v1servers', {}, key));
    });

    it("an unknown route under the prefix is the fleet's 404 with the path below the mount point", async () => {
      const key = await createKey(suite.served, { account: 'mounted' });
      expectError(await send(suite.served.origin, 'GET', '/api/v1/nope', {}, key), 404, 'NOT_FOUND', { path: '/nope' });
      expectError(await send(suite.served.origin, 'GET', '/api/v1', {}, key), 404, 'NOT_FOUND', { path: '/' });
    });
  });

  describe("at the root with the fleet option prefix '/fleet'", () => {
    const suite = serveForSuite(adapter, { prefix: '/fleet' });

    it('moves the API to /fleet', async () => {
      const { served } = suite;
      expect(served.url).toBe(`${served.origin}/fleet`);
      const key = await createKey(served, { account: 'prefixed' });
      const res = await send(served.origin, 'POST', '/fleet/servers', { body: httpServer() }, key);
      expectSuccess(res, 201);
      expect((await send(served.origin, 'GET', '/fleet/servers', {}, key)).body.pagination.total).toBe(1);
      expectNotFleet(await send(served.origin, 'GET', '/v1/servers', {}, key));
      expect((await send(served.origin, 'GET', '/host-route')).text).toBe('host');
    });
  });

  describe("mounted under '/api' with prefix '/fleet/v2'", () => {
    const suite = serveForSuite(adapter, { mount: '/api', prefix: '/fleet/v2' });

    it('serves /api/fleet/v2/servers', async () => {
      const { served } = suite;
      expect(served.url).toBe(`${served.origin}/api/fleet/v2`);
      const key = await createKey(served, { account: 'deep' });
      const created = expectSuccess(await send(served.origin, 'POST', '/api/fleet/v2/servers', { body: httpServer() }, key), 201);
      expect(expectSuccess(await send(served.origin, 'GET', `/api/fleet/v2/servers/${created.id}`, {}, key), 200).id).toBe(created.id);
      expectError(await send(served.origin, 'PATCH', '/api/fleet/v2/servers', {}, key), 405, 'METHOD_NOT_ALLOWED');
      expectNotFleet(await send(served.origin, 'GET', '/api/v1/servers', {}, key));
    });
  });

  describe('at the root with the default prefix', () => {
    const suite = serveForSuite(adapter);

    it('serves /v1 and leaves the host route alone', async () => {
      expect(suite.served.url).toBe(`${suite.served.origin}/v1`);
      const key = await createKey(suite.served, { account: 'root' });
      expectSuccess(await send(suite.served.origin, 'GET', '/v1/servers', {}, key), 200);
      expect((await send(suite.served.origin, 'GET', '/host-route')).text).toBe('host');
      expectNotFleet(await send(suite.served.origin, 'GET', '/servers', {}, key));
    });
  });
});

/** GET with the request target sent exactly as given (fetch would resolve dot segments before sending). */
function rawGet(origin: string, target: string, key: string): Promise<{ status: number; body: { success?: boolean; data?: unknown } | undefined; requestId: string | undefined }> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path: target, headers: { authorization: `Bearer ${key}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let body: { success?: boolean } | undefined;
        try {
          body = JSON.parse(text) as { success?: boolean };
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body, requestId: res.headers['x-request-id'] as string | undefined });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the Hono adapter reads the path as the URL parser resolves it (the raw target is used only when that changes nothing)', () => {
  const hono = ADAPTERS.find((a) => a.name === 'hono');
  if (hono === undefined) throw new Error('no hono adapter');
  const suite = serveForSuite(hono, { mount: '/api' });

  it('plain targets, dot segments and encoded dots route as before', async () => {
    const { served } = suite;
    const key = await createKey(served, { account: 'raw-paths' });
    await createServer(api(served, key), httpServer({ name: 'raw-one' }));
    const plain = await rawGet(served.origin, '/api/v1/servers?limit=5', key);
    expect(plain.status).toBe(200);
    expect((plain.body?.data as unknown[]).length).toBe(1);
    // `/api/v1/./servers` and `/api/v1/x/../servers` are `/api/v1/servers` to the URL parser, as they were to the adapter.
    for (const target of ['/api/v1/./servers', '/api/v1/x/../servers', '/api/v1/x/%2e%2E/servers']) {
      const res = await rawGet(served.origin, target, key);
      expect({ target, status: res.status }).toEqual({ target, status: 200 });
      expect((res.body?.data as unknown[]).length).toBe(1);
    }
    // Resolved out of the mount: the host's route answers, not the fleet.
    const out = await rawGet(served.origin, '/api/v1/../../host-route', key);
    expect(out.status).toBe(200);
    expect(out.requestId).toBeUndefined();
  });
});

describe('the Hono app answers a read at once', () => {
  it('fetch gives a Response, not a promise, for a GET the fleet answers from its memory; a wrapped handle still answers', async () => {
    const { createFleet } = await import('@mcp-fleet/core');
    const { createFleetApp } = await import('@mcp-fleet/hono');
    const fleet = createFleet();
    const { secret } = (await fleet.keys.create({ account: 'acme', tier: 'pro' }))._unsafeUnwrap();
    const get = () => new Request('http://fleet.test/v1/servers', { headers: { authorization: `Bearer ${secret}` } });
    const now = createFleetApp(fleet).fetch(get());
    expect(now).toBeInstanceOf(Response);
    expect((now as Response).status).toBe(200);
    // An embedder's wrapper of handle is called, as it was.
    let called = 0;
    const wrapped = createFleetApp({ ...fleet, handle: (request, context) => (called++, fleet.handle(request, context)) });
    expect((await wrapped.fetch(get())).status).toBe(200);
    expect(called).toBe(1);
    await fleet.close();
  });
});
