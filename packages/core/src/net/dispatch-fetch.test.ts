import type { LookupAddress } from 'node:dns';
import { getEventListeners } from 'node:events';
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { UpstreamErrorCode } from '../errors/codes.js';
import { errorChain, isFleetError } from '../errors/fleet-error.js';
import { createGuardedFetch, type GuardedFetch, type GuardedFetchOptions } from './guarded-fetch.js';
import { classifyUndiciError } from './upstream-error.js';

// The guarded fetch's `direct` (createDispatchFetch): what the MCP client's Streamable HTTP requests go through. It
// must answer what the standard guarded fetch answers, and keep every guarantee of the outgoing path.

const servers: Server[] = [];
const fetches: GuardedFetch[] = [];

afterEach(async () => {
  await Promise.all(fetches.splice(0).map((fetch) => fetch.dispatcher.destroy()));
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

async function listen(handler: RequestListener, host = '127.0.0.1'): Promise<{ url: string; port: number; connections: () => number }> {
  const server = createServer(handler);
  let connections = 0;
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  servers.push(server);
  const { port } = server.address() as AddressInfo;
  return { url: `http://${host}:${port}/mcp?x=1`, port, connections: () => connections };
}

function guarded(options: GuardedFetchOptions = {}): GuardedFetch {
  const fetch = createGuardedFetch({ connectTimeout: 2_000, ...options });
  fetches.push(fetch);
  return fetch;
}

async function failure(request: Promise<unknown>): Promise<{ error: unknown; code: UpstreamErrorCode }> {
  const error = await request.then(
    (value) => {
      throw new Error(`expected a failure, got ${String(value)}`);
    },
    (caught: unknown) => caught,
  );
  return { error, code: classifyUndiciError(error).code };
}

const readBody = async (request: IncomingMessage) => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

describe('dispatch fetch: the answer is the one fetch gives', () => {
  it('sends method, headers and body as given (with a User-Agent), and answers status, statusText, headers and JSON', async () => {
    let seen: { method?: string; url?: string; headers?: IncomingMessage['headers']; body?: string } = {};
    const upstream = await listen(async (request, response) => {
      seen = { method: request.method, url: request.url, headers: request.headers, body: await readBody(request) };
      response.writeHead(200, 'Fine', [
        ['content-type', 'application/json; charset=utf-8'],
        ['mcp-session-id', 'abc'],
        ['set-cookie', 'a=1'],
        ['set-cookie', 'b=2'],
      ]);
      response.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { ok: true } }));
    });
    const headers = new Headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' });
    const response = await guarded({ allowPrivateNetworks: true }).direct(new URL(upstream.url), { method: 'POST', headers, body: '{"a":1}' });
    expect(response).toBeInstanceOf(Response);
    expect([response.status, response.statusText, response.ok]).toEqual([200, 'Fine', true]);
    expect(response.headers.get('mcp-session-id')).toBe('abc');
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 1, result: { ok: true } });
    expect(seen.method).toBe('POST');
    expect(seen.url).toBe('/mcp?x=1');
    expect(seen.body).toBe('{"a":1}');
    expect(seen.headers?.['mcp-protocol-version']).toBe('2025-11-25');
    expect(seen.headers?.accept).toBe('application/json, text/event-stream');
    expect(seen.headers?.['user-agent']).toBe('undici');
    // Nothing is asked to be compressed: nothing has to be decoded.
    expect(seen.headers?.['accept-encoding']).toBeUndefined();
  });

  it('streams an event stream as it arrives: the first event is read before the answer ends', async () => {
    let finish: (() => void) | undefined;
    const upstream = await listen((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('event: message\ndata: {"first":true}\n\n');
      finish = () => response.end('data: {"last":true}\n\n');
    });
    const response = await guarded({ allowPrivateNetworks: true }).direct(upstream.url, { method: 'GET', headers: { accept: 'text/event-stream' } });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    const first = await reader.read();
    expect(first.value).toContain('{"first":true}');
    finish?.();
    let rest = '';
    for (let next = await reader.read(); !next.done; next = await reader.read()) rest += next.value;
    expect(rest).toContain('{"last":true}');
  });

  describe('an event stream answering a POST with one response event (docs/performance.md, "mcp-hop")', () => {
    const post = { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' };
    const response = '{"result":{"content":[{"type":"text","text":"pong"}]},"jsonrpc":"2.0","id":7}';

    it('is answered as JSON with the event\'s data, whether the event and the end come together or apart', async () => {
      const upstream = await listen((_request, answer) => {
        answer.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'abc' });
        answer.end(`event: message\ndata: ${response}\n\n`);
      });
      const together = await guarded({ allowPrivateNetworks: true }).direct(upstream.url, post);
      expect(together.headers.get('content-type')).toBe('application/json');
      expect(together.headers.get('mcp-session-id')).toBe('abc');
      expect(await together.text()).toBe(response);
      // In pieces: the event split mid-line, the data line without its space, the end on its own, sent only once the
      // answer is given (so apart by more than a turn of the event loop however late the timer fires): the stream is
      // given as it came.
      let end: (() => void) | undefined;
      const pieces = await listen((_request, answer) => {
        answer.writeHead(200, { 'content-type': 'text/event-stream' });
        answer.write(`data:${response.slice(0, 20)}`);
        setTimeout(() => answer.write(`${response.slice(20)}\n\n`), 20);
        end = () => answer.end();
      });
      const apart = await guarded({ allowPrivateNetworks: true }).direct(pieces.url, post);
      expect(apart.headers.get('content-type')).toBe('text/event-stream');
      end?.();
      expect(await apart.text()).toBe(`data:${response}\n\n`);
    });

    it('stays an event stream, first byte to last, for anything but one response event', async () => {
      const cases = [
        `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\ndata: ${response}\n\n`,
        `data: ${response}\n\ndata: ${response}\n\n`,
        `id: 1\ndata: ${response}\n\n`,
        `: keep-alive\n\ndata: ${response}\n\n`,
        `data: ${response}\r\n\r\n`,
        `event: other\ndata: ${response}\n\n`,
        `data: {"jsonrpc":"2.0","id":7}\n\n`,
        `data: not json\n\n`,
        `data: ${response}\n`,
      ];
      for (const body of cases) {
        const upstream = await listen((_request, answer) => {
          answer.writeHead(200, { 'content-type': 'text/event-stream' });
          answer.end(body);
        });
        const answered = await guarded({ allowPrivateNetworks: true }).direct(upstream.url, post);
        expect(answered.headers.get('content-type'), body).toBe('text/event-stream');
        expect(await answered.text(), body).toBe(body);
      }
    });

    it('a notification before the response reaches the reader before the response is sent', async () => {
      let finish: (() => void) | undefined;
      const upstream = await listen((_request, answer) => {
        answer.writeHead(200, { 'content-type': 'text/event-stream' });
        answer.write('data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n');
        finish = () => answer.end(`data: ${response}\n\n`);
      });
      const answered = await guarded({ allowPrivateNetworks: true }).direct(upstream.url, post);
      const reader = answered.body!.pipeThrough(new TextDecoderStream()).getReader();
      expect((await reader.read()).value).toContain('notifications/progress');
      finish?.();
      let rest = '';
      for (let next = await reader.read(); !next.done; next = await reader.read()) rest += next.value;
      expect(rest).toContain('"id":7');
    });

    it('a failure while the stream is held fails its reader after what came, as the stream would have', async () => {
      const upstream = await listen((_request, answer) => {
        answer.writeHead(200, { 'content-type': 'text/event-stream' });
        answer.write('data: {"jsonrpc":"2.0",');
        setTimeout(() => answer.destroy(), 20);
      });
      const answered = await guarded({ allowPrivateNetworks: true }).direct(upstream.url, post);
      expect(answered.headers.get('content-type')).toBe('text/event-stream');
      const reader = answered.body!.pipeThrough(new TextDecoderStream()).getReader();
      expect((await reader.read()).value).toBe('data: {"jsonrpc":"2.0",');
      const error = await reader.read().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect((error as Error).message).toBe('terminated');
    });
  });

  it('leaves no listener on a signal shared by many requests (the 2025 transport passes one to every POST)', async () => {
    const upstream = await listen((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"jsonrpc":"2.0","id":1,"result":{}}');
    });
    const fetch = guarded({ allowPrivateNetworks: true }).direct;
    const shared = new AbortController();
    // undici's fetch left one abort listener per request on such a signal until a garbage collection
    // (MaxListenersExceededWarning after ten calls in a row); every one must be gone when its answer is.
    for (let i = 0; i < 50; i++) await (await fetch(upstream.url, { method: 'POST', body: '{}', signal: shared.signal })).json();
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    const streamed = await listen((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end('data: {}\n\n');
    });
    for (let i = 0; i < 20; i++) await (await fetch(streamed.url, { method: 'GET', signal: shared.signal })).text();
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
  });

  it('answers a 202 and a 204 without a body, and an error status with its text', async () => {
    const upstream = await listen((request, response) => {
      if (request.method === 'DELETE') response.writeHead(204).end();
      else if (request.method === 'GET') response.writeHead(405, { 'content-type': 'text/plain' }).end('no stream here');
      else response.writeHead(202).end();
    });
    const fetch = guarded({ allowPrivateNetworks: true }).direct;
    const accepted = await fetch(upstream.url, { method: 'POST', body: '{}' });
    expect([accepted.status, await accepted.text()]).toEqual([202, '']);
    const deleted = await fetch(upstream.url, { method: 'DELETE' });
    expect([deleted.status, deleted.body]).toEqual([204, null]);
    const refused = await fetch(upstream.url, { method: 'GET' });
    expect([refused.status, refused.ok, await refused.text()]).toEqual([405, false, 'no stream here']);
  });

  it('gives back a redirect as it is and follows nothing', async () => {
    const target = await listen((_request, response) => response.writeHead(200).end('followed'));
    const upstream = await listen((_request, response) => response.writeHead(307, { location: target.url }).end());
    const response = await guarded({ allowPrivateNetworks: true }).direct(upstream.url, { method: 'POST', body: '{}', redirect: 'follow' });
    expect(response.status).toBe(307);
    expect(response.headers.get('location')).toBe(target.url);
    expect(target.connections()).toBe(0);
  });

  it('hands anything but a plain request to the standard fetch (a Request object)', async () => {
    const upstream = await listen(async (request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end(`got ${await readBody(request)}`));
    const response = await guarded({ allowPrivateNetworks: true }).direct(new Request(upstream.url, { method: 'POST', body: 'x' }));
    expect(await response.text()).toBe('got x');
  });
});

