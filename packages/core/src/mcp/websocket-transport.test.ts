import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { WebSocketServer } from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetError, type UpstreamError } from '../errors/fleet-error.js';
import { closedAfterEach, listen } from './fixtures/listen.js';
import { startSilentServer } from './fixtures/misc-servers.js';
import { startWsServer } from './fixtures/ws-server.js';
import { frameBound, WebSocketClientTransport } from './websocket-transport.js';

const started = closedAfterEach();

/** A WebSocket server (subprotocol mcp) that runs `onConnection` for each client and records handshake headers. */
async function rawServer(onConnection: (socket: import('ws').WebSocket) => void) {
  const headers: Record<string, string | string[] | undefined>[] = [];
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (protocols) => (protocols.has('mcp') ? 'mcp' : false) });
  const listening = await listen((_req, res) => void res.writeHead(426).end());
  listening.server.on('upgrade', (req, socket, head) => {
    headers.push(req.headers);
    wss.handleUpgrade(req, socket, head, onConnection);
  });
  const server = {
    ...listening,
    url: new URL(`ws://127.0.0.1:${listening.port}/mcp`),
    headers,
    close: async () => {
      for (const client of wss.clients) client.terminate();
      wss.close();
      await listening.close();
    },
  };
  return started(Promise.resolve(server));
}

function nextMessage(transport: WebSocketClientTransport): Promise<JSONRPCMessage> {
  return new Promise((resolve) => {
    transport.onmessage = resolve;
  });
}

