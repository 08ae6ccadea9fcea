// The forwarding proxy through which `npm run conformance:server` points the conformance suite (which cannot send an
// Authorization header) at the fleet's MCP endpoint: it must add the key, relay the exchange unchanged, and stream
// answers (the suite reads SSE events of streams that stay open) and close the upstream request when the suite
// closes its side.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startAuthProxy } from '../scripts/conformance/auth-proxy.mjs';

const KEY = 'mcpf_0123456789abcdefghijABCDEFGHIJ0123456789';

interface Seen {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingMessage['headers'];
  body: string;
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function upstream(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<{ origin: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    seen.push({ method: req.method, url: req.url, headers: req.headers, body });
    handler(req, res, body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { origin: `http://127.0.0.1:${address.port}`, seen };
}

async function proxyTo(origin: string): Promise<string> {
  const proxy = await startAuthProxy(origin, KEY);
  closers.push(proxy.close);
  return proxy.origin;
}

describe('conformance auth proxy', () => {
  it('adds the Bearer key, replacing one the client sent, and relays method, path, headers, body and answer', async () => {
    const { origin, seen } = await upstream((_req, res, body) => {
      res.writeHead(202, { 'content-type': 'application/json', 'mcp-session-id': 'session-1' }).end(JSON.stringify({ echoed: body }));
    });
    const proxy = await proxyTo(origin);
    const response = await fetch(`${proxy}/v1/servers/srv_1/mcp?x=1`, {
      method: 'POST',
      headers: { authorization: 'Bearer not-this-one', 'content-type': 'application/json', 'mcp-protocol-version': '2025-11-25' },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    expect(response.status).toBe(202);
    expect(response.headers.get('mcp-session-id')).toBe('session-1');
    expect(await response.json()).toEqual({ echoed: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.method).toBe('POST');
    expect(seen[0]?.url).toBe('/v1/servers/srv_1/mcp?x=1');
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen[0]?.headers['mcp-protocol-version']).toBe('2025-11-25');
    expect(seen[0]?.headers.host).toBe(new URL(origin).host);
  });

  it('streams an SSE answer as it comes and closes the upstream request when the client closes its side', async () => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    const { origin } = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: 1\ndata: {"first":true}\n\n');
      // The stream stays open: only a proxy that relays chunk by chunk lets the client read the event.
      res.on('close', () => upstreamClosed());
    });
    const proxy = await proxyTo(origin);
    const response = await fetch(`${proxy}/mcp`, { headers: { accept: 'text/event-stream' } });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = response.body!.getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value)).toBe('id: 1\ndata: {"first":true}\n\n');
    await reader.cancel();
    await closed;
  });

  it('answers 502 when the target does not answer', async () => {
    const { origin } = await upstream((_req, res) => res.end());
    for (const close of closers.splice(0)) await close();
    const proxy = await proxyTo(origin);
    const response = await fetch(`${proxy}/mcp`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(502);
  });
});
