import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayUpstream, startGatewayUpstream } from '../../packages/core/src/mcp/fixtures/gateway-upstream.js';
import { ADAPTERS } from '../support/adapters.js';
import { api, type ApiClient, createServer, expectError, expectSuccess, type Json, serveForSuite } from '../support/http-client.js';

// CONTRACT "The MCP endpoint", issue 33 "Allowlists on every door": a key's allowlist holds on prompts, resources and
// resource templates too (both eras, /mcp and /servers/{id}/mcp) and on REST GET /servers/{id}/tools; a resource URI
// listed by two servers is served by neither on /mcp.

/** Two 2025 upstreams (v1 SDK) with tools, a prompt `greet`, a resource `fixture://{name}/readme` and a template. */
let alpha: GatewayUpstream;
let beta: GatewayUpstream;
let shared: GatewayUpstream;
beforeAll(async () => {
  [alpha, beta, shared] = await Promise.all([startGatewayUpstream('alpha'), startGatewayUpstream('beta'), startGatewayUpstream('shared')]);
});
afterAll(async () => {
  await Promise.all([alpha.close(), beta.close(), shared.close()]);
});

/** What an MCP client of either era is asked here: the same five calls, so each test runs once per era. */
interface Door {
  listTools(): Promise<string[]>;
  listPrompts(): Promise<string[]>;
  getPrompt(name: string): Promise<string>;
  listResources(): Promise<string[]>;
  listTemplates(): Promise<string[]>;
  readResource(uri: string): Promise<string>;
  close(): Promise<void>;
}

