import { Agent, createServer, get, type IncomingMessage, request as httpRequest, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { errorResponse, successResponse } from '../http/envelope.js';
import { readLimited } from '../util/read-limited.js';
import { mountPath, readWholeBody, toWebRequest, writeWebResponse } from './index.js';

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

describe('toWebRequest: the stand-in gives what the real Request gives', () => {
  /** What `toWebRequest` built before it had a stand-in: a real `Headers` from `rawHeaders`. */
  const realHeaders = (raw: string[]) => {
    const headers = new Headers();
    for (let i = 0; i < raw.length; i += 2) headers.append(raw[i] as string, raw[i + 1] as string);
    return headers;
  };
  /** Sends `head` (request line and headers, CRLF-separated, no blank line) on a raw socket and waits for the close. */
  const sendRaw = async (port: number, head: string) => {
    const socket = connect(port, '127.0.0.1');
    socket.end(`${head}\r\nConnection: close\r\n\r\n`);
    await new Promise((resolve) => socket.on('close', resolve).resume());
  };

  it('headers: repeated ones joined as Headers joins them (Cookie with "; "), names in any case, absent ones null', async () => {
    let checked: (() => void) | undefined;
    const { port } = await listen((req, res) => {
      const request = toWebRequest(req, res);
      const reference = realHeaders(req.rawHeaders);
      checked = () => {
        expect(request).toBeInstanceOf(Request);
        expect(request.headers).toBeInstanceOf(Headers);
        for (const name of ['x-a', 'X-A', 'cookie', 'Set-Cookie', 'authorization', 'x-empty', 'x-spaced', 'x-latin', 'absent', 'host']) {
          expect(request.headers.get(name), name).toBe(reference.get(name));
          expect(request.headers.has(name), name).toBe(reference.has(name));
        }
        expect(request.headers.get('x-a')).toBe('1, 2,3, 4');
        expect(request.headers.get('cookie')).toBe('a=1; b=2');
        // Names Headers refuses are refused the same way, not answered null.
        expect(() => request.headers.get('bad name')).toThrow(TypeError);
        expect([...request.headers]).toEqual([...reference]);
      };
      res.end();
    });
    await sendRaw(
      port,
      [
        'GET /v1/servers HTTP/1.1',
        'Host: x',
        'X-A: 1',
        'Cookie: a=1',
        'x-a: 2,3',
        'Authorization: Bearer k',
        'X-Empty:',
        'X-Spaced:   padded value\t ',
        'X-Latin: caf\u00e9',
        'cookie: b=2',
        'Set-Cookie: s=1',
        'set-cookie: t=2',
        'X-A: 4',
      ].join('\r\n'),
    );
    checked?.();
    expect(checked).toBeDefined();
  });

  it('url: what new Request makes of the same target and Host, odd ones included', async () => {
    // Hand-picked odd targets, then random ones over the bytes the URL parser treats specially (a fixed seed).
    const targets = ['/v1/servers?page=2&limit=5', '/v1/a/../b', '/v1/%2e%2e/x', '/v1/.%2E/x', '/v1/caf\u00e9?q=a b', "/v1/x?q='<>", '/v1//double', '/v1/x#frag', '/v1\\back', '/v1/x?', '/v1/a%zz?b=%41', '/v1/.', '/v1/..?x'];
    let seed = 12;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const alphabet = [...'/.?#%2eEaZ09 \'"<>`{}|\\^[]:@!$&()*+,;=~_-\u00e9\t'];
    for (let n = 0; n < 200; n++) targets.push(`/${Array.from({ length: 1 + Math.floor(random() * 12) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('')}`);
    const hosts = ['example.com', 'EXAMPLE.com:80', '127.1:8080', '0x7f.1', 'a b', 'user:pw@host', '[::1]:3000', '[::FFFF:127.0.0.1]', 'xn--nxasmq6b.example', 'xn--a.example', 'host:99999', 'a#b', 'localhost.'];
    const seen: Array<{ host: string; target: string; url: string | Error; expected: string | Error }> = [];
    const attempt = (make: () => string) => {
      try {
        return make();
      } catch (error) {
        return error as Error;
      }
    };
    const { port } = await listen((req, res) => {
      const host = req.headers.host ?? '';
      // One response for every target: each real Request listens for its close (MaxListenersExceededWarning otherwise).
      res.setMaxListeners(targets.length + 10);
      for (const target of targets) {
        const candidate = `http://${host}${target}`;
        const expected = attempt(() => new Request(URL.canParse(candidate) ? candidate : `http://localhost${target}`).url);
        seen.push({ host, target, url: attempt(() => toWebRequest(req, res, { target }).url), expected });
      }
      res.end();
    });
    for (const host of hosts) await sendRaw(port, `GET /v1/servers HTTP/1.1\r\nHost: ${host}`);
    expect(seen.length).toBe(targets.length * hosts.length);
    for (const { host, target, url, expected } of seen) {
      if (expected instanceof Error) expect(url, `${host} ${target}`).toBeInstanceOf(TypeError);
      else expect(url, `${host} ${target}`).toBe(expected);
    }
  });

  it('the body, the signal and everything else come from the real Request, with headers changed on the stand-in', async () => {
    let result: Record<string, unknown> | undefined;
    const { origin } = await listen(async (req, res) => {
      const request = toWebRequest(req, res);
      request.headers.set('x-added', 'yes');
      const copy = request.clone();
      result = {
        method: request.method,
        used: request.bodyUsed,
        redirect: request.redirect,
        text: await request.text(),
        usedAfter: request.bodyUsed,
        copy: await copy.text(),
        copyIsRequest: copy instanceof Request,
        added: request.headers.get('x-added'),
        copyAdded: copy.headers.get('x-added'),
        aborted: request.signal.aborted,
        again: await request.text().then(
          () => 'read twice',
          (error: unknown) => (error as Error).name,
        ),
      };
      res.end('ok');
    });
    const res = await fetch(`${origin}/v1/servers`, { method: 'PATCH', body: '{"name":"é"}', headers: { 'content-type': 'application/json' } });
    expect(await res.text()).toBe('ok');
    expect(result).toEqual({
      method: 'PATCH',
      used: false,
      redirect: 'follow',
      text: '{"name":"é"}',
      usedAfter: true,
      copy: '{"name":"é"}',
      copyIsRequest: true,
      added: 'yes',
      copyAdded: 'yes',
      aborted: false,
      again: 'TypeError',
    });
  });

  it('a signal first read after the client went away is already aborted; one first read after the answer is not', async () => {
    const signals: Record<string, AbortSignal> = {};
    const { port, origin } = await listen(async (req, res) => {
      const request = toWebRequest(req, res);
      if (req.url === '/quick') {
        await writeWebResponse(res, new Response('done'));
        signals.quick = request.signal;
        return;
      }
      await new Promise((resolve) => res.once('close', resolve));
      signals.gone = request.signal;
    });
    expect(await (await fetch(`${origin}/quick`)).text()).toBe('done');
    const pending = get({ port, host: '127.0.0.1', path: '/slow' }).on('error', () => {});
    await new Promise((resolve) => setTimeout(resolve, 50));
    pending.destroy();
    await eventually(() => signals.gone !== undefined);
    expect(signals.gone?.aborted).toBe(true);
    expect(signals.quick?.aborted).toBe(false);
  });

  it('a body left unread on a stand-in that never made its real Request is drained: the kept-alive connection stays usable', async () => {
    const { port } = await listen((req, res) => {
      const request = toWebRequest(req, res);
      return writeWebResponse(res, new Response(request.headers.get('x-n') ?? '', { status: 401 }));
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (n: string) =>
      new Promise<{ text: string; reused: boolean }>((resolve, reject) => {
        const req = httpRequest({ port, host: '127.0.0.1', method: 'POST', agent, headers: { 'x-n': n } });
        req.on('response', (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ text, reused: req.reusedSocket }));
        });
        req.on('error', reject).end('x'.repeat(256 * 1024));
      });
    try {
      expect(await send('1')).toEqual({ text: '1', reused: false });
      expect(await send('2')).toEqual({ text: '2', reused: true });
    } finally {
      agent.destroy();
    }
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

describe('readWholeBody', () => {
  /** Sends a POST head declaring `length` bytes, then `pieces` one write at a time; answers the raw socket. */
  async function postRaw(port: number, length: number, pieces: Buffer[]) {
    const socket = connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`POST / HTTP/1.1\r\nhost: x\r\ncontent-length: ${length}\r\n\r\n`);
    for (const piece of pieces) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      socket.write(piece);
    }
    return socket;
  }

  it('reads a body that arrives in pieces, whole', async () => {
    const read: Uint8Array[] = [];
    const { port } = await listen(async (req, res) => {
      read.push((await readWholeBody(req)) as Uint8Array);
      res.end('ok');
    });
    const pieces = [Buffer.from('{"a":'), Buffer.from('"é'), Buffer.from('"}')];
    const socket = await postRaw(port, 10, pieces);
    await eventually(() => read.length === 1);
    socket.destroy();
    expect(Buffer.from(read[0] as Uint8Array).toString('utf8')).toBe('{"a":"é"}');
  });

  it('leaves a body something already read from to the Request: undefined', async () => {
    const answers: unknown[] = [];
    const { port } = await listen(async (req, res) => {
      await new Promise((resolve) => req.once('readable', resolve));
      req.read();
      answers.push(readWholeBody(req));
      res.end('ok');
    });
    const socket = await postRaw(port, 2, [Buffer.from('{}')]);
    await eventually(() => answers.length === 1);
    socket.destroy();
    expect(answers).toEqual([undefined]);
  });

  it('rejects when the connection ends before the body does', async () => {
    const outcomes: string[] = [];
    const { port } = await listen(async (req) => {
      await readWholeBody(req)?.then(
        () => outcomes.push('read'),
        (error: Error) => outcomes.push(error.message),
      );
    });
    const socket = await postRaw(port, 100, [Buffer.from('{"a":')]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    socket.destroy();
    await eventually(() => outcomes.length === 1);
    expect(outcomes).toEqual(['The request ended before its body did.']);
  });
});
