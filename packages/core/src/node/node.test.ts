import { Agent, createServer, get, type IncomingMessage, request as httpRequest, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { errorResponse, successResponse } from '../http/envelope.js';
import { readLimited } from '../util/read-limited.js';
import { mountPath, toWebRequest, writeWebResponse } from './index.js';

type Serve = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

async function listen(serve: Serve): Promise<{ port: number; origin: string }> {
  const server = createServer((req, res) => {
    Promise.resolve(serve(req, res)).catch((error: unknown) => {
      res.destroy(error as Error);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return { port, origin: `http://127.0.0.1:${port}` };
}

/** Resolves once `check` holds, polling: for events that happen on the server side after the client's part is done. */
async function eventually(check: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('mountPath', () => {
  it.each([
    ['/v1/servers', '/v1', '/servers'],
    ['/v1', '/v1', '/'],
    ['/v1/', '/v1', '/'],
    ['/v1servers', '/v1', undefined],
    ['/v2/servers', '/v1', undefined],
    ['/servers', '', '/servers'],
    ['/api/v1/servers/a%2Fb', '/api/v1', '/servers/a%2Fb'],
  ])('%s below %j is %j', (pathname, prefix, expected) => {
    expect(mountPath(pathname, prefix)).toBe(expected);
  });
});

describe('toWebRequest', () => {
  it('keeps the method, the target and every header, repeated ones included', async () => {
    let seen: Request | undefined;
    const { port } = await listen(async (req, res) => {
      seen = toWebRequest(req, res, { target: '/mounted/v1/servers?page=2' });
      res.end();
    });
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest({ port, host: '127.0.0.1', method: 'DELETE', path: '/v1/servers?page=2', headers: { 'x-a': ['1', '2'], 'X-Request-Id': 'abc' } });
      req.on('response', (res) => res.resume().on('end', resolve)).on('error', reject).end();
    });
    expect(seen?.method).toBe('DELETE');
    expect(seen?.url).toBe(`http://127.0.0.1:${port}/mounted/v1/servers?page=2`);
    expect(seen?.headers.get('x-a')).toBe('1, 2');
    expect(seen?.headers.get('x-request-id')).toBe('abc');
  });

  it('a Host header that makes no URL gives localhost, not an exception', async () => {
    let url: string | undefined;
    const { port } = await listen((req, res) => {
      url = toWebRequest(req, res).url;
      res.end();
    });
    const socket = connect(port, '127.0.0.1');
    socket.end('GET /v1/servers HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n');
    await new Promise((resolve) => socket.on('close', resolve).resume());
    expect(url).toBe('http://localhost/v1/servers');
  });

  it('streams the body: the handler reads it whole, in order', async () => {
    let text: string | undefined;
    const { origin } = await listen(async (req, res) => {
      text = await toWebRequest(req, res).text();
      res.end('ok');
    });
    const body = 'x'.repeat(300_000) + 'end';
    const res = await fetch(`${origin}/`, { method: 'POST', body });
    expect(await res.text()).toBe('ok');
    expect(text).toBe(body);
  });

  it('an answer given before the body was read leaves the kept-alive connection usable', async () => {
    const { port } = await listen(async (req, res) => {
      const request = toWebRequest(req, res);
      if (request.headers.get('authorization') === null) return writeWebResponse(res, new Response('no', { status: 401 }));
      // Stops at 1 KiB, as the body limit does, and answers 413 without reading the rest.
      if ((await readLimited(request, 1024)) === undefined) return writeWebResponse(res, new Response('big', { status: 413 }));
      return writeWebResponse(res, new Response('ok'));
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (headers: Record<string, string>, body: string) =>
      new Promise<{ status: number; text: string; reused: boolean }>((resolve, reject) => {
        const req = httpRequest({ port, host: '127.0.0.1', method: 'POST', agent, headers });
        req.on('response', (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode as number, text, reused: req.reusedSocket }));
        });
        req.on('error', reject).end(body);
      });
    try {
      const big = 'x'.repeat(256 * 1024);
      expect(await send({}, big)).toMatchObject({ status: 401, reused: false });
      expect(await send({ authorization: 'yes' }, big)).toMatchObject({ status: 413, reused: true });
      expect(await send({ authorization: 'yes' }, 'small')).toEqual({ status: 200, text: 'ok', reused: true });
    } finally {
      agent.destroy();
    }
  });

  it('aborts the signal when the client goes away in the middle of the body', async () => {
    let signal: AbortSignal | undefined;
    let readError: unknown;
    const { port } = await listen(async (req, res) => {
      const request = toWebRequest(req, res);
      signal = request.signal;
      readError = await request.text().catch((error: unknown) => error);
    });
    const socket = connect(port, '127.0.0.1');
    socket.write('POST /v1/servers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":');
    await eventually(() => signal !== undefined);
    expect(signal?.aborted).toBe(false);
    socket.destroy();
    await eventually(() => signal?.aborted === true);
    await eventually(() => readError !== undefined);
    expect(readError).toBeInstanceOf(Error);
  });

  it('aborts the signal when the client goes away while the handler works, and not once the answer is sent', async () => {
    const signals: AbortSignal[] = [];
    const { port, origin } = await listen(async (req, res) => {
      const { signal } = toWebRequest(req, res);
      signals.push(signal);
      if (req.url === '/quick') return writeWebResponse(res, new Response('done'));
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
    });
    expect(await (await fetch(`${origin}/quick`)).text()).toBe('done');
    const pending = get({ port, host: '127.0.0.1', path: '/slow' }).on('error', () => {});
    await eventually(() => signals.length === 2);
    pending.destroy();
    await eventually(() => signals[1]?.aborted === true);
    expect(signals[0]?.aborted).toBe(false);
  });
});

describe('writeWebResponse', () => {
  it('sends the status, every header and each Set-Cookie on its own line', async () => {
    const { port } = await listen((_req, res) => {
      res.setHeader('x-host', 'kept');
      const headers = new Headers({ 'content-type': 'application/json', 'x-request-id': 'r1' });
      headers.append('set-cookie', 'a=1; Path=/');
      headers.append('set-cookie', 'b=2, c; Path=/');
      return writeWebResponse(res, new Response('{"ok":true}', { status: 201, headers }));
    });
    const res = await new Promise<IncomingMessage>((resolve) => get({ port, host: '127.0.0.1' }, resolve));
    res.resume();
    expect(res.statusCode).toBe(201);
    expect(res.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2, c; Path=/']);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['x-request-id']).toBe('r1');
    expect(res.headers['x-host']).toBe('kept');
  });

  it('streams the body: the client has the first chunk before the last one exists', async () => {
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    const { origin } = await listen((_req, res) => {
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode('first;'));
          await released;
          controller.enqueue(new TextEncoder().encode('last'));
          controller.close();
        },
      });
      return writeWebResponse(res, new Response(body));
    });
    const res = await fetch(origin);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('first;');
    release();
    let rest = '';
    for (let next = await reader.read(); !next.done; next = await reader.read()) rest += new TextDecoder().decode(next.value);
    expect(rest).toBe('last');
  });

  it('sends an API answer whole: one write with its Content-Length, not a chunked stream', async () => {
    const data = Array.from({ length: 50 }, (_, i) => ({ id: `srv_${i}`, name: `server é ${i}` }));
    const { port } = await listen((req, res) => {
      const meta = { timestamp: '2026-01-01T00:00:00.000Z', request_id: 'req_1' };
      if (req.url === '/error') return writeWebResponse(res, errorResponse({ code: 'NOT_FOUND', status: 404, message: 'No.', details: {} }, meta, { 'x-extra': '1' }));
      return writeWebResponse(res, successResponse(200, data, meta, undefined, { 'x-ratelimit-limit': '5' }));
    });
    // Raw bytes off the socket: the head and the body arrive in one segment (one write), with no chunked framing.
    const raw = (path: string) =>
      new Promise<Buffer[]>((resolve, reject) => {
        const chunks: Buffer[] = [];
        const socket = connect(port, '127.0.0.1', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
        socket.on('data', (chunk) => chunks.push(chunk));
        socket.on('end', () => resolve(chunks));
        socket.on('error', reject);
      });
    const chunks = await raw('/');
    expect(chunks).toHaveLength(1);
    const text = Buffer.concat(chunks).toString('utf8');
    const [head = '', body = ''] = text.split('\r\n\r\n');
    expect(head).not.toMatch(/transfer-encoding/i);
    expect(head).toMatch(new RegExp(`content-length: ${Buffer.byteLength(body)}\r\n`, 'i'));
    expect(head).toMatch(/x-ratelimit-limit: 5/i);
    expect(head).toMatch(/x-request-id: req_1/i);
    expect(JSON.parse(body)).toEqual({ success: true, data, meta: { timestamp: '2026-01-01T00:00:00.000Z', request_id: 'req_1' } });
    const error = Buffer.concat(await raw('/error')).toString('utf8');
    expect(error).toMatch(/^HTTP\/1\.1 404 /);
    expect(error).toMatch(/x-extra: 1/i);
    expect(JSON.parse(error.split('\r\n\r\n')[1] as string).error.code).toBe('NOT_FOUND');
  });

  it('an API answer whose body was already read is sent as what is left of it (nothing), as any other Response', async () => {
    const { origin } = await listen(async (_req, res) => {
      const response = successResponse(200, { a: 1 }, { timestamp: 't', request_id: 'r' });
      await response.text();
      await writeWebResponse(res, response).catch(() => {
        res.destroy();
      });
    });
    // Node refuses to stream a used body; what matters is that the used text is not sent again as if unread.
    const answered = await fetch(origin).then((r) => r.text(), () => '');
    expect(answered).not.toContain('"success":true');
  });

  it('cancels the body when the client goes away', async () => {
    let cancelled = false;
    const { port } = await listen((_req, res) => {
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          controller.enqueue(new Uint8Array(16 * 1024));
          return new Promise((resolve) => setTimeout(resolve, 5));
        },
        cancel() {
          cancelled = true;
        },
      });
      return writeWebResponse(res, new Response(body));
    });
    const req = get({ port, host: '127.0.0.1' }, (res) => {
      res.once('data', () => req.destroy());
    }).on('error', () => {});
    await eventually(() => cancelled);
  });
});
