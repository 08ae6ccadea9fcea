import { type ChildProcess, spawn } from 'node:child_process';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { createMemoryStore, type Principal, type Scope } from '@mcp-fleet/core';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import Keyv from 'keyv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GatewayUpstream,
  LOOKUP_INPUT_SCHEMA,
  LOOKUP_OUTPUT_SCHEMA,
  startGatewayUpstream,
} from '../../packages/core/src/mcp/fixtures/gateway-upstream.js';
import { refusedPort } from '../../packages/core/src/mcp/fixtures/listen.js';
import { startSilentServer } from '../../packages/core/src/mcp/fixtures/misc-servers.js';
import { startV2ToolServer, type ToolServer } from '../../packages/core/src/mcp/fixtures/tool-servers.js';
import { ADAPTERS } from '../support/adapters.js';
import { oneWindow } from '../support/clock.js';
import { CountingIndexStore } from '../support/counting-index.js';
import { api, type ApiClient, createServer, expectSuccess, type Json, serveForSuite } from '../support/http-client.js';

import { EVERYTHING, NODE } from '../../packages/core/src/stdio/test-helpers.js';

/**
 * The suite's `authenticate`: `Bearer {account}|{scopes, comma-separated or *}|{tools globs, comma-separated or *}`,
 * so that a test makes any principal, allowlists included, without the key store.
 */
function authenticate(request: Request): Principal | null {
  const token = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
  if (token === undefined) return null;
  const [account, scopes = '*', tools = '*'] = token.split('|');
  if (account === undefined || account === 'bad') return null;
  return {
    account,
    tier: 'pro',
    scopes: scopes === '*' ? null : (scopes.split(',') as Scope[]),
    tools: tools === '*' ? null : tools.split(','),
  };
}

let seq = 0;
const account = () => `mcp-${++seq}-${Math.random().toString(36).slice(2, 7)}`;

let alpha: GatewayUpstream;
let beta: ToolServer;
/** server-everything over Streamable HTTP, a child process. */
let everything: { process: ChildProcess; url: string };
beforeAll(async () => {
  alpha = await startGatewayUpstream('alpha');
  beta = await startV2ToolServer();
  const port = await refusedPort();
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { PATH: process.env.PATH, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('listening')) resolve();
    });
    child.once('exit', () => reject(new Error('server-everything exited')));
  });
  everything = { process: child, url: `http://127.0.0.1:${port}/mcp` };
});
afterAll(async () => {
  everything.process.kill('SIGTERM');
  await alpha.close();
  await beta.close();
});

/** The v2 SDK client pinned to 2026-07-28 (its default negotiation is the 2025 handshake). */
const MODERN = { versionNegotiation: { mode: { pin: '2026-07-28' } } } as const;