describe('dispatch fetch: the outgoing path keeps its guarantees', () => {
  it('refuses loopback unless allowed, and the listener sees no connection', async () => {
    const upstream = await listen((_request, response) => response.end());
    for (const url of [upstream.url, `http://127.1:${upstream.port}/`, `http://[::ffff:7f00:1]:${upstream.port}/`]) {
      expect((await failure(guarded().direct(new URL(url), { method: 'POST', body: '{}' }))).code).toBe('DESTINATION_NOT_ALLOWED');
    }
    expect(upstream.connections()).toBe(0);
  });

  it('judges a hostname on the address it resolves to, once (DNS rebinding)', async () => {
    const upstream = await listen((_request, response) => response.end());
    const asked: string[] = [];
    const lookup = async (hostname: string): Promise<LookupAddress[]> => {
      asked.push(hostname);
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const { error, code } = await failure(guarded({ lookup }).direct(`http://rebind.example:${upstream.port}/mcp`, { method: 'POST', body: '{}' }));
    expect(code).toBe('DESTINATION_NOT_ALLOWED');
    expect(error).toBeInstanceOf(TypeError);
    expect(asked).toEqual(['rebind.example']);
    expect(upstream.connections()).toBe(0);
  });

  it('refuses a bad port as the standard guarded fetch does', async () => {
    const fetch = guarded({ allowPrivateNetworks: true });
    const direct = await failure(fetch.direct(new URL('http://127.0.0.1:6000/mcp'), { method: 'POST', body: '{}' }));
    const standard = await failure(fetch(new URL('http://127.0.0.1:6000/mcp'), { method: 'POST', body: '{}' }));
    expect(direct.code).toBe('UPSTREAM_UNREACHABLE');
    expect(classifyUndiciError(direct.error).message).toBe(classifyUndiciError(standard.error).message);
  });

  it('an unreachable upstream rejects as fetch does (TypeError, the cause classified)', async () => {
    const upstream = await listen((_request, response) => response.end());
    const url = upstream.url;
    await new Promise<void>((resolve) => servers.pop()?.close(() => resolve()));
    const { error, code } = await failure(guarded({ allowPrivateNetworks: true }).direct(url, { method: 'POST', body: '{}' }));
    expect(error).toBeInstanceOf(TypeError);
    expect(code).toBe('UPSTREAM_UNREACHABLE');
  });

  describe('maxResponseBytes', () => {
    const answering =
      (size: number, form: 'json' | 'declared' | 'sse' | 'gzip', piece = 1000): RequestListener =>
      (_request, response) => {
        if (form === 'gzip') {
          response.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' }).end(gzipSync(Buffer.alloc(size, 'x')));
          return;
        }
        const type = form === 'sse' ? 'text/event-stream' : 'application/json';
        response.writeHead(200, form === 'declared' ? { 'content-type': type, 'content-length': String(size) } : { 'content-type': type });
        for (let sent = 0; sent < size; sent += piece) response.write('x'.repeat(Math.min(piece, size - sent)));
        response.end();
      };
    const read = async (size: number, form: 'json' | 'declared' | 'sse' | 'gzip', piece?: number) => {
      const upstream = await listen(answering(size, form, piece));
      return guarded({ allowPrivateNetworks: true, maxResponseBytes: 10_000 })
        .direct(upstream.url, { method: 'POST', body: '{}' })
        .then((response) => response.text())
        .then(
          (text) => text.length,
          // As the standard guarded fetch fails it: a TypeError with the FleetError as its cause (mcp/errors.ts reads the chain).
          (error: unknown) => (error instanceof TypeError ? (errorChain(error).find(isFleetError)?.code ?? 'no FleetError') : 'not a TypeError'),
        );
    };

    it.each(['json', 'declared', 'sse'] as const)('a body within the limit arrives whole (%s)', async (form) => {
      expect(await read(10_000, form)).toBe(10_000);
    });

    it.each(['json', 'declared', 'sse'] as const)('a body over the limit fails with UPSTREAM_RESPONSE_TOO_LARGE (%s)', async (form) => {
      expect(await read(10_001, form)).toBe('UPSTREAM_RESPONSE_TOO_LARGE');
      expect(await read(50_000, form, 50_000)).toBe('UPSTREAM_RESPONSE_TOO_LARGE');
    });

    it('a compressed answer nobody asked for is a protocol error, never decoded past the bound', async () => {
      expect(await read(1_000_000, 'gzip')).toBe('UPSTREAM_PROTOCOL_ERROR');
    });
  });

  describe('abort', () => {
    /** An event stream that sends one event and stays open; `closed` says whether its connection has closed. */
    const openStream = async () => {
      let closed = false;
      const upstream = await listen((request, response) => {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write('data: {}\n\n');
        request.socket.on('close', () => {
          closed = true;
        });
      });
      return { upstream, closed: () => closed };
    };

    it('an aborted signal rejects at once with its reason, nothing sent', async () => {
      const upstream = await listen((_request, response) => response.end());
      const controller = new AbortController();
      controller.abort(new Error('stop'));
      const { error } = await failure(guarded({ allowPrivateNetworks: true }).direct(upstream.url, { method: 'POST', body: '{}', signal: controller.signal }));
      expect((error as Error).message).toBe('stop');
      expect(upstream.connections()).toBe(0);
    });

    it('an abort while waiting for the answer rejects with the reason (AbortError by default)', async () => {
      const upstream = await listen(() => {});
      const controller = new AbortController();
      const pending = guarded({ allowPrivateNetworks: true }).direct(upstream.url, { method: 'POST', body: '{}', signal: controller.signal });
      setTimeout(() => controller.abort(), 50);
      const { error, code } = await failure(pending);
      expect((error as Error).name).toBe('AbortError');
      expect(code).toBe('UPSTREAM_TIMEOUT');
    });

    it("the lean exchange ends when either of its signals aborts, with that signal's reason, and leaves no listener on either", async () => {
      const answered = await listen((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"jsonrpc":"2.0","id":1,"result":{}}');
      });
      const silent = await listen(() => {});
      const { exchange } = guarded({ allowPrivateNetworks: true });
      const init = { headers: ['content-type', 'application/json'], body: '{}' };
      // The transport's signal lives as long as its connection; a 2026-07-28 request has one of its own besides.
      const transport = new AbortController();
      for (let i = 0; i < 20; i++) {
        const request = new AbortController();
        expect(await exchange(new URL(answered.url), { ...init, signals: [transport.signal, request.signal] })).toEqual({ plain: '{"jsonrpc":"2.0","id":1,"result":{}}' });
      }
      expect(getEventListeners(transport.signal, 'abort')).toHaveLength(0);
      for (const which of [0, 1]) {
        const signals = [new AbortController(), new AbortController()];
        const pending = exchange(new URL(silent.url), { ...init, signals: signals.map((controller) => controller.signal) });
        setTimeout(() => {
          signals[which]!.abort(new Error(`stopped by ${which}`));
          signals[1 - which]!.abort(new Error('too late'));
        }, 30);
        const { error } = await failure(pending);
        expect((error as Error).message).toBe(`stopped by ${which}`);
        for (const controller of signals) expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
      }
      const before = new AbortController();
      before.abort(new Error('already'));
      const { error } = await failure(exchange(new URL(silent.url), { ...init, signals: [transport.signal, before.signal] }));
      expect((error as Error).message).toBe('already');
    });

    it('an abort while the stream is read fails the read, and the connection closes', async () => {
      const { upstream, closed } = await openStream();
      const controller = new AbortController();
      const response = await guarded({ allowPrivateNetworks: true }).direct(upstream.url, { method: 'GET', signal: controller.signal });
      const reader = response.body!.getReader();
      await reader.read();
      controller.abort();
      const error = await reader.read().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect((error as Error).name).toBe('AbortError');
      await expect.poll(closed).toBe(true);
    });

    it('cancelling the body ends the request (the SDK closing a stream it no longer reads)', async () => {
      const { upstream, closed } = await openStream();
      const response = await guarded({ allowPrivateNetworks: true }).direct(upstream.url, { method: 'GET' });
      await response.body!.cancel();
      await expect.poll(closed).toBe(true);
    });
  });
});