/** The v2 SDK client pinned to 2026-07-28, or the v1 SDK client (a 2025 session). */
async function connect(era: '2026-07-28' | '2025', url: string, secret: string): Promise<Door> {
  const requestInit = { headers: { authorization: `Bearer ${secret}` } };
  const client =
    era === '2026-07-28'
      ? new V2Client({ name: 'doors-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
      : new V1Client({ name: 'doors-v1', version: '1.0.0' });
  const transport = era === '2026-07-28' ? new V2Transport(new URL(url), { requestInit }) : new V1Transport(new URL(url), { requestInit });
  await (client as V1Client).connect(transport as V1Transport);
  const c = client as unknown as V1Client;
  return {
    listTools: async () => (await c.listTools()).tools.map((tool) => tool.name).sort(),
    listPrompts: async () => (await c.listPrompts()).prompts.map((prompt) => prompt.name).sort(),
    getPrompt: async (name) => JSON.stringify((await c.getPrompt({ name, arguments: { who: 'Ada' } })).messages),
    listResources: async () => (await c.listResources()).resources.map((resource) => resource.uri).sort(),
    listTemplates: async () => (await c.listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate).sort(),
    readResource: async (uri) => JSON.stringify((await c.readResource({ uri })).contents),
    close: () => c.close(),
  };
}

/** The JSON-RPC error code `promise` rejects with. */
async function rpcCode(promise: Promise<unknown>): Promise<number> {
  return promise.then(
    () => {
      throw new Error('expected a JSON-RPC error');
    },
    (error: { code: number }) => error.code,
  );
}

const ERAS = ['2026-07-28', '2025'] as const;
let seq = 0;

describe.each(ADAPTERS)('allowlists on every door ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { allowPrivateNetworks: true, onError: () => {} });

  /** An account with `alpha` and `beta` registered by a key without lists; `keyWith` issues keys of that account. */
  async function account(): Promise<{ admin: ApiClient; alphaId: string; betaId: string; keyWith: (lists: Json) => Promise<string> }> {
    const name = `doors-${++seq}-${Math.random().toString(36).slice(2, 7)}`;
    const keyWith = async (lists: Json) => (await suite.served.fleet.keys.create({ account: name, tier: 'pro', ...lists }))._unsafeUnwrap().secret;
    const admin = api(suite.served, await keyWith({}));
    const a = await createServer(admin, { name: 'alpha', type: 'http', endpoint: alpha.url });
    const b = await createServer(admin, { name: 'beta', type: 'http', endpoint: beta.url });
    return { admin, alphaId: a.id, betaId: b.id, keyWith };
  }

  it.each(ERAS)('/mcp (%s): a key allowed alpha__* tools sees the prompts, resources and templates of alpha alone', async (era) => {
    const { keyWith } = await account();
    const door = await connect(era, `${suite.served.url}/mcp`, await keyWith({ tools: ['alpha__*'] }));
    expect(await door.listTools()).toEqual(['alpha__count', 'alpha__lookup', 'alpha__wait']);
    expect(await door.listPrompts()).toEqual(['alpha__greet']);
    expect(await door.getPrompt('alpha__greet')).toContain('Hello Ada from alpha');
    expect(await rpcCode(door.getPrompt('beta__greet'))).toBe(-32602);
    expect(await door.listResources()).toEqual(['fixture://alpha/readme']);
    expect(await door.readResource('fixture://alpha/readme')).toContain('readme of alpha');
    expect(await rpcCode(door.readResource('fixture://beta/readme'))).toBe(-32602);
    expect(await door.listTemplates()).toEqual(['fixture://alpha/notes/{id}']);
    await door.close();

    // One allowed tool of a server is enough to reach it; none of any: nothing but tools.
    const one = await connect(era, `${suite.served.url}/mcp`, await keyWith({ tools: ['beta__lookup'] }));
    expect(await one.listPrompts()).toEqual(['beta__greet']);
    expect(await one.listResources()).toEqual(['fixture://beta/readme']);
    await one.close();
    const none = await connect(era, `${suite.served.url}/mcp`, await keyWith({ tools: ['nothing__*'] }));
    expect(await none.listPrompts()).toEqual([]);
    expect(await none.listResources()).toEqual([]);
    expect(await none.listTemplates()).toEqual([]);
    expect(await rpcCode(none.getPrompt('alpha__greet'))).toBe(-32602);
    expect(await rpcCode(none.readResource('fixture://alpha/readme'))).toBe(-32602);
    await none.close();
  });

  it.each(ERAS)('/servers/{id}/mcp (%s): a server the key does not reach serves no prompt, resource or template', async (era) => {
    const { alphaId, betaId, keyWith } = await account();
    const secret = await keyWith({ tools: ['alpha__*'] });
    const hidden = await connect(era, `${suite.served.url}/servers/${betaId}/mcp`, secret);
    expect(await hidden.listTools()).toEqual([]);
    expect(await hidden.listPrompts()).toEqual([]);
    expect(await hidden.listResources()).toEqual([]);
    expect(await hidden.listTemplates()).toEqual([]);
    expect(await rpcCode(hidden.getPrompt('greet'))).toBe(-32602);
    expect(await rpcCode(hidden.readResource('fixture://beta/readme'))).toBe(-32602);
    await hidden.close();
    const reached = await connect(era, `${suite.served.url}/servers/${alphaId}/mcp`, secret);
    expect(await reached.listPrompts()).toEqual(['greet']);
    expect(await reached.getPrompt('greet')).toContain('from alpha');
    expect(await reached.listResources()).toEqual(['fixture://alpha/readme']);
    expect(await reached.readResource('fixture://alpha/readme')).toContain('readme of alpha');
    expect(await reached.listTemplates()).toEqual(['fixture://alpha/notes/{id}']);
    await reached.close();
  });

  it.each(ERAS)('a key’s own prompts and resources patterns decide over reach (%s)', async (era) => {
    const { betaId, keyWith } = await account();
    // No tool at all, yet beta's prompt and alpha's resources by their own patterns (over {prefix}__{name or URI}).
    const secret = await keyWith({ tools: ['nothing__*'], prompts: ['beta__greet'], resources: ['alpha__fixture://alpha/*'] });
    const door = await connect(era, `${suite.served.url}/mcp`, secret);
    expect(await door.listTools()).toEqual([]);
    expect(await door.listPrompts()).toEqual(['beta__greet']);
    expect(await door.getPrompt('beta__greet')).toContain('from beta');
    expect(await rpcCode(door.getPrompt('alpha__greet'))).toBe(-32602);
    expect(await door.listResources()).toEqual(['fixture://alpha/readme']);
    expect(await door.readResource('fixture://alpha/readme')).toContain('readme of alpha');
    expect(await rpcCode(door.readResource('fixture://beta/readme'))).toBe(-32602);
    expect(await door.listTemplates()).toEqual(['fixture://alpha/notes/{id}']);
    await door.close();
    // The same patterns on the per-server endpoint: beta serves its prompt, not its resources.
    const one = await connect(era, `${suite.served.url}/servers/${betaId}/mcp`, secret);
    expect(await one.listPrompts()).toEqual(['greet']);
    expect(await one.listResources()).toEqual([]);
    await one.close();
    // Patterns set, tools free: the patterns still narrow.
    const narrowed = await connect(era, `${suite.served.url}/mcp`, await keyWith({ resources: ['beta__*'] }));
    expect(await narrowed.listPrompts()).toEqual(['alpha__greet', 'beta__greet']);
    expect(await narrowed.listResources()).toEqual(['fixture://beta/readme']);
    await narrowed.close();
  });

  it.each(ERAS)('a URI listed by two servers is served by neither on /mcp; each serves it on /servers/{id}/mcp (%s)', async (era) => {
    const { admin, keyWith } = await account();
    // Registered first: on main it answered every read of the URI, shadowing the other.
    const first = await createServer(admin, { name: 'first', type: 'http', endpoint: shared.url });
    const second = await createServer(admin, { name: 'second', type: 'http', endpoint: shared.url });
    const secret = await keyWith({});
    const door = await connect(era, `${suite.served.url}/mcp`, secret);
    expect(await door.listResources()).toEqual(['fixture://alpha/readme', 'fixture://beta/readme']);
    expect(await rpcCode(door.readResource('fixture://shared/readme'))).toBe(-32602);
    await door.close();
    for (const id of [first.id, second.id]) {
      const one = await connect(era, `${suite.served.url}/servers/${id}/mcp`, secret);
      expect(await one.listResources()).toEqual(['fixture://shared/readme']);
      expect(await one.readResource('fixture://shared/readme')).toContain('readme of shared');
      await one.close();
    }
    // A key that reaches only one of the two is served it: the URI is ambiguous to neither of its servers.
    const onlyFirst = await connect(era, `${suite.served.url}/mcp`, await keyWith({ tools: ['first__*'] }));
    expect(await onlyFirst.listResources()).toEqual(['fixture://shared/readme']);
    expect(await onlyFirst.readResource('fixture://shared/readme')).toContain('readme of shared');
    await onlyFirst.close();
  });

  it('REST GET /servers/{id}/tools lists only the tools the key may call', async () => {
    const { alphaId, betaId, keyWith } = await account();
    const limited = api(suite.served, await keyWith({ tools: ['alpha__lookup', 'alpha__c*'] }));
    const names = async (id: string) => (expectSuccess(await limited.get(`/servers/${id}/tools`), 200) as Json[]).map((tool: Json) => tool.name).sort();
    expect(await names(alphaId)).toEqual(['count', 'lookup']);
    expect(await names(betaId)).toEqual([]);
    const open = api(suite.served, await keyWith({}));
    expect((expectSuccess(await open.get(`/servers/${betaId}/tools`), 200) as Json[]).length).toBe(3);
  });
});

describe.each(ADAPTERS)('a key with an allowlist and no scope list holds every scope but servers:write ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { allowPrivateNetworks: true, onError: () => {} });

  it('it cannot create, rename or delete servers; given servers:write explicitly, it can', async () => {
    const name = `scoped-${++seq}-${Math.random().toString(36).slice(2, 7)}`;
    const keyWith = async (input: Json) => api(suite.served, (await suite.served.fleet.keys.create({ account: name, tier: 'pro', ...input }))._unsafeUnwrap().secret);
    const admin = await keyWith({});
    const search = await createServer(admin, { name: 'search', type: 'http', endpoint: alpha.url });
    for (const lists of [{ tools: ['search__*'] }, { prompts: ['search__*'] }, { resources: ['search__*'] }]) {
      const limited = await keyWith(lists);
      const refused = { required_scope: 'servers:write' };
      expectError(await limited.post('/servers', { name: 'files', type: 'http', endpoint: beta.url }), 403, 'FORBIDDEN', refused);
      // The audit's rename: a server moved into the key's own patterns.
      expectError(await limited.put(`/servers/${search.id}`, { name: 'search__files' }), 403, 'FORBIDDEN', refused);
      expectError(await limited.delete(`/servers/${search.id}`), 403, 'FORBIDDEN', refused);
      // Every other scope stays: it reads servers and lists tools.
      expectSuccess(await limited.get('/servers'), 200);
      expectSuccess(await limited.get(`/servers/${search.id}/tools`), 200);
    }
    const allowed = await keyWith({ tools: ['search__*'], scopes: ['servers:read', 'servers:write', 'tool_calls:read'] });
    const files = expectSuccess(await allowed.post('/servers', { name: 'files', type: 'http', endpoint: beta.url }), 201);
    expectSuccess(await allowed.put(`/servers/${files.id}`, { name: 'files2' }), 200);
    // A key without any list keeps every scope.
    expectSuccess(await admin.post('/servers', { name: 'third', type: 'http', endpoint: beta.url }), 201);
  });
});

