import Keyv from 'keyv';
import { describe, expect, it } from 'vitest';
import { createMemoryStore, type FleetError } from '@mcp-fleet/core';
import { ADAPTERS } from '../support/adapters.js';
import {
  createServer,
  expectError,
  expectInvalid,
  expectMeta,
  expectSuccess,
  freshClient,
  GENERATED_REQUEST_ID,
  httpServer,
  ISO_MS,
  send,
  serveForSuite,
  total,
  UNKNOWN_SERVER_ID,
} from '../support/http-client.js';

const LIMIT = 65_536;

/** A stream of `size` bytes of JSON-ish text in chunks, sent without Content-Length (chunked). */
function chunkedBody(size: number, chunk = 8192): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= size) {
        controller.close();
        return;
      }
      const n = Math.min(chunk, size - sent);
      controller.enqueue(new TextEncoder().encode(sent === 0 ? `{"name":"${'x'.repeat(n - 9)}` : 'x'.repeat(n)));
      sent += n;
    },
  });
}

describe.each(ADAPTERS)('envelope and errors ($name)', (adapter) => {
  const suite = serveForSuite(adapter);

  describe('envelope and request ids', () => {
    it('a success carries {success, data, meta{timestamp, request_id}} and X-Request-Id = meta.request_id', async () => {
      const client = await freshClient(suite.served);
      const res = await client.post('/servers', httpServer());
      const data = expectSuccess(res, 201);
      expect(data.id).toMatch(/^srv_/);
      expect(res.body.meta.request_id).toMatch(GENERATED_REQUEST_ID);
      expect(res.body.meta.timestamp).toMatch(ISO_MS);
      expect(Math.abs(Date.parse(res.body.meta.timestamp) - Date.now())).toBeLessThan(60_000);
    });

    it('a list carries pagination next to data and meta', async () => {
      const client = await freshClient(suite.served);
      const res = await client.get('/servers');
      expectSuccess(res, 200);
      expect(res.body.pagination).toEqual({ page: 1, limit: 50, total: 0, pages: 0 });
      expect(res.body.data).toEqual([]);
    });

    it('every request gets a new generated request id when none is sent', async () => {
      const client = await freshClient(suite.served);
      const a = await client.get('/servers');
      const b = await client.get('/servers');
      expect(a.headers.get('x-request-id')).toMatch(GENERATED_REQUEST_ID);
      expect(b.headers.get('x-request-id')).toMatch(GENERATED_REQUEST_ID);
      expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
    });

    it.each(['abc', 'A_b-9', 'x'.repeat(64), 'req_customid'])('keeps a valid incoming X-Request-Id (%s)', async (id) => {
      const client = await freshClient(suite.served);
      const res = await client.get('/servers', { headers: { 'x-request-id': id } });
      expectSuccess(res, 200);
      expect(res.body.meta.request_id).toBe(id);
      expect(res.headers.get('x-request-id')).toBe(id);
    });

    it.each(['x'.repeat(65), 'has space', 'semi;colon', 'dot.ted', 'slash/'])('replaces an invalid incoming X-Request-Id (%s)', async (id) => {
      const client = await freshClient(suite.served);
      const res = await client.get('/servers', { headers: { 'x-request-id': id } });
      expectSuccess(res, 200);
      expect(res.body.meta.request_id).toMatch(GENERATED_REQUEST_ID);
    });

    it('keeps the incoming request id on error responses too (401, 404, 405, 413, 415)', async () => {
      const client = await freshClient(suite.served);
      const headers = { 'x-request-id': 'trace-123' };
      const responses = [
        await client.get('/servers', { key: null, headers }),
        await client.get('/nowhere', { headers }),
        await client.request('PATCH', '/servers', { headers }),
        await client.post('/servers', { name: 'x'.repeat(LIMIT) }, { headers }),
        await client.post('/servers', 'hello', { raw: true, headers: { ...headers, 'content-type': 'text/plain' } }),
        await client.get(`/servers/${UNKNOWN_SERVER_ID}`, { headers }),
      ];
      expect(responses.map((r) => r.status)).toEqual([401, 404, 405, 413, 415, 404]);
      for (const res of responses) {
        expectMeta(res);
        expect(res.body.meta.request_id).toBe('trace-123');
      }
    });

    it('generated request ids appear on error responses as well', async () => {
      const res = await send(suite.served.url, 'GET', '/servers');
      expectError(res, 401, 'UNAUTHORIZED', {});
      expect(res.headers.get('x-request-id')).toMatch(GENERATED_REQUEST_ID);
    });

    it('responses are JSON and not cacheable', async () => {
      const client = await freshClient(suite.served);
      for (const res of [await client.get('/servers'), await client.get('/nowhere')]) {
        expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
        expect(res.headers.get('cache-control')).toBe('no-store');
      }
    });
  });

  describe('routes and methods', () => {
    it('an unknown route is 404 NOT_FOUND with details.path (the path below the mount point)', async () => {
      const client = await freshClient(suite.served);
      expectError(await client.get('/nowhere'), 404, 'NOT_FOUND', { path: '/nowhere' });
      expectError(await client.get('/servers/x/y/z'), 404, 'NOT_FOUND', { path: '/servers/x/y/z' });
      expectError(await client.post('/nowhere', { a: 1 }), 404, 'NOT_FOUND', { path: '/nowhere' });
    });

    it('PATCH /servers is 405 METHOD_NOT_ALLOWED with Allow: GET, POST', async () => {
      const client = await freshClient(suite.served);
      const res = await client.request('PATCH', '/servers', { body: { name: 'x' } });
      expectError(res, 405, 'METHOD_NOT_ALLOWED', { method: 'PATCH' });
      expect(res.headers.get('allow')).toBe('GET, POST');
    });

    it('POST /servers/{id} is 405 with Allow: GET, PUT, DELETE', async () => {
      const client = await freshClient(suite.served);
      const res = await client.post(`/servers/${UNKNOWN_SERVER_ID}`, httpServer());
      expectError(res, 405, 'METHOD_NOT_ALLOWED', { method: 'POST' });
      expect(res.headers.get('allow')).toBe('GET, PUT, DELETE');
    });

    it('DELETE /servers and PUT /tool-calls are 405 with their Allow lists', async () => {
      const client = await freshClient(suite.served);
      const del = await client.delete('/servers');
      expectError(del, 405, 'METHOD_NOT_ALLOWED', { method: 'DELETE' });
      expect(del.headers.get('allow')).toBe('GET, POST');
      const put = await client.put('/tool-calls', { a: 1 });
      expectError(put, 405, 'METHOD_NOT_ALLOWED', { method: 'PUT' });
      expect(put.headers.get('allow')).toBe('GET');
    });

    it('one trailing slash is forgiven', async () => {
      const client = await freshClient(suite.served);
      expectSuccess(await client.get('/servers/'), 200);
    });

    it('a path segment that is not valid percent-encoding is 400 on field path', async () => {
      const client = await freshClient(suite.served);
      expectInvalid(await client.get('/servers/%E0%A4%A'), 'path');
    });
  });

  describe('request bodies', () => {
    it('a body over 64 KiB with Content-Length is 413 PAYLOAD_TOO_LARGE, limit_bytes 65536, and creates nothing', async () => {
      const client = await freshClient(suite.served);
      const body = JSON.stringify({ ...httpServer(), padding: 'x'.repeat(LIMIT) });
      const res = await client.post('/servers', body, { raw: true, headers: { 'content-type': 'application/json' } });
      expectError(res, 413, 'PAYLOAD_TOO_LARGE', { limit_bytes: LIMIT });
      expect(await total(client)).toBe(0);
    });

    it('a chunked streamed body over 64 KiB (no Content-Length) is 413', async () => {
      const client = await freshClient(suite.served);
      const res = await client.post('/servers', chunkedBody(LIMIT + 4096), {
        raw: true,
        headers: { 'content-type': 'application/json' },
      });
      expectError(res, 413, 'PAYLOAD_TOO_LARGE', { limit_bytes: LIMIT });
      expect(await total(client)).toBe(0);
    });

    it.each([1_000_000, 8_000_000])('a much larger body (%i bytes) still gets its 413 answer, streamed or with Content-Length', async (size) => {
      const client = await freshClient(suite.served);
      const headers = { 'content-type': 'application/json' };
      expectError(await client.post('/servers', chunkedBody(size, 65_536), { raw: true, headers }), 413, 'PAYLOAD_TOO_LARGE', {
        limit_bytes: LIMIT,
      });
      expectError(await client.post('/servers', new Uint8Array(size).fill(32), { raw: true, headers }), 413, 'PAYLOAD_TOO_LARGE', {
        limit_bytes: LIMIT,
      });
      // the server is still fine afterwards
      expect(await total(client)).toBe(0);
      expectSuccess(await client.post('/servers', httpServer()), 201);
    });

    it('an answer given before a large body is read (401, 415, 404) leaves the server usable for the next request', async () => {
      const client = await freshClient(suite.served);
      const big = JSON.stringify({ pad: 'x'.repeat(300_000) });
      const headers = { 'content-type': 'application/json' };
      expectError(await client.post('/servers', big, { raw: true, headers, key: null }), 401, 'UNAUTHORIZED');
      expectSuccess(await client.get('/servers'), 200);
      expectError(await client.post('/nowhere', big, { raw: true, headers }), 404, 'NOT_FOUND');
      expectSuccess(await client.get('/servers'), 200);
      expectError(await client.post('/servers', chunkedBody(300_000), { raw: true, headers: { 'content-type': 'text/plain' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      expectSuccess(await client.get('/servers'), 200);
    });

    it('a chunked streamed body under the limit is read whole', async () => {
      const client = await freshClient(suite.served);
      const json = JSON.stringify(httpServer());
      const bytes = new TextEncoder().encode(json);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes.slice(0, 10));
          controller.enqueue(bytes.slice(10));
          controller.close();
        },
      });
      const res = await client.post('/servers', stream, { raw: true, headers: { 'content-type': 'application/json' } });
      expectSuccess(res, 201);
    });

    it('a body of exactly 64 KiB is not too large', async () => {
      const client = await freshClient(suite.served);
      const base = JSON.stringify({ ...httpServer(), pad: '' });
      const body = base.replace('"pad":""', `"pad":"${'x'.repeat(LIMIT - base.length)}"`);
      expect(Buffer.byteLength(body)).toBe(LIMIT);
      const res = await client.post('/servers', body, { raw: true, headers: { 'content-type': 'application/json' } });
      // Read and validated: refused for the unknown field, not for its size.
      expectInvalid(res, 'pad');
    });

    it('Content-Type text/plain is 415 UNSUPPORTED_MEDIA_TYPE with details.content_type', async () => {
      const client = await freshClient(suite.served);
      const res = await client.post('/servers', JSON.stringify(httpServer()), { raw: true, headers: { 'content-type': 'text/plain' } });
      expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', { content_type: 'text/plain' });
      expect(await total(client)).toBe(0);
    });

    it('a body without Content-Type is 415', async () => {
      const client = await freshClient(suite.served);
      const res = await client.post('/servers', new TextEncoder().encode(JSON.stringify(httpServer())), { raw: true });
      expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', { content_type: null });
      expect(await total(client)).toBe(0);
    });

    it('application/json with a charset parameter, in any case, is accepted', async () => {
      const client = await freshClient(suite.served);
      const res = await client.post('/servers', JSON.stringify(httpServer()), {
        raw: true,
        headers: { 'content-type': 'Application/JSON; charset=utf-8' },
      });
      expectSuccess(res, 201);
    });

    it('PUT with text/plain is 415 as well', async () => {
      const client = await freshClient(suite.served);
      const created = expectSuccess(await client.post('/servers', httpServer()), 201);
      const res = await client.put(`/servers/${created.id}`, '{"timeout":5}', { raw: true, headers: { 'content-type': 'text/plain' } });
      expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });

    it('malformed JSON is 400 on field body', async () => {
      const client = await freshClient(suite.served);
      const res = await client.post('/servers', '{"name": "a", ', { raw: true, headers: { 'content-type': 'application/json' } });
      expectInvalid(res, 'body');
      expect(res.body.error.details.issues).toBeUndefined();
      expect(await total(client)).toBe(0);
    });

    it.each([
      ['an array', '[{"name":"a","type":"http","endpoint":"https://a.example"}]'],
      ['a string', '"hello"'],
      ['a number', '42'],
      ['null', 'null'],
    ])('JSON that is %s is 400 on field body', async (_what, text) => {
      const client = await freshClient(suite.served);
      const res = await client.post('/servers', text, { raw: true, headers: { 'content-type': 'application/json' } });
      expectInvalid(res, 'body');
    });

    it('an empty JSON body is 400 on field body', async () => {
      const client = await freshClient(suite.served);
      const res = await client.post('/servers', '', { raw: true, headers: { 'content-type': 'application/json' } });
      expectInvalid(res, 'body');
    });

    it('PUT with a non-object JSON body is 400 on field body', async () => {
      const client = await freshClient(suite.served);
      const created = expectSuccess(await client.post('/servers', httpServer()), 201);
      expectInvalid(await client.put(`/servers/${created.id}`, [1, 2]), 'body');
      expectInvalid(await client.put(`/servers/${created.id}`, 'text'), 'body');
    });
  });

  describe('/tool-calls', () => {
    it('GET /tool-calls is an empty page', async () => {
      const client = await freshClient(suite.served);
      const res = await client.get('/tool-calls');
      expect(expectSuccess(res, 200)).toEqual([]);
      expect(res.body.pagination).toEqual({ page: 1, limit: 50, total: 0, pages: 0 });
    });

    it('GET /tool-calls/call_<24> is 404 NOT_FOUND with details.id', async () => {
      const client = await freshClient(suite.served);
      const id = 'call_abcdefghijklmnopqrstuvwx';
      expectError(await client.get(`/tool-calls/${id}`), 404, 'NOT_FOUND', { id });
      expectError(await client.get('/tool-calls/not-an-id'), 404, 'NOT_FOUND', { id: 'not-an-id' });
    });
  });

  describe('errors name no internals', () => {
    it('a 404 for an unknown server is SERVER_NOT_FOUND with details.server_id', async () => {
      const client = await freshClient(suite.served);
      expectError(await client.get(`/servers/${UNKNOWN_SERVER_ID}`), 404, 'SERVER_NOT_FOUND', { server_id: UNKNOWN_SERVER_ID });
      expectError(await client.get('/servers/whatever'), 404, 'SERVER_NOT_FOUND', { server_id: 'whatever' });
    });

    it('error messages carry no stack traces', async () => {
      const client = await freshClient(suite.served);
      const res = await client.post('/servers', '{', { raw: true, headers: { 'content-type': 'application/json' } });
      expectInvalid(res, 'body');
      expect(res.text).not.toMatch(/\bat .*\.(ts|js):\d+/);
      expect(res.text).not.toContain('SyntaxError');
    });
  });
});

