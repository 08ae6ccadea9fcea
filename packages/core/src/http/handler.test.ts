import Keyv from 'keyv';
import { describe, expect, it, vi } from 'vitest';
import type { Principal } from '../auth/scopes.js';
import { ERROR_CODES } from '../errors/codes.js';
import { createMemoryStore } from '../store.js';
import { createFleet } from '../fleet.js';
import type { FleetOptions } from '../options.js';
import type { ErrorHook } from './handler.js';
import { atOnce } from './at-once.js';

const ORIGIN = 'http://fleet.test';
const principal: Principal = { account: 'acme', tier: 'pro', scopes: null };
const authenticate = () => principal;

interface Envelope {
  success: boolean;
  data?: unknown;
  error?: { code: string; message: string; details: Record<string, unknown> };
  meta: { timestamp: string; request_id: string };
}

async function envelope(response: Response): Promise<Envelope> {
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const body = (await response.json()) as Envelope;
  expect(response.headers.get('x-request-id')).toBe(body.meta.request_id);
  expect(body.meta.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  return body;
}

/** A Keyv store that fails on every call, with an error that names internals a response must not show. */
const INTERNAL = 'ECONNREFUSED 10.1.2.3:6379 password=hunter2 at /srv/app/node_modules/keyv';
const brokenStore = () => {
  const fail = async () => {
    throw new Error(INTERNAL);
  };
  return { get: fail, set: fail, delete: fail, clear: fail, getMany: fail };
};

function fleetWith(options: FleetOptions = {}) {
  const errors: Parameters<ErrorHook>[] = [];
  const onError = vi.fn<ErrorHook>((...args) => {
    errors.push(args);
  });
  const fleet = createFleet({ onError, ...options });
  return { fleet, errors, onError };
}

const json = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  new Request(`${ORIGIN}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('the handler', () => {
  describe('storage outage', () => {
    it('answers 503 STORAGE_UNAVAILABLE with a generic message and empty details, and tells onError with the cause', async () => {
      const { fleet, errors } = fleetWith({ store: createMemoryStore({ records: new Keyv({ store: brokenStore(), throwOnErrors: true }) }) });
      const response = await fleet.handle(new Request(`${ORIGIN}/v1/servers`, { headers: { authorization: 'Bearer mcpf_abc', 'x-request-id': 'trace-1' } }));
      expect(response.status).toBe(503);
      const body = await envelope(response);
      expect(body).toEqual({
        success: false,
        error: { code: 'STORAGE_UNAVAILABLE', message: ERROR_CODES.STORAGE_UNAVAILABLE.message, details: {} },
        meta: { timestamp: expect.any(String), request_id: 'trace-1' },
      });
      const text = JSON.stringify(body);
      for (const internal of ['ECONNREFUSED', '10.1.2.3', 'hunter2', 'node_modules', 'stack']) expect(text).not.toContain(internal);

      expect(errors).toHaveLength(1);
      const [error, info] = errors[0] as Parameters<ErrorHook>;
      expect(error.code).toBe('STORAGE_UNAVAILABLE');
      expect(error.cause).toBeInstanceOf(Error);
      expect((error.cause as Error).message).toBe(INTERNAL);
      expect(info).toEqual({ requestId: 'trace-1', method: 'GET', path: '/servers' });
    });

    it('answers 503 for a write when records cannot be stored, with a custom authenticate', async () => {
      const { fleet, errors } = fleetWith({ store: createMemoryStore({ records: new Keyv({ store: brokenStore(), throwOnErrors: true }) }), authenticate });
      const response = await fleet.handle(json('POST', '/v1/servers', { name: 'weather', type: 'http', endpoint: 'https://w.example' }));
      expect(response.status).toBe(503);
      const body = await envelope(response);
      expect(body.error).toEqual({ code: 'STORAGE_UNAVAILABLE', message: ERROR_CODES.STORAGE_UNAVAILABLE.message, details: {} });
      expect(errors.map(([e]) => e.code)).toEqual(['STORAGE_UNAVAILABLE']);
    });

    it('answers 503 when the index store fails', async () => {
      const failingIndex = {
        commit: async () => {
          throw new Error(INTERNAL);
        },
        claimOf: async () => {
          throw new Error(INTERNAL);
        },
        range: async () => {
          throw new Error(INTERNAL);
        },
        count: async () => {
          throw new Error(INTERNAL);
        },
      };
      const { fleet } = fleetWith({ store: { ...createMemoryStore(), index: failingIndex }, authenticate });
      for (const request of [new Request(`${ORIGIN}/v1/servers`), json('POST', '/v1/servers', { name: 'w', type: 'http', endpoint: 'https://w.example' })]) {
        const response = await fleet.handle(request);
        expect(response.status).toBe(503);
        expect(JSON.stringify(await envelope(response))).not.toContain('ECONNREFUSED');
      }
    });
  });

  describe('unexpected errors', () => {
    it('an authenticate function that throws is 500 INTERNAL_ERROR with nothing internal in the body', async () => {
      const boom = new TypeError(`Cannot read properties of undefined (reading 'session') ${INTERNAL}`);
      const { fleet, errors } = fleetWith({
        authenticate: () => {
          throw boom;
        },
      });
      const response = await fleet.handle(new Request(`${ORIGIN}/v1/servers`));
      expect(response.status).toBe(500);
      const body = await envelope(response);
      expect(body.error).toEqual({ code: 'INTERNAL_ERROR', message: ERROR_CODES.INTERNAL_ERROR.message, details: {} });
      const text = JSON.stringify(body);
      for (const internal of ['session', 'TypeError', 'hunter2', '/srv/app', 'at ']) expect(text).not.toContain(internal);
      expect(errors).toHaveLength(1);
      expect(errors[0]?.[0].code).toBe('INTERNAL_ERROR');
      expect(errors[0]?.[0].cause).toBe(boom);
    });

    it('an authenticate function that rejects is 500 too', async () => {
      const { fleet, errors } = fleetWith({ authenticate: async () => Promise.reject(new Error('db down')) });
      const response = await fleet.handle(new Request(`${ORIGIN}/v1/servers`));
      expect(response.status).toBe(500);
      expect(JSON.stringify(await envelope(response))).not.toContain('db down');
      expect(errors).toHaveLength(1);
    });

    it('an authenticate function that returns a malformed principal is 500, not a pass', async () => {
      for (const bad of [{ account: '', tier: 'pro', scopes: null }, { account: 'a', tier: 'gold', scopes: null }, { account: 'a', tier: 'pro', scopes: ['root'] }, { account: 'a', tier: 'pro', scopes: null, tools: 'x__*' }, { account: 'a', tier: 'pro', scopes: null, tools: [1] }, 'acme']) {
        const { fleet } = fleetWith({ authenticate: () => bad as unknown as Principal });
        const response = await fleet.handle(new Request(`${ORIGIN}/v1/servers`));
        expect(response.status).toBe(500);
        expect((await envelope(response)).error?.code).toBe('INTERNAL_ERROR');
      }
    });

    it('an authenticate function that returns null is 401 with WWW-Authenticate, and onError is not called', async () => {
      const { fleet, onError } = fleetWith({ authenticate: () => null });
      const response = await fleet.handle(new Request(`${ORIGIN}/v1/servers`));
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect((await envelope(response)).error).toMatchObject({ code: 'UNAUTHORIZED', details: {} });
      expect(onError).not.toHaveBeenCalled();
    });

    it('onError is not called for 4xx answers', async () => {
      const { fleet, onError } = fleetWith({ authenticate });
      await fleet.handle(new Request(`${ORIGIN}/v1/nowhere`));
      await fleet.handle(json('POST', '/v1/servers', { name: '' }));
      await fleet.handle(new Request(`${ORIGIN}/v1/servers/srv_000000000000000000000000`));
      expect(onError).not.toHaveBeenCalled();
    });
  });

  describe('createFleet refuses a misconfiguration', () => {
    it('a Keyv without throwOnErrors', () => {
      expect(() => createFleet({ store: createMemoryStore({ records: new Keyv() }) })).toThrow(TypeError);
      expect(() => createFleet({ store: createMemoryStore({ records: new Keyv({ throwOnErrors: false }) }) })).toThrow(/throwOnErrors/);
      expect(() => createFleet({ store: createMemoryStore({ records: new Keyv({ throwOnErrors: true }) }) })).not.toThrow();
    });

    it('the storage options the store replaced, each with what to write instead', () => {
      const removed: [Record<string, unknown>, RegExp][] = [
        [{ storage: new Keyv({ throwOnErrors: true }) }, /`storage` is gone: pass `store: createMemoryStore\(\{ records: yourKeyv \}\)`/],
        [{ index: {} }, /`index` is gone: .*pass the whole store as `store`/],
        [{ keyPrefix: 'app:' }, /`keyPrefix` is gone: it is the store's/],
        [{ rateLimit: { store: {} } }, /`rateLimit.store` is gone: .*`store.rateLimits`/],
        [{ monitor: { leases: {} } }, /`monitor.leases` is gone: .*`store.leases`/],
      ];
      for (const [options, message] of removed) {
        expect(() => createFleet(options as FleetOptions)).toThrow(TypeError);
        expect(() => createFleet(options as FleetOptions)).toThrow(message);
        expect(() => createFleet(options as FleetOptions)).toThrow(/docs\/upgrading\.md/);
      }
    });

    it.each(['v1 v2', '/v1/../admin', '/./v1', '/..', '/v1?x=1', '/v1#a', '/v1//v2', '/v%31', '/ä'])('the prefix %j', (prefix) => {
      expect(() => createFleet({ prefix })).toThrow(TypeError);
    });

    it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('the bodyLimit %s', (bodyLimit) => {
      expect(() => createFleet({ bodyLimit })).toThrow(TypeError);
    });

    it('normalizes good prefixes', () => {
      expect(createFleet().prefix).toBe('/v1');
      expect(createFleet({ prefix: 'api/v2/' }).prefix).toBe('/api/v2');
      expect(createFleet({ prefix: '/' }).prefix).toBe('');
      expect(createFleet({ prefix: '' }).prefix).toBe('');
      expect(createFleet({ prefix: '//' }).prefix).toBe('');
      expect(createFleet({ prefix: '/v1.0/.well-known/..x' }).prefix).toBe('/v1.0/.well-known/..x');
    });
  });

  describe('paths', () => {
    it.each(['/', '/v2/servers', '/v1x/servers', '/servers', '/V1/servers', '/api/v1/servers'])(
      '%s, outside the prefix, is 404 NOT_FOUND before any authentication',
      async (path) => {
        const { fleet } = fleetWith();
        const response = await fleet.handle(new Request(`${ORIGIN}${path}`));
        expect(response.status).toBe(404);
        expect(response.headers.get('www-authenticate')).toBeNull();
        const body = await envelope(response);
        expect(body.error).toMatchObject({ code: 'NOT_FOUND', details: { path } });
      },
    );

    it('the prefix alone and with a trailing slash are inside it', async () => {
      const { fleet } = fleetWith();
      for (const path of ['/v1', '/v1/']) {
        const response = await fleet.handle(new Request(`${ORIGIN}${path}`));
        expect(response.status).toBe(401);
      }
    });

    it('an adapter-given path wins over the URL', async () => {
      const { fleet } = fleetWith({ authenticate });
      const response = await fleet.handle(new Request(`${ORIGIN}/mounted/elsewhere/servers`), { path: '/servers' });
      expect(response.status).toBe(200);
      expect((await envelope(response)).data).toEqual([]);
    });

    it('with the empty prefix everything is inside', async () => {
      const { fleet } = fleetWith({ prefix: '', authenticate });
      expect((await fleet.handle(new Request(`${ORIGIN}/servers`))).status).toBe(200);
    });

    it('decodes percent-encoded path segments once', async () => {
      const { fleet } = fleetWith({ authenticate });
      const created = await envelope(await fleet.handle(json('POST', '/v1/servers', { name: 'w', type: 'http', endpoint: 'https://w.example' })));
      const id = (created.data as { id: string }).id;
      const encoded = id.replace(/[A-Za-z]/, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
      expect(encoded).not.toBe(id);

      const once = await fleet.handle(new Request(`${ORIGIN}/v1/%73ervers/${encoded}`));
      expect(once.status).toBe(200);
      expect(((await envelope(once)).data as { id: string }).id).toBe(id);

      const twice = await fleet.handle(new Request(`${ORIGIN}/v1/servers/${encoded.replace('%', '%25')}`));
      expect(twice.status).toBe(404);
      expect((await envelope(twice)).error).toMatchObject({ code: 'SERVER_NOT_FOUND', details: { server_id: encoded } });
    });

    it('an encoded slash stays inside its segment', async () => {
      const { fleet } = fleetWith({ authenticate });
      const response = await fleet.handle(new Request(`${ORIGIN}/v1/servers%2Fsrv_000000000000000000000000`));
      expect(response.status).toBe(404);
      expect((await envelope(response)).error?.code).toBe('NOT_FOUND');
    });

    it.each(['/v1/servers/%E0%A4%A', '/v1/servers/%zz', '/v1/%/servers', '/v1/servers/%C0%AF'])('a malformed percent encoding (%s) is 400', async (path) => {
      const { fleet, onError } = fleetWith({ authenticate });
      const response = await fleet.handle(new Request(`${ORIGIN}${path}`));
      expect(response.status).toBe(400);
      expect((await envelope(response)).error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'path' } });
      expect(onError).not.toHaveBeenCalled();
    });
  });

  describe('what a create reads of the request', () => {
    /** A create with a real key, its request's header reads and `url` reads counted. */
    async function countedCreate(path: string) {
      const { fleet } = fleetWith();
      const { secret } = (await fleet.keys.create({ account: 'acme', tier: 'pro' }))._unsafeUnwrap();
      const request = json('POST', path, { name: 'counted', type: 'http', endpoint: 'https://counted.example' }, { authorization: `Bearer ${secret}` });
      const reads = new Map<string, number>();
      const get = request.headers.get.bind(request.headers);
      vi.spyOn(request.headers, 'get').mockImplementation((name) => {
        reads.set(name.toLowerCase(), (reads.get(name.toLowerCase()) ?? 0) + 1);
        return get(name);
      });
      let urlReads = 0;
      const { url } = request;
      Object.defineProperty(request, 'url', { get: () => (urlReads++, url) });
      const response = await fleet.handle(request, { path: new URL(url).pathname.slice('/v1'.length) });
      return { fleet, response, reads, urlReads: () => urlReads };
    }

    it('reads the Authorization header once: the route, the key and its token share it', async () => {
      const { response, reads } = await countedCreate('/v1/servers');
      expect(response.status).toBe(201);
      expect(reads.get('authorization')).toBe(1);
    });

    it('a route that declares no query does not read the URL, and ignores a query as before', async () => {
      const { fleet, response, urlReads } = await countedCreate('/v1/servers?ignored=1&limit=abc');
      expect(response.status).toBe(201);
      expect(urlReads()).toBe(0);
      // A route that declares one still parses it, and refuses what it does not take.
      const { secret } = (await fleet.keys.create({ account: 'acme', tier: 'pro' }))._unsafeUnwrap();
      const headers = { authorization: `Bearer ${secret}` };
      const refused = await fleet.handle(new Request(`${ORIGIN}/v1/servers?limit=abc`, { headers }));
      expect(refused.status).toBe(400);
      expect((await envelope(refused)).error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'limit' } });
      const listed = await envelope(await fleet.handle(new Request(`${ORIGIN}/v1/servers?limit=1`, { headers })));
      expect(listed).toMatchObject({ data: [{ name: 'counted' }], pagination: { limit: 1, total: 1 } });
    });
  });

  describe('request ids', () => {
    it('keeps a well-formed X-Request-Id and replaces any other with a req_ id', async () => {
      const { fleet } = fleetWith();
      const kept = await fleet.handle(new Request(`${ORIGIN}/elsewhere`, { headers: { 'x-request-id': 'abc_DEF-123' } }));
      expect((await envelope(kept)).meta.request_id).toBe('abc_DEF-123');
      for (const bad of ['has space', 'x'.repeat(65), 'semi;colon', '']) {
        const replaced = await fleet.handle(new Request(`${ORIGIN}/elsewhere`, { headers: { 'x-request-id': bad } }));
        expect((await envelope(replaced)).meta.request_id).toMatch(/^req_[0-9A-Za-z]{24}$/);
      }
    });
  });
});

describe('request bodies at the edges', () => {
  const post = (init: RequestInit & { duplex?: 'half' }) =>
    new Request(`${ORIGIN}/v1/servers`, { method: 'POST', ...init, headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string>) } });

  it('a compressed body is 415, not "not valid UTF-8"', async () => {
    const { fleet, errors } = fleetWith({ authenticate });
    for (const encoding of ['gzip', 'br', 'deflate, gzip']) {
      const response = await fleet.handle(post({ body: new Uint8Array([0x1f, 0x8b, 8, 0]), headers: { 'content-encoding': encoding } }));
      const body = await envelope(response);
      expect(response.status).toBe(415);
      expect(body.error).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', details: { content_encoding: encoding } });
    }
    const identity = await fleet.handle(post({ body: JSON.stringify({ name: 'a', type: 'http', endpoint: 'https://a.example' }), headers: { 'content-encoding': 'identity' } }));
    expect(identity.status).toBe(201);
    expect(errors).toEqual([]);
    await fleet.close();
  });

  it('a client that goes away mid-body is a 400 nobody hears, never an INTERNAL_ERROR in the logs', async () => {
    const { fleet, errors } = fleetWith({ authenticate });
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"name":"half'));
        setTimeout(() => controller.error(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })), 5);
      },
    });
    const response = await fleet.handle(post({ body, duplex: 'half' }));
    expect(response.status).toBe(400);
    expect((await envelope(response)).error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'body' } });
    expect(errors).toEqual([]);
    await fleet.close();
  });
});

describe('the answer at once (atOnce)', () => {
  it('is a Response, not a promise, when no step had anything to wait for; handle is the same answer as a promise', async () => {
    const fleet = createFleet({ store: createMemoryStore(), rateLimit: { tiers: { pro: 1000 } } });
    const { secret, key } = (await fleet.keys.create({ account: 'acme', tier: 'pro' }))._unsafeUnwrap();
    (await fleet.servers.create('acme', { name: 'one', type: 'http', endpoint: 'https://one.example.com/mcp' }))._unsafeUnwrap();
    const get = () => new Request(`${ORIGIN}/v1/servers`, { headers: { authorization: `Bearer ${secret}` } });
    const now = atOnce(fleet.handle)(get());
    expect(now).toBeInstanceOf(Response);
    const later = fleet.handle(get());
    expect(later).toBeInstanceOf(Promise);
    const [a, b] = [now as Response, await later];
    expect(a.status).toBe(200);
    expect([...a.headers.keys()]).toEqual([...b.headers.keys()]);
    expect(Number(a.headers.get('x-ratelimit-remaining')) - 1).toBe(Number(b.headers.get('x-ratelimit-remaining')));
    expect((await envelope(a)).data).toEqual((await envelope(b)).data);
    // Refusals as before (a 401 counts the failure first, a step that may wait); a key revoked is refused on the next request.
    expect((await atOnce(fleet.handle)(new Request(`${ORIGIN}/v1/servers`))).status).toBe(401);
    (await fleet.keys.revoke(key.id))._unsafeUnwrap();
    expect((await atOnce(fleet.handle)(get())).status).toBe(401);
    await fleet.close();
  });

  it('a throw at a step that answers at once is answered as the error, as handle answers it', async () => {
    const { fleet, errors } = fleetWith({
      authenticate: () => {
        throw new Error('boom');
      },
    });
    const now = atOnce(fleet.handle)(new Request(`${ORIGIN}/v1/servers`, { headers: { authorization: 'Bearer x' } }));
    expect(now).toBeInstanceOf(Promise);
    expect((await now).status).toBe(500);
    expect(errors).toHaveLength(1);
    await fleet.close();
  });

  it('is handle itself for a handle that does not carry it (a wrapper)', () => {
    const wrapper = async () => new Response(null);
    expect(atOnce(wrapper)).toBe(wrapper);
  });
});