describe.each(ADAPTERS)('prompt and resource lists from a custom authenticate ($name)', (adapter) => {
  const suite = serveForSuite(adapter, {
    allowPrivateNetworks: true,
    onError: () => {},
    authenticate: (request) => {
      const token = request.headers.get('authorization');
      if (token === 'Bearer open') return { account: 'custom-doors', tier: 'pro', scopes: null };
      if (token === 'Bearer prompts') return { account: 'custom-doors', tier: 'pro', scopes: null, prompts: ['alpha__*'], resources: ['beta__*'] };
      if (token === 'Bearer broken') return { account: 'custom-doors', tier: 'pro', scopes: null, resources: 'beta__*' as never };
      return null;
    },
  });

  it.each(ERAS)('the principal’s prompts and resources are enforced; a malformed list is refused (%s)', async (era) => {
    const open = api(suite.served, 'open');
    if (expectSuccess(await open.get('/servers'), 200).length === 0) {
      await createServer(open, { name: 'alpha', type: 'http', endpoint: alpha.url });
      await createServer(open, { name: 'beta', type: 'http', endpoint: beta.url });
    }
    const door = await connect(era, `${suite.served.url}/mcp`, 'prompts');
    expect(await door.listPrompts()).toEqual(['alpha__greet']);
    expect(await door.listResources()).toEqual(['fixture://beta/readme']);
    expect(await door.listTools()).toHaveLength(6);
    await door.close();
    expectError(await api(suite.served, 'prompts').post('/servers', { name: 'gamma', type: 'http', endpoint: beta.url }), 403, 'FORBIDDEN', {
      required_scope: 'servers:write',
    });
    expect((await api(suite.served, 'broken').get('/servers')).status).toBe(500);
  });
});