describe.each(ADAPTERS)('bodyLimit option ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { bodyLimit: 1024 });

  it('a body over the configured limit is 413 with that limit, by Content-Length and chunked', async () => {
    const client = await freshClient(suite.served);
    const big = JSON.stringify(httpServer({ name: 'x'.repeat(1100) }));
    expectError(
      await client.post('/servers', big, { raw: true, headers: { 'content-type': 'application/json' } }),
      413,
      'PAYLOAD_TOO_LARGE',
      { limit_bytes: 1024 },
    );
    expectError(
      await client.post('/servers', chunkedBody(2048, 512), { raw: true, headers: { 'content-type': 'application/json' } }),
      413,
      'PAYLOAD_TOO_LARGE',
      { limit_bytes: 1024 },
    );
    expect(await total(client)).toBe(0);
  });

  it('a body under the configured limit passes', async () => {
    const client = await freshClient(suite.served);
    expectSuccess(await client.post('/servers', httpServer()), 201);
  });
});

/** A Keyv store that can be switched off, as a storage outage. */
class FlakyStore extends Map<string, unknown> {
  down = false;
  override get(key: string): unknown {
    if (this.down) throw new Error('ECONNREFUSED storage.internal:6379 password=hunter2');
    return super.get(key);
  }
  override set(key: string, value: unknown): this {
    if (this.down) throw new Error('ECONNREFUSED storage.internal:6379 password=hunter2');
    return super.set(key, value);
  }
  override delete(key: string): boolean {
    if (this.down) throw new Error('ECONNREFUSED storage.internal:6379 password=hunter2');
    return super.delete(key);
  }
}