async function v2Client(url: string, token: string): Promise<V2Client> {
  const client = new V2Client({ name: 'test-v2', version: '1.0.0' }, MODERN);
  await client.connect(new V2Transport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

async function v1Client(url: string, token: string): Promise<{ client: V1Client; transport: V1Transport }> {
  const client = new V1Client({ name: 'test-v1', version: '1.0.0' });
  const transport = new V1Transport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  return { client, transport };
}

/** The code of the JSON-RPC error `promise` rejects with (either SDK's error type). */
async function rpcError(promise: Promise<unknown>): Promise<{ code: number; message: string }> {
  const error = await promise.then(
    () => {
      throw new Error('expected a JSON-RPC error');
    },
    (e: unknown) => e as { code: number; message: string },
  );
  return { code: error.code, message: error.message };
}

describe.each(ADAPTERS)('the MCP endpoint /v1/mcp ($name)', (adapter) => {
  const suite = serveForSuite(adapter, {
    authenticate,
    allowPrivateNetworks: true,
    onError: () => {},
    stdio: { commands: [NODE] },
  });
  const mcpUrl = () => `${suite.served.url}/mcp`;

  /** An account with the two fixture upstreams registered as `alpha` (2025, v1 SDK) and `beta` (2026-07-28, v2 SDK). */
  async function account2(): Promise<{ account: string; rest: ApiClient; alphaId: string; betaId: string }> {
    const name = account();
    const rest = api(suite.served, name);
    const a = await createServer(rest, { name: 'alpha', type: 'http', endpoint: alpha.url });
    const b = await createServer(rest, { name: 'beta', type: 'http', endpoint: beta.url });
    return { account: name, rest, alphaId: a.id, betaId: b.id };
  }

  it('answers 401 with WWW-Authenticate: Bearer without a valid key', async () => {
    const res = await fetch(mcpUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    await res.text();
  });

  it('the v2 SDK client (2026-07-28) lists the namespaced union with schemas relayed unchanged, and calls through the tool-call service', async () => {
    const { account: name, rest, alphaId, betaId } = await account2();
    const client = await v2Client(mcpUrl(), name);
    expect(client.getProtocolEra()).toBe('modern');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['alpha__count', 'alpha__lookup', 'alpha__wait', 'beta__echo', 'beta__fail', 'beta__slow']);
    const lookup = tools.find((t) => t.name === 'alpha__lookup') as Json;
    expect(lookup.inputSchema).toEqual(LOOKUP_INPUT_SCHEMA);
    expect(lookup.outputSchema).toEqual(LOOKUP_OUTPUT_SCHEMA);
    expect(lookup.title).toBe('Look up a key');
    expect(lookup.annotations).toEqual({ readOnlyHint: true, openWorldHint: false });
    expect(lookup._meta).toEqual({ 'example.com/origin': 'alpha', 'io.mcp-fleet/server_id': alphaId });
    expect((tools.find((t) => t.name === 'beta__echo') as Json)._meta['io.mcp-fleet/server_id']).toBe(betaId);

    const looked = await client.callTool({ name: 'alpha__lookup', arguments: { key: 'k1' } });
    expect(looked.structuredContent).toEqual({ value: 'alpha:k1' });
    const echoed = await client.callTool({ name: 'beta__echo', arguments: { text: 'hi' } });
    expect(echoed.content).toEqual([{ type: 'text', text: 'hi' }]);
    // A tool's own isError answer is relayed as it came.
    const failed = await client.callTool({ name: 'beta__fail', arguments: {} });
    expect(failed).toMatchObject({ isError: true, content: [{ type: 'text', text: 'it broke' }] });

    const calls = expectSuccess(await rest.get('/tool-calls?limit=10'), 200) as Json[];
    expect(calls.map((c: Json) => [c.tool, c.via, c.status]).sort()).toEqual([
      ['echo', 'mcp', 'success'],
      ['fail', 'mcp', 'error'],
      ['lookup', 'mcp', 'success'],
    ]);
    expect(calls.find((c: Json) => c.tool === 'lookup').server_id).toBe(alphaId);

    expect((await rpcError(client.callTool({ name: 'nobody__echo', arguments: {} }))).code).toBe(-32602);
    expect((await rpcError(client.callTool({ name: 'beta__missing', arguments: {} }))).code).toBe(-32602);
    expect((await rpcError(client.callTool({ name: 'noprefix', arguments: {} }))).code).toBe(-32602);
    await client.close();
  });

  it('a call on a kept session after a server update goes with the new configuration (its new token)', async () => {
    const name = account();
    const rest = api(suite.served, name);
    const server = await createServer(rest, { name: 'tokened', type: 'http', endpoint: beta.url, authentication: { type: 'bearer', token: 'old-token' } });
    for (const client of [await v2Client(mcpUrl(), name), (await v1Client(mcpUrl(), name)).client]) {
      expectSuccess(await rest.put(`/servers/${server.id}`, { authentication: { type: 'bearer', token: 'old-token' } }), 200);
      await client.callTool({ name: 'tokened__echo', arguments: { text: 'before' } });
      expect(beta.authorizations.at(-1)).toBe('Bearer old-token');
      expectSuccess(await rest.put(`/servers/${server.id}`, { authentication: { type: 'bearer', token: 'new-token' } }), 200);
      const echoed = await client.callTool({ name: 'tokened__echo', arguments: { text: 'after' } });
      expect(echoed.content).toEqual([{ type: 'text', text: 'after' }]);
      expect(beta.authorizations.at(-1)).toBe('Bearer new-token');
      await client.close();
    }
  });

  it('the v1 SDK client (2025 session) lists, calls, pings, and gets prompts and resources', async () => {
    const { account: name } = await account2();
    const { client, transport } = await v1Client(mcpUrl(), name);
    expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    await client.ping();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('alpha__lookup');
    expect((tools.find((t) => t.name === 'alpha__lookup') as Json).inputSchema).toEqual(LOOKUP_INPUT_SCHEMA);
    const result = await client.callTool({ name: 'beta__echo', arguments: { text: 'v1' } });
    expect(result.content).toEqual([{ type: 'text', text: 'v1' }]);

    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(['alpha__greet']);
    const prompt = await client.getPrompt({ name: 'alpha__greet', arguments: { who: 'Ada' } });
    expect(prompt.messages[0]?.content).toEqual({ type: 'text', text: 'Hello Ada from alpha' });
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(['fixture://alpha/readme']);
    const read = await client.readResource({ uri: 'fixture://alpha/readme' });
    expect(read.contents[0]).toMatchObject({ uri: 'fixture://alpha/readme', text: 'readme of alpha' });
    expect((await rpcError(client.readResource({ uri: 'fixture://nowhere' }))).code).toBe(-32602);
    await transport.terminateSession();
    await client.close();
  });

  it('relays progress (both eras) and cancellation to the upstream', async () => {
    const { account: name } = await account2();
    const v2 = await v2Client(mcpUrl(), name);
    const seen: unknown[] = [];
    const counted = await v2.callTool({ name: 'alpha__count', arguments: {} }, { onprogress: (p) => seen.push(p) });
    expect(counted.content).toEqual([{ type: 'text', text: 'counted' }]);
    expect(seen).toEqual([1, 2, 3].map((i) => ({ progress: i, total: 3, message: `step ${i}` })));

    const { client: v1, transport } = await v1Client(mcpUrl(), name);
    const seenV1: unknown[] = [];
    await v1.callTool({ name: 'alpha__count', arguments: {} }, undefined, { onprogress: (p) => seenV1.push(p) });
    expect(seenV1).toHaveLength(3);
    // A call whose agent asked for no progress reaches the upstream as the agent sent it: without a progressToken.
    await v2.callTool({ name: 'alpha__count', arguments: {} });
    await v1.callTool({ name: 'alpha__count', arguments: {} });
    const tokens = alpha.progressTokens().slice(-4);
    expect(tokens.map((token) => token === undefined)).toEqual([false, false, true, true]);

    const before = alpha.cancelled();
    const controller = new AbortController();
    const waiting = v2.callTool({ name: 'alpha__wait', arguments: { ms: 20_000 } }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 300);
    await expect(waiting).rejects.toThrow();
    await expect.poll(() => alpha.cancelled(), { timeout: 5000 }).toBe(before + 1);
    await transport.terminateSession();
    await Promise.all([v1.close(), v2.close()]);
  });

  it('an API key allowlist hides tools from tools/list and refuses them on tools/call as unknown (-32602)', async () => {
    const { account: name } = await account2();
    const client = await v2Client(mcpUrl(), `${name}|*|alpha__look*,beta__echo`);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['alpha__lookup', 'beta__echo']);
    expect((await client.callTool({ name: 'beta__echo', arguments: { text: 'ok' } })).content).toEqual([{ type: 'text', text: 'ok' }]);
    const hidden = await rpcError(client.callTool({ name: 'beta__fail', arguments: {} }));
    const unknown = await rpcError(client.callTool({ name: 'beta__nothing', arguments: {} }));
    expect(hidden.code).toBe(-32602);
    expect(hidden.message.replace('fail', 'X')).toBe(unknown.message.replace('nothing', 'X'));
    await client.close();
  });

  it('isolates accounts: another account sees no tool, cannot call one, and cannot use the session', async () => {
    const { account: owner } = await account2();
    const { client, transport } = await v1Client(mcpUrl(), owner);
    await client.listTools();
    const other = await v2Client(mcpUrl(), account());
    expect((await other.listTools()).tools).toEqual([]);
    expect((await rpcError(other.callTool({ name: 'alpha__lookup', arguments: { key: 'x' } }))).code).toBe(-32602);
    const stolen = await fetch(mcpUrl(), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${account()}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': transport.sessionId as string,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
    });
    expect(stolen.status).toBe(404);
    await stolen.text();
    await Promise.all([client.close(), other.close()]);
  });

  it('scopes: listings need tool_calls:read and calls tool_calls:write, answered as JSON-RPC errors naming the scope', async () => {
    const { account: name } = await account2();
    const reader = await v2Client(mcpUrl(), `${name}|tool_calls:read`);
    expect((await reader.listTools()).tools.length).toBe(6);
    const refused = await rpcError(reader.callTool({ name: 'beta__echo', arguments: { text: 'x' } }));
    expect(refused.code).toBe(-32003);
    expect(refused.message).toContain('tool_calls:write');
    const none = await v2Client(mcpUrl(), `${name}|servers:read`);
    const list = await rpcError(none.listTools());
    expect(list.message).toContain('tool_calls:read');
    await Promise.all([reader.close(), none.close()]);
  });

  it('leaves out unhealthy and unreachable servers; a call to one is an isError result with the code', async () => {
    const { account: name, rest } = await account2();
    const down = await createServer(rest, { name: 'down', type: 'http', endpoint: `http://127.0.0.1:${await refusedPort()}/mcp` });
    const client = await v2Client(mcpUrl(), name);
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('down__x');
    expect((await client.listTools()).tools).toHaveLength(6);
    const failed = await client.callTool({ name: 'down__anything', arguments: {} });
    expect(failed.isError).toBe(true);
    expect((failed.content as Json)[0].text).toMatch(/^UPSTREAM_UNREACHABLE: /);
    // A server whose last probe says unhealthy is left out even while it would answer: the probe's verdict rules.
    await rest.get(`/servers/${down.id}/health`);
    const sick = await createServer(rest, { name: 'sick', type: 'http', endpoint: alpha.url });
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('sick__lookup');
    await suite.served.fleet.servers.update(name, sick.id, { endpoint: `http://127.0.0.1:${await refusedPort()}/mcp` });
    expectSuccess(await rest.get(`/servers/${sick.id}/health`), 200);
    await suite.served.fleet.servers.update(name, sick.id, { endpoint: alpha.url });
    const record = expectSuccess(await rest.get(`/servers/${sick.id}`), 200);
    expect(record.health).toBe('unhealthy');
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('sick__lookup');
    await client.close();
  });

  it('/servers/{id}/mcp serves one server alone, unprefixed; an unknown id is 404', async () => {
    const { account: name, alphaId } = await account2();
    const client = await v2Client(`${suite.served.url}/servers/${alphaId}/mcp`, name);
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['count', 'lookup', 'wait']);
    expect((await client.callTool({ name: 'lookup', arguments: { key: 'one' } })).structuredContent).toEqual({ value: 'alpha:one' });
    const res = await fetch(`${suite.served.url}/servers/srv_000000000000000000000000/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${name}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(404);
    await res.text();
    await client.close();
  });

  it('tells 2025 session clients notifications/tools/list_changed when the union changes (server added, upstream list_changed)', async () => {
    const name = account();
    const rest = api(suite.served, name);
    const upstream = await startGatewayUpstream('gamma');
    try {
      await createServer(rest, { name: 'gamma', type: 'http', endpoint: upstream.url });
      const { client, transport } = await v1Client(mcpUrl(), name);
      let changes = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        changes += 1;
      });
      expect((await client.listTools()).tools).toHaveLength(3);
      // Let the GET stream open before anything changes.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await createServer(rest, { name: 'beta', type: 'http', endpoint: beta.url });
      await expect.poll(() => changes, { timeout: 5000 }).toBeGreaterThanOrEqual(1);
      expect((await client.listTools()).tools).toHaveLength(6);
      const seen = changes;
      await upstream.addTool('added');
      await expect.poll(() => changes, { timeout: 5000 }).toBeGreaterThan(seen);
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('gamma__added');
      await transport.terminateSession();
      await client.close();
    } finally {
      await upstream.close();
    }
  });

  it('tells 2026-07-28 clients on subscriptions/listen when the tools of their account change, and no other account', async () => {
    const name = account();
    const rest = api(suite.served, name);
    await createServer(rest, { name: 'alpha', type: 'http', endpoint: alpha.url });
    const connect = async (token: string, seen: string[][]) => {
      const client = new V2Client(
        { name: 'listener', version: '1.0.0' },
        { ...MODERN, listChanged: { tools: { onChanged: (_error, tools) => seen.push((tools ?? []).map((t) => t.name).sort()) } } },
      );
      await client.connect(new V2Transport(new URL(mcpUrl()), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      return client;
    };
    const mine: string[][] = [];
    const theirs: string[][] = [];
    const client = await connect(name, mine);
    const other = await connect(account(), theirs);
    expect(client.getProtocolEra()).toBe('modern');
    // Let both listen streams open before anything changes.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await createServer(rest, { name: 'beta', type: 'http', endpoint: beta.url });
    await expect.poll(() => mine.at(-1), { timeout: 5000 }).toContain('beta__echo');
    expect(theirs).toEqual([]);
    await Promise.all([client.close(), other.close()]);
  });

  it('tells a 2026-07-28 listener only when the tools its key sees change (allowlist, /servers/{id}/mcp)', async () => {
    const name = account();
    const rest = api(suite.served, name);
    const upstream = await startGatewayUpstream('gamma');
    try {
      const gamma = await createServer(rest, { name: 'gamma', type: 'http', endpoint: upstream.url });
      const listen = async (url: string, token: string, seen: string[][]) => {
        const client = new V2Client(
          { name: 'listener', version: '1.0.0' },
          { ...MODERN, listChanged: { tools: { onChanged: (_error, tools) => seen.push((tools ?? []).map((t) => t.name).sort()) } } },
        );
        await client.connect(new V2Transport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
        await client.listTools();
        return client;
      };
      const all: string[][] = [];
      const onlyGamma: string[][] = [];
      const oneServer: string[][] = [];
      const clients = [
        await listen(mcpUrl(), name, all),
        await listen(mcpUrl(), `${name}|*|gamma__*`, onlyGamma),
        await listen(`${suite.served.url}/servers/${gamma.id}/mcp`, name, oneServer),
      ];
      // Let the listen streams open before anything changes.
      await new Promise((resolve) => setTimeout(resolve, 300));
      // beta's tools are outside the allowlist and outside /servers/{gamma}/mcp: only the unrestricted view changes.
      await createServer(rest, { name: 'beta', type: 'http', endpoint: beta.url });
      await expect.poll(() => all.at(-1), { timeout: 5000 }).toContain('beta__echo');
      // Then a change the two others see: the first thing they are told.
      await upstream.addTool('added');
      await expect.poll(() => onlyGamma.length, { timeout: 5000 }).toBeGreaterThanOrEqual(1);
      await expect.poll(() => oneServer.length, { timeout: 5000 }).toBeGreaterThanOrEqual(1);
      expect(onlyGamma[0]).toContain('gamma__added');
      expect(onlyGamma[0]?.some((tool) => tool.startsWith('beta__'))).toBe(false);
      expect(oneServer[0]).toContain('added');
      await Promise.all(clients.map((client) => client.close()));
    } finally {
      await upstream.close();
    }
  });

  it('relays resources/templates/list, and an unknown resource is -32602 with the URI in data', async () => {
    const name = account();
    await createServer(api(suite.served, name), { name: 'everything', type: 'http', endpoint: everything.url });
    const client = await v2Client(mcpUrl(), name);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.length).toBeGreaterThan(0);
    expect(resourceTemplates.every((t) => typeof t.uriTemplate === 'string' && (t._meta as Json)?.['io.mcp-fleet/server_id'] !== undefined)).toBe(true);
    const error = await client.readResource({ uri: 'nowhere://missing' }).then(
      () => undefined,
      (e: unknown) => e as { code: number; data?: unknown },
    );
    expect(error?.code).toBe(-32602);
    expect(error?.data).toEqual({ uri: 'nowhere://missing' });
    await client.close();
  });

  it('serves server-everything over Streamable HTTP behind the gateway, with the v1 client too', async () => {
    const name = account();
    await createServer(api(suite.served, name), { name: 'everything', type: 'http', endpoint: everything.url });
    const { client, transport } = await v1Client(mcpUrl(), name);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('everything__echo');
    const echoed = await client.callTool({ name: 'everything__echo', arguments: { message: 'over http' } });
    expect(JSON.stringify(echoed.content)).toContain('over http');
    expect((await client.listPrompts()).prompts.length).toBeGreaterThan(0);
    await transport.terminateSession();
    await client.close();
  });

  it('leaves out a server that does not answer its listing within 5 s, and answers the others', async () => {
    const { account: name, rest } = await account2();
    const silent = await startSilentServer();
    try {
      await createServer(rest, { name: 'silent', type: 'http', endpoint: `${silent.origin}/mcp`, timeout: 20_000 });
      const client = await v2Client(mcpUrl(), name);
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toHaveLength(6);
      expect(names.some((n) => n.startsWith('silent__'))).toBe(false);
      await client.close();
    } finally {
      await silent.close();
    }
  }, 30_000);

  it('serves server-everything (stdio) behind the gateway', async () => {
    const name = account();
    const rest = api(suite.served, name);
    await createServer(rest, { name: 'everything', type: 'stdio', command: NODE, args: [EVERYTHING, 'stdio'], timeout: 15_000 });
    const client = await v2Client(mcpUrl(), name);
    // A child process started cold on a loaded machine may miss the first answer's 5 s (it is then left out, and its
    // listing kept for the next answer, as the test above shows): listed again until it is there.
    await expect.poll(async () => (await client.listTools()).tools.map((t) => t.name), { timeout: 20_000, interval: 500 }).toContain('everything__echo');
    const echoed = await client.callTool({ name: 'everything__echo', arguments: { message: 'through the fleet' } });
    expect(JSON.stringify(echoed.content)).toContain('through the fleet');
    await client.close();
  }, 30_000);
});

describe.each(ADAPTERS)('the MCP endpoint resolves {prefix}__{tool} by name or id ($name)', (adapter) => {
  const index = new CountingIndexStore();
  const suite = serveForSuite(adapter, { authenticate, allowPrivateNetworks: true, onError: () => {}, store: { ...createMemoryStore(), index } });

  it('the longest prefix wins, a name that is not a prefix is reached by id, and no call reads the account listing', async () => {
    const name = account();
    const rest = api(suite.served, name);
    const team = await createServer(rest, { name: 'team', type: 'http', endpoint: beta.url });
    // A name below another's (`team__ops` under `team`) is refused: `team__ops__echo` would be two tools. A prefix that
    // holds `__` is still resolved whole, as the longest one standing for a server.
    expect((await rest.post('/servers', { name: 'team__ops', type: 'http', endpoint: beta.url })).status).toBe(409);
    const nested = await createServer(rest, { name: 'squad__ops', type: 'http', endpoint: beta.url });
    const spaced = await createServer(rest, { name: 'my server', type: 'http', endpoint: beta.url });
    // Servers of another account, one with the same name: never reached from this one.
    const other = api(suite.served, account());
    await createServer(other, { name: 'ghost', type: 'http', endpoint: beta.url });
    await createServer(other, { name: 'team', type: 'http', endpoint: beta.url });
    const client = await v2Client(`${suite.served.url}/mcp`, name);

    const before = index.listingReads;
    const echo = async (tool: string) => (await client.callTool({ name: tool, arguments: { text: tool } })).content;
    expect(await echo('squad__ops__echo')).toEqual([{ type: 'text', text: 'squad__ops__echo' }]);
    expect(await echo('team__echo')).toEqual([{ type: 'text', text: 'team__echo' }]);
    expect(await echo(`${spaced.id}__echo`)).toEqual([{ type: 'text', text: `${spaced.id}__echo` }]);
    for (const unknown of ['my server__echo', `${team.id}__echo`, 'ghost__echo', 'squad__echo', 'team__', '__echo', `${'x'.repeat(70)}__echo`]) {
      expect((await rpcError(client.callTool({ name: unknown, arguments: { text: 'x' } }))).code).toBe(-32602);
    }
    expect(index.listingReads - before).toBe(0);

    const calls = expectSuccess(await rest.get('/tool-calls?limit=10'), 200) as Json[];
    expect(calls.map((c: Json) => c.server_id).sort()).toEqual([team.id, nested.id, spaced.id].sort());
    // A rename moves the prefix: the old name is no prefix any more, the new one is.
    expectSuccess(await rest.put(`/servers/${nested.id}`, { name: 'ops' }), 200);
    expect((await rpcError(client.callTool({ name: 'squad__ops__echo', arguments: { text: 'x' } }))).code).toBe(-32602);
    expect(await echo('ops__echo')).toEqual([{ type: 'text', text: 'ops__echo' }]);
    await client.close();
  });
});

describe.each(ADAPTERS)('the MCP endpoint under rate limits ($name)', (adapter) => {
  const suite = serveForSuite(adapter, {
    now: oneWindow(),
    authenticate,
    allowPrivateNetworks: true,
    onError: () => {},
    rateLimit: { operations: { 'tools.call': 2 }, tiers: { pro: 8 } },
  });

  it('a tools/call beyond the tools.call limit is answered 429 with a JSON-RPC error; listings count against the tier', async () => {
    const name = account();
    const rest = api(suite.served, name);
    await createServer(rest, { name: 'beta', type: 'http', endpoint: beta.url });
    const client = await v2Client(`${suite.served.url}/mcp`, name);
    await client.callTool({ name: 'beta__echo', arguments: { text: '1' } });
    await client.callTool({ name: 'beta__echo', arguments: { text: '2' } });
    const third = await client.callTool({ name: 'beta__echo', arguments: { text: '3' } }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(String(third)).toMatch(/429|RATE_LIMITED/);
    // The tier (8 a minute) runs out on listings too.
    let refused = false;
    for (let i = 0; i < 8 && !refused; i++) {
      refused = await client.listTools().then(
        () => false,
        () => true,
      );
    }
    expect(refused).toBe(true);
    await client.close();
  });

  it('a POST of notifications alone counts once against the tier', async () => {
    const name = account();
    const statuses: number[] = [];
    for (let i = 0; i < 9; i++) {
      const res = await fetch(`${suite.served.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${name}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: i } }),
      });
      statuses.push(res.status);
      await res.text();
    }
    expect(statuses.slice(0, 8).every((status) => status !== 429)).toBe(true);
    expect(statuses[8]).toBe(429);
  });

  it('the lean road answers with the request id and the binding limit counted by that very request', async () => {
    const name = account();
    await createServer(api(suite.served, name), { name: 'beta', type: 'http', endpoint: beta.url });
    const headers = { authorization: `Bearer ${name}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
    const post = (body: unknown, extra: Record<string, string> = {}) => fetch(`${suite.served.url}/mcp`, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify(body) });
    const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'limits', version: '1.0.0' } } });
    await init.text();
    const session = { 'mcp-session-id': init.headers.get('mcp-session-id') as string };
    await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session)).text();
    // The REST create, the initialize and the notification counted 3 of the tier's 8.
    const seen = [];
    for (const [id, message] of [
      ['list-1', { method: 'tools/list' }],
      ['list-2', { method: 'tools/list' }],
      ['call-1', { method: 'tools/call', params: { name: 'beta__echo', arguments: { text: 'x' } } }],
    ] as const) {
      const answer = await post({ jsonrpc: '2.0', id, ...message }, { ...session, 'x-request-id': `lean-${id}` });
      const body = (await answer.json()) as { id: string; result?: unknown };
      seen.push({
        id: body.id,
        type: answer.headers.get('content-type'),
        requestId: answer.headers.get('x-request-id'),
        limit: answer.headers.get('x-ratelimit-limit'),
        remaining: answer.headers.get('x-ratelimit-remaining'),
        reset: /^\d+$/.test(answer.headers.get('x-ratelimit-reset') ?? ''),
      });
    }
    // JSON answers (the lean road), each with its own request id and the count it made: the tier's for the lists, the
    // tools.call limit's (2 a minute, 1 left) for the call.
    expect(seen).toEqual([
      { id: 'list-1', type: 'application/json', requestId: 'lean-list-1', limit: '8', remaining: '4', reset: true },
      { id: 'list-2', type: 'application/json', requestId: 'lean-list-2', limit: '8', remaining: '3', reset: true },
      { id: 'call-1', type: 'application/json', requestId: 'lean-call-1', limit: '2', remaining: '1', reset: true },
    ]);
  });

  it("every answer carries its request's id and the limit it counted, whichever road made it", async () => {
    const name = account();
    const headers = { authorization: `Bearer ${name}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
    const seen: { road: string; status: number; type: string | null; requestId: string | null; limit: string | null; remaining: string | null }[] = [];
    const post = async (road: string, body: string, extra: Record<string, string> = {}) => {
      const answer = await fetch(`${suite.served.url}/mcp`, { method: 'POST', headers: { ...headers, ...extra, 'x-request-id': `road-${road}` }, body });
      await answer.text();
      const type = answer.headers.get('content-type');
      seen.push({
        road,
        status: answer.status,
        type: type === null ? null : (type.split(';')[0] as string),
        requestId: answer.headers.get('x-request-id'),
        limit: answer.headers.get('x-ratelimit-limit'),
        remaining: answer.headers.get('x-ratelimit-remaining'),
      });
      return answer;
    };
    const init = await post(
      'initialize',
      JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'roads', version: '1.0.0' } } }),
    );
    const session = { 'mcp-session-id': init.headers.get('mcp-session-id') as string };
    await post('initialized', JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), session);
    await post('ping', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), session);
    await post('progress', JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: { progressToken: 'p' } } }), session);
    await post('lean', JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }), session);
    await post('no-session', JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list' }), { 'mcp-session-id': '00000000-0000-0000-0000-000000000000' });
    await post('parse', '{"jsonrpc": "2.0", "id": 5, "method": ');
    await post('refused', JSON.stringify([1, 2].map((id) => ({ jsonrpc: '2.0', id, method: 'ping' }))), session);
    // The SDK's answers (the session's opening, its 202, a ping answered whole as JSON, a stream of progress), the lean
    // road's, the endpoint's own JSON-RPC errors and the limiter's refusal: each with its own request id and the count
    // its request made (8 a minute; the refused batch of two spends nothing and names the one left).
    expect(seen).toEqual([
      { road: 'initialize', status: 200, type: 'text/event-stream', requestId: 'road-initialize', limit: '8', remaining: '7' },
      { road: 'initialized', status: 202, type: null, requestId: 'road-initialized', limit: '8', remaining: '6' },
      { road: 'ping', status: 200, type: 'application/json', requestId: 'road-ping', limit: '8', remaining: '5' },
      { road: 'progress', status: 200, type: 'text/event-stream', requestId: 'road-progress', limit: '8', remaining: '4' },
      { road: 'lean', status: 200, type: 'application/json', requestId: 'road-lean', limit: '8', remaining: '3' },
      { road: 'no-session', status: 404, type: 'application/json', requestId: 'road-no-session', limit: '8', remaining: '2' },
      { road: 'parse', status: 400, type: 'application/json', requestId: 'road-parse', limit: '8', remaining: '1' },
      { road: 'refused', status: 429, type: 'application/json', requestId: 'road-refused', limit: '8', remaining: '1' },
    ]);
  });

  /** A raw POST to `/mcp` as `token`, answered as status, rate-limit headers and text. */
  async function raw(token: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; remaining: string | null; limit: string | null; text: string }> {
    const res = await fetch(`${suite.served.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body,
    });
    return { status: res.status, remaining: res.headers.get('x-ratelimit-remaining'), limit: res.headers.get('x-ratelimit-limit'), text: await res.text() };
  }

  it('counts malformed and oversized bodies: each is one message against the tier', async () => {
    const name = account();
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await raw(name, '{"jsonrpc": "2.0", "id": 1, "method": '));
    for (let i = 0; i < 4; i++) answers.push(await raw(name, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(70_000) } })));
    expect(answers.map((a) => a.status)).toEqual([400, 400, 400, 400, 413, 413, 413, 413]);
    expect(answers[0]?.text).toContain('-32700');
    // Each answer carries the count it made: 8 a minute, 7 left after the first, none after the eighth.
    expect(answers.map((a) => a.remaining)).toEqual(['7', '6', '5', '4', '3', '2', '1', '0']);
    const ninth = await raw(name, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }));
    expect(ninth.status).toBe(429);
    expect(ninth.text).toContain('RATE_LIMITED');
  });

  it('admits a batch whole or refuses it whole: a batch that does not fit spends nothing', async () => {
    const name = account();
    const rest = api(suite.served, name);
    await createServer(rest, { name: 'beta', type: 'http', endpoint: beta.url });
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'beta__echo', arguments: { text: String(id) } } });
    const list = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list' });
    const legacy = { 'mcp-protocol-version': '2025-03-26' };
    // Three calls where tools.call has room for two: refused whole, with the limit that refused it.
    const threeCalls = await raw(name, JSON.stringify([call(1), call(2), call(3)]), legacy);
    expect(threeCalls.status).toBe(429);
    expect([threeCalls.limit, threeCalls.remaining]).toEqual(['2', '2']);
    // Eight messages where the tier has room for seven (the REST create counted one): refused whole too.
    const eight = await raw(name, JSON.stringify(Array.from({ length: 8 }, (_, i) => list(i))), legacy);
    expect(eight.status).toBe(429);
    expect([eight.limit, eight.remaining]).toEqual(['8', '7']);
    // Nothing was spent: two calls and a listing fit, counted 3 against the tier and 2 against tools.call.
    const fits = await raw(name, JSON.stringify([call(4), call(5), list(6)]), legacy);
    expect(fits.status).not.toBe(429);
    expect([fits.limit, fits.remaining]).toEqual(['2', '0']);
    // The tier has 4 left: a batch of 4 listings fits, and then nothing does.
    expect((await raw(name, JSON.stringify(Array.from({ length: 4 }, (_, i) => list(10 + i))), legacy)).remaining).toBe('0');
    expect((await raw(name, JSON.stringify(list(20)))).status).toBe(429);
  });
});


describe.each(ADAPTERS)('the MCP endpoint caps the 2025 sessions a process holds ($name)', (adapter) => {
  /** The fleet's records, as the storage holds them: the session records are read raw. */
  const stored = new Map<string, unknown>();
  const suite = serveForSuite(adapter, {
    authenticate,
    onError: () => {},
    store: createMemoryStore({ records: new Keyv({ store: stored, throwOnErrors: true }) }),
    mcp: { maxSessionsPerAccount: 2, maxSessions: 3, maxSessionRecordsPerAccount: 3 },
  });
  const mcpUrl = () => `${suite.served.url}/mcp`;
  const headers = (token: string, session?: string) => ({
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-06-18',
    ...(session === undefined ? {} : { 'mcp-session-id': session }),
  });
  const post = (token: string, body: unknown, session?: string) =>
    fetch(mcpUrl(), { method: 'POST', headers: headers(token, session), body: JSON.stringify(body) });

  /** A 2025 session, initialized. */
  async function open(token: string, params: Record<string, unknown> = {}): Promise<string> {
    const init = await post(token, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'cap-test', version: '1.0.0' }, ...params },
    });
    expect(init.status).toBe(200);
    await init.text();
    const session = init.headers.get('mcp-session-id');
    if (session === null) throw new Error('no session id');
    const initialized = await post(token, { jsonrpc: '2.0', method: 'notifications/initialized' }, session);
    expect(initialized.status).toBe(202);
    await initialized.text();
    return session;
  }

  /** The session's GET stream; `ended` resolves true when the server closes it (the session left this process). */
  async function stream(token: string, session: string): Promise<{ ended: () => Promise<boolean>; cancel: () => Promise<void> }> {
    const res = await fetch(mcpUrl(), { method: 'GET', headers: { ...headers(token, session), accept: 'text/event-stream' } });
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const done = (async () => {
      for (;;) if ((await reader.read()).done) return true;
    })().catch(() => true);
    return {
      ended: () => Promise.race([done, new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5000))]),
      cancel: () => reader.cancel().catch(() => {}),
    };
  }

  async function ping(token: string, session: string): Promise<number> {
    const res = await post(token, { jsonrpc: '2.0', id: 2, method: 'ping' }, session);
    const body = await res.text();
    return res.status === 200 && body.includes('"result"') ? 200 : res.status;
  }

  it('closes the least recently used session of an account past maxSessionsPerAccount, then of any past maxSessions; its record stays', async () => {
    const a = account();
    const first = await open(a);
    const firstStream = await stream(a, first);
    const second = await open(a);
    const secondStream = await stream(a, second);
    // A third session of the account: the first (least recently used) leaves this process.
    const third = await open(a);
    expect(await firstStream.ended()).toBe(true);
    // Not lost: its record rebuilds it on its next request (which in turn pushes out the second).
    expect(await ping(a, first)).toBe(200);
    expect(await secondStream.ended()).toBe(true);
    expect(await ping(a, second)).toBe(200);

    // Now first and second are live for a (third was pushed out); first is made the least recently used of the process.
    const firstAgain = await stream(a, first);
    expect(await ping(a, second)).toBe(200);
    // Another account fills the process's cap of 3: the process's least recently used session leaves, whatever its account.
    const b = account();
    await open(b);
    await open(b);
    expect(await firstAgain.ended()).toBe(true);
    expect(await ping(a, first)).toBe(200);
    await Promise.all([firstStream.cancel(), secondStream.cancel(), firstAgain.cancel()]);
    expect(third).toMatch(/^[0-9a-f-]{36}$/);
  });

  /** The raw stored record of a session (whatever form the storage keeps it in), as text. */
  const recordText = (session: string): string | undefined => {
    const entry = [...stored.entries()].find(([key]) => key.endsWith(`mcp-session:${session}`));
    return entry === undefined ? undefined : typeof entry[1] === 'string' ? entry[1] : JSON.stringify(entry[1]);
  };

  it("keeps of a session's initialize only what a rebuild needs, bounded whatever the client sends", async () => {
    const a = account();
    const pad = 'x'.repeat(14_000);
    // 56 KB of params: unknown fields, _meta, clientInfo's icons and description. None of it is kept.
    const session = await open(a, {
      _meta: { pad },
      padding: pad,
      clientInfo: { name: 'big-client', version: '2.0.0', title: 'Big', description: pad, icons: [{ src: `data:image/png;base64,${pad}` }] },
      capabilities: { roots: { listChanged: true } },
    });
    const text = recordText(session) as string;
    expect(text).toBeDefined();
    expect(Buffer.byteLength(text)).toBeLessThan(1024);
    expect(text).toContain('big-client');
    expect(text).toContain('listChanged');
    expect(text).not.toContain('xxxxxxxx');
    expect(await ping(a, session)).toBe(200);

    // Parts larger than a record keeps are refused with the part and the bound named; nothing is stored.
    const before = stored.size;
    const big = await post(a, {
      jsonrpc: '2.0',
      id: 7,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: { experimental: { pad } }, clientInfo: { name: 'c', version: '1' } },
    });
    expect(big.status).toBe(400);
    const refused = (await big.json()) as Json;
    expect(refused).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32602 } });
    expect(refused.error.message).toContain('params.capabilities');
    expect(refused.error.message).toContain('4096');
    expect(big.headers.get('mcp-session-id')).toBeNull();
    const longName = await post(a, {
      jsonrpc: '2.0',
      id: 8,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: pad, version: '1' } },
    });
    expect(longName.status).toBe(400);
    expect(((await longName.json()) as Json).error.message).toContain('params.clientInfo');
    expect(stored.size).toBe(before);
  });

  it('caps the session records of an account: one more ends its oldest session, in storage and in the process; other accounts keep theirs', async () => {
    const a = account();
    const b = account();
    const other = await open(b);
    const sessions = [await open(a), await open(a), await open(a)];
    for (const session of sessions) expect(recordText(session)).toBeDefined();
    const fourth = await open(a);
    // The oldest is ended: its record is gone and its next request is answered 404, so its client starts anew.
    expect(recordText(sessions[0] as string)).toBeUndefined();
    expect(await ping(a, sessions[0] as string)).toBe(404);
    for (const session of [sessions[1], sessions[2], fourth]) expect(recordText(session as string)).toBeDefined();
    const ofA = () => [...stored.entries()].filter(([key, value]) => key.includes('mcp-session:') && JSON.stringify(value).includes(a));
    expect(ofA()).toHaveLength(3);
    expect(await ping(b, other)).toBe(200);
    // A session ended by its client (DELETE) leaves its place: a new one ends nobody.
    const deleted = await fetch(mcpUrl(), { method: 'DELETE', headers: headers(a, fourth) });
    expect(deleted.status).toBe(200);
    await deleted.text();
    const fifth = await open(a);
    for (const session of [sessions[1], sessions[2], fifth]) expect(recordText(session as string)).toBeDefined();
    expect(ofA()).toHaveLength(3);
    expect(await ping(a, sessions[1] as string)).toBe(200);
  });
});
