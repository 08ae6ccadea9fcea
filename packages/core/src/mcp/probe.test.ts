import { McpServer } from '@modelcontextprotocol/server';
import { InMemoryTransport, type FetchLike } from '@modelcontextprotocol/client';
import { Agent, fetch as undiciFetch } from 'undici';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { HttpServerConfig, StdioServerConfig, WebSocketServerConfig } from '../registry/schema.js';
import { closedAfterEach } from './fixtures/listen.js';
import { refusedPort } from './fixtures/listen.js';
import { HTML_PAGE_TEXT, startHtmlServer, startRedirectServer, startSilentServer } from './fixtures/misc-servers.js';
import { startModernServer } from './fixtures/modern-server.js';
import { startV1Server } from './fixtures/v1-server.js';
import { startV2Server } from './fixtures/v2-server.js';
import { startWsServer } from './fixtures/ws-server.js';
import { createGuardedAgent } from '../net/guarded-agent.js';
import { createGuardedFetch } from '../net/guarded-fetch.js';
import { createStdioSupervisor } from '../stdio/supervisor.js';
import { StdioChannelTransport } from '../stdio/stdio-transport.js';
import { probeServer } from './probe.js';
import { ERROR_HINTS } from '../errors/codes.js';

const started = closedAfterEach();

const http = (endpoint: string, extra: Partial<HttpServerConfig> = {}): HttpServerConfig => ({ name: 'probe-test', type: 'http', endpoint, timeout: 3000, ...extra });
const ws = (endpoint: string, extra: Partial<WebSocketServerConfig> = {}): WebSocketServerConfig => ({ name: 'probe-test', type: 'websocket', endpoint, timeout: 3000, ...extra });
const bearer = (token: string) => ({ authentication: { type: 'bearer' as const, token } });
const tokenIs = (token: string) => (header: string | undefined) => header === `Bearer ${token}`;