describe.each(ADAPTERS)('5xx answers ($name)', (adapter) => {
  const store = new FlakyStore();
  const reported: FleetError[] = [];
  const suite = serveForSuite(adapter, {
    store: createMemoryStore({ records: new Keyv({ store, throwOnErrors: true }) }),
    onError: (error) => reported.push(error),
    authenticate: (request) => {
      if (request.headers.get('x-explode') !== null) throw new Error('secret internals: db password=hunter2');
      return { account: 'acct-5xx', tier: 'pro', scopes: null };
    },
  });

  it('a storage outage is 503 STORAGE_UNAVAILABLE with details {}, names no internals, and writes nothing', async () => {
    const client = await freshClient(suite.served);
    const kept = await createServer(client, httpServer({ name: 'kept' }));
    store.down = true;
    try {
      for (const res of [
        await client.post('/servers', httpServer({ name: 'during-outage' })),
        await client.get('/servers'),
        await client.get(`/servers/${kept.id}`),
        await client.put(`/servers/${kept.id}`, { timeout: 5 }),
        await client.delete(`/servers/${kept.id}`),
      ]) {
        expectError(res, 503, 'STORAGE_UNAVAILABLE', {});
        expect(res.text).not.toContain('hunter2');
        expect(res.text).not.toContain('ECONNREFUSED');
      }
    } finally {
      store.down = false;
    }
    expect(reported.some((e) => e.code === 'STORAGE_UNAVAILABLE')).toBe(true);
    const list = await client.get('/servers');
    expect(expectSuccess(list, 200).map((s: { name: string }) => s.name)).toEqual(['kept']);
    expect(expectSuccess(await client.get(`/servers/${kept.id}`), 200).timeout).toBe(30000);
    // the name never got claimed during the outage
    await createServer(client, httpServer({ name: 'during-outage' }));
  });

  it('an unexpected error is 500 INTERNAL_ERROR with a generic message, details {} and no internals', async () => {
    const client = await freshClient(suite.served);
    const res = await client.get('/servers', { headers: { 'x-explode': '1' } });
    expectError(res, 500, 'INTERNAL_ERROR', {});
    expect(res.body.error.message).toBe('An unexpected error occurred.');
    expect(res.text).not.toContain('hunter2');
    expect(res.text).not.toMatch(/\bat .*\.(ts|js):\d+/);
    expect(reported.some((e) => e.code === 'INTERNAL_ERROR')).toBe(true);
  });
});