describe('WebSocketClientTransport', () => {
  it('opens with subprotocol mcp and the given headers, and exchanges one JSON-RPC message per text frame', async () => {
    const server = await rawServer((socket) => socket.on('message', (data) => socket.send(String(data).replace('"ping"', '"pong"'))));
    const transport = new WebSocketClientTransport(server.url, { headers: () => ({ Authorization: 'Bearer ws-token' }) });
    await transport.start();
    expect(server.headers[0]?.authorization).toBe('Bearer ws-token');
    expect(server.headers[0]?.['sec-websocket-protocol']).toBe('mcp');

    const reply = nextMessage(transport);
    await transport.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    await expect(reply).resolves.toEqual({ jsonrpc: '2.0', id: 1, method: 'pong' });
    await transport.close();
  });

  it('reports a frame that is not JSON-RPC, or binary, as an error and keeps the connection', async () => {
    const server = await rawServer((socket) => {
      socket.send('this is <b>not</b> json');
      socket.send(Buffer.from([1, 2, 3]), { binary: true });
      socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: {} }));
    });
    const transport = new WebSocketClientTransport(server.url);
    const errors: Error[] = [];
    transport.onerror = (error) => errors.push(error);
    const message = nextMessage(transport);
    await transport.start();
    await expect(message).resolves.toMatchObject({ method: 'notifications/message' });
    expect(errors).toHaveLength(2);
    for (const error of errors) {
      expect(error).toBeInstanceOf(FleetError);
      expect((error as UpstreamError).code).toBe('UPSTREAM_PROTOCOL_ERROR');
      expect(error.message).not.toContain('not</b> json');
    }
    await transport.close();
  });

  it('calls onclose once, whether the server or the client closes first', async () => {
    const server = await rawServer((socket) => setTimeout(() => socket.close(1000), 20));
    const byServer = new WebSocketClientTransport(server.url);
    let closes = 0;
    const closed = new Promise<void>((resolve) => {
      byServer.onclose = () => {
        closes += 1;
        resolve();
      };
    });
    await byServer.start();
    await closed;
    await byServer.close();
    expect(closes).toBe(1);
    await expect(byServer.send({ jsonrpc: '2.0', id: 1, method: 'ping' })).rejects.toMatchObject({ code: 'UPSTREAM_UNREACHABLE' });

    const byClient = new WebSocketClientTransport(server.url);
    let clientCloses = 0;
    byClient.onclose = () => void (clientCloses += 1);
    await byClient.start();
    await byClient.close();
    await byClient.close();
    expect(clientCloses).toBe(1);
  });

  it('fails a handshake that takes longer than connectTimeoutMs with UPSTREAM_TIMEOUT', async () => {
    const server = await started(startSilentServer());
    const transport = new WebSocketClientTransport(new URL(`ws://127.0.0.1:${server.port}/`), { connectTimeoutMs: 150 });
    const started_ = performance.now();
    await expect(transport.start()).rejects.toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    expect(performance.now() - started_).toBeLessThan(1000);
  });

  it('ends a pending handshake on abort or close(), and closes an open connection when the signal aborts', async () => {
    const silent = await started(startSilentServer());
    const pending = new AbortController();
    const stuck = new WebSocketClientTransport(new URL(`ws://127.0.0.1:${silent.port}/`), { signal: pending.signal });
    setTimeout(() => pending.abort(), 50);
    await expect(stuck.start()).rejects.toBeInstanceOf(FleetError);

    const closing = new WebSocketClientTransport(new URL(`ws://127.0.0.1:${silent.port}/`));
    const starting = closing.start();
    setTimeout(() => void closing.close(), 50);
    await expect(starting).rejects.toMatchObject({ code: 'UPSTREAM_UNREACHABLE' });

    const server = await started(startWsServer());
    const open = new AbortController();
    const transport = new WebSocketClientTransport(new URL(server.url), { signal: open.signal });
    const closed = new Promise<void>((resolve) => {
      transport.onclose = resolve;
    });
    await transport.start();
    open.abort();
    await closed;
  });

  it('on a 401 calls onUnauthorized once and retries the handshake with fresh headers', async () => {
    const server = await started(startWsServer({ authorize: (header) => header === 'Bearer second' }));
    const tokens = ['first', 'second', 'third'];
    let unauthorized = 0;
    const transport = new WebSocketClientTransport(new URL(server.url), {
      headers: () => ({ Authorization: `Bearer ${tokens.shift() ?? ''}` }),
      onUnauthorized: () => void (unauthorized += 1),
    });
    await transport.start();
    expect(unauthorized).toBe(1);
    await transport.close();

    const refused = new WebSocketClientTransport(new URL(server.url), {
      headers: () => ({ Authorization: 'Bearer never' }),
      onUnauthorized: () => void (unauthorized += 1),
    });
    await expect(refused.start()).rejects.toMatchObject({ code: 'UPSTREAM_AUTH_FAILED' });
    expect(unauthorized).toBe(2);
  });

  it('refuses to start twice', async () => {
    const server = await started(startWsServer());
    const transport = new WebSocketClientTransport(new URL(server.url));
    await transport.start();
    await expect(transport.start()).rejects.toThrow(/already started/);
    await transport.close();
  });
});