describe('probeServer over Streamable HTTP', () => {
  it('reports a v2 SDK server healthy in the 2026-07-28 era, found with server/discover', async () => {
    const server = await started(startV2Server());
    const result = await probeServer(http(server.url));
    expect(result).toMatchObject({ ok: true, era: '2026-07-28' });
    expect(result.responseTimeMs).toBeGreaterThanOrEqual(0);
    expect(server.methods).toEqual(['server/discover']);
  });

  it('reports a v1 SDK server healthy in the 2025 era after initialize, initialized and ping', async () => {
    const server = await started(startV1Server());
    const result = await probeServer(http(server.url));
    expect(result).toMatchObject({ ok: true, era: '2025' });
    expect(server.methods).toEqual(['server/discover', 'initialize', 'notifications/initialized', 'ping']);
    // The session the probe opened is deleted again.
    expect(server.sessions()).toBe(0);
  });

  it('answers a hand-written stateless 2026-07-28 server with one discover request and no session', async () => {
    const server = await started(startModernServer());
    const result = await probeServer(http(server.url));
    expect(result).toMatchObject({ ok: true, era: '2026-07-28' });
    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    expect(request?.method).toBe('server/discover');
    expect(request?.meta?.['io.modelcontextprotocol/protocolVersion']).toBe('2026-07-28');
    expect(request?.meta?.['io.modelcontextprotocol/clientCapabilities']).toEqual({});
    expect(request?.headers['mcp-session-id']).toBeUndefined();
    expect(request?.headers['mcp-protocol-version']).toBe('2026-07-28');
  });

  it('sends the bearer token and reports the server healthy with it', async () => {
    const v1 = await started(startV1Server({ authorize: tokenIs('v1-secret') }));
    const v2 = await started(startV2Server({ authorize: tokenIs('v2-secret') }));
    await expect(probeServer(http(v1.url, bearer('v1-secret')))).resolves.toMatchObject({ ok: true, era: '2025' });
    await expect(probeServer(http(v2.url, bearer('v2-secret')))).resolves.toMatchObject({ ok: true, era: '2026-07-28' });
  });

  it('maps a 401 to UPSTREAM_AUTH_FAILED, with no token or a wrong one, and quotes no body', async () => {
    const v1 = await started(startV1Server({ authorize: tokenIs('v1-secret') }));
    const v2 = await started(startV2Server({ authorize: tokenIs('v2-secret') }));
    for (const config of [http(v1.url), http(v1.url, bearer('wrong')), http(v2.url), http(v2.url, bearer('wrong'))]) {
      const result = await probeServer(config);
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      expect(result.error.code).toBe('UPSTREAM_AUTH_FAILED');
      expect(result.error.message).not.toContain('FIXTURE-401-BODY');
    }
    expect(v1.methods).toEqual([]);
  });

  it('maps a refused port to UPSTREAM_UNREACHABLE', async () => {
    const port = await refusedPort();
    const result = await probeServer(http(`http://127.0.0.1:${port}/mcp`));
    expect(result).toMatchObject({ ok: false, error: { code: 'UPSTREAM_UNREACHABLE' } });
  });

  it('gives up at the timeout with UPSTREAM_TIMEOUT when the server never answers', async () => {
    const server = await started(startSilentServer());
    const started_ = performance.now();
    const result = await probeServer(http(`${server.origin}/mcp`, { timeout: 300 }));
    const took = performance.now() - started_;
    expect(result).toMatchObject({ ok: false, error: { code: 'UPSTREAM_TIMEOUT', message: expect.stringContaining('300 ms') } });
    expect(result.responseTimeMs).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(1500);
    expect(server.hits()).toBeGreaterThanOrEqual(1);
  });

  it('maps a plain HTML page to UPSTREAM_PROTOCOL_ERROR without quoting the page', async () => {
    const server = await started(startHtmlServer());
    const result = await probeServer(http(`${server.origin}/mcp`));
    expect(result).toMatchObject({ ok: false, error: { code: 'UPSTREAM_PROTOCOL_ERROR' } });
    if (result.ok) return;
    expect(result.error.message).not.toContain('FIXTURE-HTML-PAGE');
    expect(result.error.message).not.toContain(HTML_PAGE_TEXT);
    expect(result.error.message).not.toContain('<');
  });

  it('does not follow a redirect, even to a healthy server on the same host', async () => {
    const target = await started(startV2Server());
    const redirect = await started(startRedirectServer(target.url));
    const result = await probeServer(http(`${redirect.origin}/mcp`));
    expect(result).toMatchObject({ ok: false, error: { code: 'UPSTREAM_PROTOCOL_ERROR', message: expect.stringContaining('redirect') } });
    if (!result.ok) expect(result.error.message).not.toContain('FIXTURE-REDIRECT-BODY');
    expect(redirect.hits()).toBe(1);
    expect(target.methods).toEqual([]);
  });

  it('plugs into the guarded fetch of net/: DESTINATION_NOT_ALLOWED for loopback by default, healthy once allowed', async () => {
    const server = await started(startV2Server());
    const refusing = createGuardedFetch();
    const result = await probeServer(http(server.url), { fetch: refusing, dispatcher: refusing.dispatcher });
    expect(result).toMatchObject({ ok: false, error: { code: 'DESTINATION_NOT_ALLOWED', hint: ERROR_HINTS.privateNetworks } });
    expect(server.methods).toEqual([]);

    const allowing = createGuardedFetch({ allowPrivateNetworks: true });
    await expect(probeServer(http(server.url), { fetch: allowing, dispatcher: allowing.dispatcher })).resolves.toMatchObject({ ok: true, era: '2026-07-28' });
    await Promise.all([refusing.dispatcher.close(), allowing.dispatcher.close()]);
  });

  it('reports DESTINATION_NOT_ALLOWED when an injected fetch fails with the guard code at connect time', async () => {
    const server = await started(startV2Server());
    const refusing = new Agent({
      connect: (_options, callback) => callback(Object.assign(new Error('refused by guard'), { code: 'DESTINATION_NOT_ALLOWED' }), null),
    });
    const fetch = ((url, init) => undiciFetch(url, { ...(init as object), dispatcher: refusing })) as FetchLike;
    const result = await probeServer(http(server.url), { fetch });
    expect(result).toMatchObject({ ok: false, error: { code: 'DESTINATION_NOT_ALLOWED' } });
    expect(server.methods).toEqual([]);
    await refusing.close();
  });
});

