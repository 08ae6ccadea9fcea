import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { WebSocketServer } from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetError, type UpstreamError } from '../errors/fleet-error.js';
import { closedAfterEach, listen } from './fixtures/listen.js';
import { startSilentServer } from './fixtures/misc-servers.js';
import { startWsServer } from './fixtures/ws-server.js';
import { WebSocketClientTransport } from './websocket-transport.js';

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