describe('WebSocketClientTransport: bounded messages (maxMessageBytes)', () => {
  const MiB = 1024 * 1024;

  /** Waits for the transport to close and collects what it reported on the way. */
  function watch(transport: WebSocketClientTransport) {
    const errors: unknown[] = [];
    const messages: JSONRPCMessage[] = [];
    transport.onerror = (error) => errors.push(error);
    transport.onmessage = (message) => messages.push(message);
    const closed = new Promise<void>((resolve) => {
      transport.onclose = resolve;
    });
    return { errors, messages, closed };
  }

  const textOf = (bytes: number) => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { data: 'x'.repeat(bytes) } });

  it('passes a message under the bound; one frame past it fails with UPSTREAM_RESPONSE_TOO_LARGE and closes', async () => {
    const server = await rawServer((socket) => {
      socket.send(textOf(512 * 1024));
      socket.send(textOf(2 * MiB));
    });
    const transport = new WebSocketClientTransport(server.url, { maxMessageBytes: MiB });
    const seen = watch(transport);
    await transport.start();
    await seen.closed;
    expect(seen.messages).toHaveLength(1);
    expect(transport.failure).toMatchObject({ code: 'UPSTREAM_RESPONSE_TOO_LARGE', details: { limit_bytes: MiB } });
    expect(transport.failure?.message).toContain('maxUpstreamBytes');
    expect(seen.errors).toContain(transport.failure);
  });

  it('counts the fragments of one message together', async () => {
    const server = await rawServer((socket) => {
      const text = textOf(3 * 400 * 1024);
      const third = Math.ceil(text.length / 3);
      socket.send(text.slice(0, third), { fin: false });
      socket.send(text.slice(third, 2 * third), { fin: false });
      socket.send(text.slice(2 * third), { fin: true });
    });
    const transport = new WebSocketClientTransport(server.url, { maxMessageBytes: MiB });
    const seen = watch(transport);
    await transport.start();
    await seen.closed;
    expect(seen.messages).toHaveLength(0);
    expect(transport.failure?.code).toBe('UPSTREAM_RESPONSE_TOO_LARGE');
  });

  it('a frame announcing 120 MiB is refused at its header: memory stays bounded while the server streams 96 MiB', async () => {
    let written = 0;
    const server = await rawServer((socket) => {
      const raw = (socket as unknown as { _socket: import('node:net').Socket })._socket;
      const header = Buffer.alloc(10);
      header[0] = 0x81; // FIN, text
      header[1] = 127; // 64-bit length follows
      header.writeBigUInt64BE(BigInt(120 * MiB), 2); // under undici's own 128 MiB default
      raw.write(header);
      const chunk = Buffer.alloc(MiB, 0x61);
      const pump = () => {
        while (written < 96 * MiB && !raw.destroyed && raw.writable) {
          written += chunk.length;
          if (!raw.write(chunk)) return void raw.once('drain', pump);
        }
      };
      raw.on('error', () => {});
      pump();
    });
    const before = process.memoryUsage();
    const transport = new WebSocketClientTransport(server.url, { maxMessageBytes: 4 * MiB });
    const seen = watch(transport);
    await transport.start();
    await seen.closed;
    const after = process.memoryUsage();
    expect(transport.failure?.code).toBe('UPSTREAM_RESPONSE_TOO_LARGE');
    // undici without the bound buffers the payload as it comes (up to its 128 MiB default); with it nothing is kept.
    expect(after.arrayBuffers - before.arrayBuffers).toBeLessThan(24 * MiB);
    expect(written).toBeLessThan(96 * MiB);
  });

  it('frameBound reads headers split across chunks, 16- and 64-bit lengths, masks and control frames', () => {
    const past = frameBound(1000);
    // A 16-bit length of 900, its header split in three chunks, then its payload: under the bound.
    expect(past(Buffer.from([0x81]))).toBe(-1);
    expect(past(Buffer.from([126, 0x03]))).toBe(-1);
    expect(past(Buffer.concat([Buffer.from([0x84]), Buffer.alloc(900)]))).toBe(-1);
    // A ping (control, 125 bytes) between fragments does not count; fragments 600 + 600 do, found at the second's header.
    expect(past(Buffer.concat([Buffer.from([0x01, 0x80 | 126, 0x02, 0x58, 1, 2, 3, 4]), Buffer.alloc(600)]))).toBe(-1);
    expect(past(Buffer.concat([Buffer.from([0x89, 125]), Buffer.alloc(125), Buffer.from([0x80, 126, 0x02, 0x58])]))).toBe(127);
    // A 64-bit length past the bound is seen from the header alone; a header begun in an earlier chunk answers 0.
    const other = frameBound(1000);
    expect(other(Buffer.from([0x82, 127, 0, 0, 0, 0, 0, 0, 0x03]))).toBe(-1);
    expect(other(Buffer.from([0xe9]))).toBe(0);
  });
});