describe('probeServer remembers eras', () => {
  it('goes straight to initialize for a server remembered as 2025', async () => {
    const server = await started(startV1Server());
    await expect(probeServer(http(server.url), {}, { era: '2025' })).resolves.toMatchObject({ ok: true, era: '2025' });
    expect(server.methods).toEqual(['initialize', 'notifications/initialized', 'ping']);
  });

  it('goes straight to server/discover for a server remembered as 2026-07-28', async () => {
    const server = await started(startModernServer());
    await expect(probeServer(http(server.url), {}, { era: '2026-07-28' })).resolves.toMatchObject({ ok: true, era: '2026-07-28' });
    expect(server.requests.map((r) => r.method)).toEqual(['server/discover']);
  });

  it('falls back when the remembered era is no longer spoken', async () => {
    const legacy = await started(startV1Server());
    await expect(probeServer(http(legacy.url), {}, { era: '2026-07-28' })).resolves.toMatchObject({ ok: true, era: '2025' });

    const modern = await started(startModernServer());
    await expect(probeServer(http(modern.url), {}, { era: '2025' })).resolves.toMatchObject({ ok: true, era: '2026-07-28' });
    expect(modern.requests.map((r) => r.method)).toEqual(['initialize', 'server/discover']);
  });

  it('speaks 2025 to a dual-era v2 server remembered as 2025', async () => {
    const server = await started(startV2Server());
    await expect(probeServer(http(server.url), {}, { era: '2025' })).resolves.toMatchObject({ ok: true, era: '2025' });
    expect(server.methods).not.toContain('server/discover');
  });
});

describe('probeServer over WebSocket', () => {
  it('reports a 2025 WebSocket server healthy after initialize and ping, one JSON-RPC message per text frame', async () => {
    const server = await started(startWsServer({ era: '2025' }));
    await expect(probeServer(ws(server.url))).resolves.toMatchObject({ ok: true, era: '2025' });
    expect(server.methods).toEqual(['server/discover', 'initialize', 'notifications/initialized', 'ping']);
    for (const frame of server.frames) expect(JSON.parse(frame)).toMatchObject({ jsonrpc: '2.0' });
  });

  it('reports a 2026-07-28 WebSocket server healthy with discover alone', async () => {
    const server = await started(startWsServer({ era: '2026-07-28' }));
    await expect(probeServer(ws(server.url))).resolves.toMatchObject({ ok: true, era: '2026-07-28' });
    expect(server.methods).toEqual(['server/discover']);
  });

  it('falls back to initialize when a 2025 server leaves server/discover unanswered', async () => {
    const server = await started(startWsServer({ era: '2025-silent' }));
    const result = await probeServer(ws(server.url, { timeout: 600 }));
    expect(result).toMatchObject({ ok: true, era: '2025' });
    expect(server.methods).toEqual(['server/discover', 'initialize', 'notifications/initialized', 'ping']);
  });

  it('sends the bearer token in the handshake and maps a 401 to UPSTREAM_AUTH_FAILED', async () => {
    const server = await started(startWsServer({ authorize: tokenIs('ws-secret') }));
    await expect(probeServer(ws(server.url, bearer('ws-secret')))).resolves.toMatchObject({ ok: true, era: '2025' });
    for (const config of [ws(server.url), ws(server.url, bearer('wrong'))]) {
      const result = await probeServer(config);
      expect(result).toMatchObject({ ok: false, error: { code: 'UPSTREAM_AUTH_FAILED', message: expect.stringContaining('401') } });
      if (!result.ok) expect(result.error.message).not.toContain('FIXTURE-401-BODY');
    }
  });

  it('maps a refused port to UPSTREAM_UNREACHABLE', async () => {
    const port = await refusedPort();
    await expect(probeServer(ws(`ws://127.0.0.1:${port}/mcp`))).resolves.toMatchObject({ ok: false, error: { code: 'UPSTREAM_UNREACHABLE' } });
  });

  it('maps a handshake that is never answered to UPSTREAM_TIMEOUT at the timeout', async () => {
    const server = await started(startSilentServer());
    const result = await probeServer(ws(`ws://127.0.0.1:${server.port}/mcp`, { timeout: 300 }));
    expect(result).toMatchObject({ ok: false, error: { code: 'UPSTREAM_TIMEOUT' } });
    expect(result.responseTimeMs).toBeLessThan(1500);
  });

  it('maps a server without the mcp subprotocol, or a plain page, to UPSTREAM_PROTOCOL_ERROR', async () => {
    const other = await started(startWsServer({ subprotocol: false }));
    await expect(probeServer(ws(other.url))).resolves.toMatchObject({ ok: false, error: { code: 'UPSTREAM_PROTOCOL_ERROR' } });
    const page = await started(startHtmlServer());
    const result = await probeServer(ws(`ws://127.0.0.1:${page.port}/`));
    expect(result).toMatchObject({ ok: false, error: { code: 'UPSTREAM_PROTOCOL_ERROR', message: expect.stringContaining('HTTP 200') } });
    if (!result.ok) expect(result.error.message).not.toContain('FIXTURE-HTML-PAGE');
  });

  it('plugs into the guarded agent of net/: DESTINATION_NOT_ALLOWED for loopback by default, healthy once allowed', async () => {
    const server = await started(startWsServer());
    const refusing = createGuardedAgent();
    await expect(probeServer(ws(server.url), { dispatcher: refusing })).resolves.toMatchObject({ ok: false, error: { code: 'DESTINATION_NOT_ALLOWED', hint: ERROR_HINTS.privateNetworks } });
    expect(server.methods).toEqual([]);
    const allowing = createGuardedAgent({ allowPrivateNetworks: true });
    await expect(probeServer(ws(server.url), { dispatcher: allowing })).resolves.toMatchObject({ ok: true, era: '2025' });
    await Promise.all([refusing.close(), allowing.close()]);
  });
});

describe('probeServer over stdio', () => {
  const stdio: StdioServerConfig = { name: 'probe-test', type: 'stdio', command: 'my-mcp-server', timeout: 2000 };

  it('probes through the injected transport factory', async () => {
    let opened = 0;
    const result = await probeServer(stdio, {
      stdioTransport: async () => {
        opened += 1;
        const [client, server] = InMemoryTransport.createLinkedPair();
        await new McpServer({ name: 'fixture-stdio', version: '1.0.0' }).connect(server);
        return client;
      },
    });
    expect(result.ok).toBe(true);
    expect(opened).toBe(1);
  });

  it('plugs into the stdio supervisor of stdio/: a real SDK server in a child process, probed twice on one process', async () => {
    const everything = fileURLToPath(new URL('../../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url));
    const supervisor = createStdioSupervisor({ commands: [process.execPath], killGraceMs: 500 });
    const config: StdioServerConfig = { name: 'everything', type: 'stdio', command: process.execPath, args: [everything, 'stdio'], timeout: 10_000 };
    const pids: number[] = [];
    const deps = {
      stdioTransport: async (server: StdioServerConfig, { signal }: { signal: AbortSignal }) => {
        const channel = await supervisor.acquire('acct_a', 'srv_everything', server);
        pids.push(channel.pid);
        return new StdioChannelTransport(channel, { signal });
      },
    };
    try {
      const first = await probeServer(config, deps);
      expect(first).toMatchObject({ ok: true });
      const era = first.ok ? first.era : undefined;
      await expect(probeServer(config, deps, { era })).resolves.toMatchObject({ ok: true, era });
      expect(new Set(pids).size).toBe(1);
    } finally {
      await supervisor.close();
    }
  });

  it('fails with UPSTREAM_UNREACHABLE when no stdio transport is injected', async () => {
    await expect(probeServer(stdio)).resolves.toMatchObject({ ok: false, error: { code: 'UPSTREAM_UNREACHABLE' } });
  });
});
