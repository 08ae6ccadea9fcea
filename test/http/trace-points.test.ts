import { readFileSync } from 'node:fs';
import { channel, tracingChannel } from 'node:diagnostics_channel';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startV2ToolServer, type ToolServer } from '../../packages/core/src/mcp/fixtures/tool-servers.js';
import { startReceiver } from '../../packages/core/src/webhooks/fixtures/receiver.js';
import { ADAPTERS } from '../support/adapters.js';
import { type ApiClient, createServer, expectSuccess, freshClient, type Json, serveForSuite, uniqueName } from '../support/http-client.js';

/** The channels of docs/observability.md, with their fields: the document's tables are the expectation. */
interface Documented {
  tracing: boolean;
  fields: Set<string>;
  always: Set<string>;
}

function documentedChannels(): Map<string, Documented> {
  const doc = readFileSync(new URL('../../docs/observability.md', import.meta.url), 'utf8');
  const tableOf = (text: string) => {
    const rows = [...text.matchAll(/^\| `([a-z_]+)` \| (yes|no) \|/gm)];
    return { fields: new Set(rows.map((row) => row[1] as string)), always: new Set(rows.filter((row) => row[2] === 'yes').map((row) => row[1] as string)) };
  };
  const settledStart = doc.indexOf('Fields every TracingChannel message gains');
  const settled = tableOf(doc.slice(settledStart, doc.indexOf('**Channels**', settledStart)));
  const channels = new Map<string, Documented>();
  const sections = doc.split(/^### /m).slice(1);
  for (const section of sections) {
    const name = /^`(mcp-fleet:[a-z.]+)`/.exec(section)?.[1];
    if (name === undefined) continue;
    const tracing = /^TracingChannel\./m.test(section);
    const own = tableOf(section);
    channels.set(name, {
      tracing,
      fields: new Set([...own.fields, ...(tracing ? settled.fields : [])]),
      // `outcome` is set once the action settled; the final message is what is checked.
      always: new Set([...own.always, ...(tracing ? settled.always : [])]),
    });
  }
  return channels;
}

const DOCUMENTED = documentedChannels();

interface Seen {
  channel: string;
  event: string;
  /** The message as it was when this event was published. */
  snapshot: Record<string, unknown>;
  /** The message itself (TracingChannels publish one object for all the events of an action). */
  message: Record<string, unknown>;
}

const seen: Seen[] = [];
const unsubscribes: (() => void)[] = [];

beforeAll(() => {
  for (const [name, { tracing }] of DOCUMENTED) {
    if (tracing) {
      const traced = tracingChannel(name);
      const handlers = Object.fromEntries(
        (['start', 'end', 'asyncStart', 'asyncEnd', 'error'] as const).map((event) => [
          event,
          (message: unknown) => seen.push({ channel: name, event, snapshot: { ...(message as object) }, message: message as Record<string, unknown> }),
        ]),
      ) as unknown as Parameters<typeof traced.subscribe>[0];
      traced.subscribe(handlers);
      unsubscribes.push(() => traced.unsubscribe(handlers));
    } else {
      const listener = (message: unknown) => seen.push({ channel: name, event: 'publish', snapshot: { ...(message as object) }, message: message as Record<string, unknown> });
      channel(name).subscribe(listener);
      unsubscribes.push(() => channel(name).unsubscribe(listener));
    }
  }
});
afterAll(() => {
  for (const off of unsubscribes) off();
});

const UPSTREAM_TOKEN = 'upstream-secret-3b9f';
const ARGUMENT = 'argument-text-7c1e';

let upstream: ToolServer;
beforeAll(async () => {
  upstream = await startV2ToolServer({ authorize: (h) => h === `Bearer ${UPSTREAM_TOKEN}` });
});
afterAll(async () => {
  await upstream.close();
});

/** Each action traced on `name` since the last reset (by message), with the events it published in order. */
function actions(name: string): { message: Record<string, unknown>; events: string[] }[] {
  const byMessage = new Map<object, string[]>();
  for (const entry of seen) {
    if (entry.channel !== name) continue;
    const events = byMessage.get(entry.message) ?? [];
    events.push(entry.event);
    byMessage.set(entry.message, events);
  }
  return [...byMessage].map(([message, events]) => ({ message: message as Record<string, unknown>, events }));
}

/** Every message published holds the documented fields only, the ones said to be always there, and no secret. */
function expectDocumentedAndClean(secrets: string[]): void {
  for (const entry of seen) {
    const documented = DOCUMENTED.get(entry.channel) as Documented;
    for (const field of Object.keys(entry.snapshot)) expect(documented.fields, `${entry.channel} ${entry.event}: ${field}`).toContain(field);
    const text = JSON.stringify(entry.snapshot, (_key, value: unknown) => (value instanceof Error ? { ...value, message: value.message } : value));
    for (const secret of secrets) expect(text, `${entry.channel} ${entry.event}`).not.toContain(secret);
  }
  for (const { channel: name, message } of seen) {
    const documented = DOCUMENTED.get(name) as Documented;
    for (const field of documented.always) expect(Object.keys(message), `${name}: ${field}`).toContain(field);
  }
}

/** What an `mcp-fleet:mcp.client` message says of the fixture upstream's address, and its `meta` no subscriber wrote to. */
const upstreamAddress = () => ({ server_address: '127.0.0.1', server_port: Number(new URL(upstream.url).port), meta: {} });

/** An action's events, in the order a TracingChannel publishes them for an answer that came later. */
const ASYNC_OK = ['start', 'end', 'asyncStart', 'asyncEnd'];

it('docs/observability.md documents the nine channels', () => {
  expect([...DOCUMENTED.keys()].sort()).toEqual(
    [
      'mcp-fleet:auth',
      'mcp-fleet:http.request',
      'mcp-fleet:mcp.client',
      'mcp-fleet:mcp.server',
      'mcp-fleet:operation',
      'mcp-fleet:probe',
      'mcp-fleet:ratelimit',
      'mcp-fleet:store',
      'mcp-fleet:webhook.delivery',
    ].sort(),
  );
  expect([...DOCUMENTED].filter(([, d]) => d.tracing).map(([name]) => name).sort()).toEqual(
    ['mcp-fleet:http.request', 'mcp-fleet:mcp.client', 'mcp-fleet:mcp.server', 'mcp-fleet:operation', 'mcp-fleet:store'].sort(),
  );
});

describe.each(ADAPTERS)('trace points over HTTP ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { allowPrivateNetworks: true, onError: () => {}, rateLimit: {}, webhooks: { pollIntervalMs: 20 } });
  /** Secrets a test made besides the key and the upstream's token. */
  const secrets: string[] = [];
  let client: ApiClient & { account: string };
  let serverId: string;
  let serverName: string;

  beforeAll(async () => {
    client = await freshClient(suite.served);
    serverName = uniqueName('traced');
    const created = await createServer(client, {
      name: serverName,
      type: 'http',
      endpoint: upstream.url,
      authentication: { type: 'bearer', token: UPSTREAM_TOKEN },
    });
    serverId = created.id;
  });
  beforeEach(() => {
    seen.length = 0;
  });
  afterEach(async () => {
    // Over a store across the network a write the answer did not wait for (a key's last use) may still be in flight.
    await vi.waitFor(() => expectDocumentedAndClean([client.key as string, UPSTREAM_TOKEN, ARGUMENT, ...secrets]));
  });

  function expectRequest(method: string, route: string, status: number): void {
    const requests = actions('mcp-fleet:http.request');
    expect(requests).toHaveLength(1);
    const [{ message, events }] = requests as [{ message: Record<string, unknown>; events: string[] }];
    expect(events).toEqual(ASYNC_OK);
    expect(message).toMatchObject({ method, route, account: client.account, status, outcome: 'ok' });
    expect(message.request_id).toMatch(/^req_/);
    const auth = seen.filter((entry) => entry.channel === 'mcp-fleet:auth');
    expect(auth.map((entry) => entry.snapshot)).toEqual([
      { request_id: message.request_id, method: 'api_key', outcome: 'ok', account: client.account, key_id: expect.any(String) },
    ]);
    const decisions = seen.filter((entry) => entry.channel === 'mcp-fleet:ratelimit');
    expect(decisions.length).toBeGreaterThanOrEqual(1);
    expect(decisions[0]?.snapshot).toMatchObject({ allowed: true, cost: 1 });
  }

  function expectOperation(fields: Record<string, unknown>): void {
    const runs = actions('mcp-fleet:operation');
    expect(runs.map(({ message }) => message)).toEqual([{ account: client.account, outcome: 'ok', ...fields }]);
  }

  it('a GET: the request, its authentication, its rate-limit decision and the operation', async () => {
    expectSuccess(await client.get(`/servers/${serverId}`), 200);
    expectRequest('GET', '/servers/:id', 200);
    expectOperation({ operation: 'servers.get', via: 'http', server_id: serverId });
  });

  it('a POST', async () => {
    const created = await createServer(client, { name: uniqueName('posted'), type: 'http', endpoint: upstream.url, authentication: { type: 'bearer', token: UPSTREAM_TOKEN } });
    expect(created.id).toMatch(/^srv_/);
    expectRequest('POST', '/servers', 201);
    expectOperation({ operation: 'servers.create', via: 'http' });
  });

  it('a REST tool call: the operation and the upstream call within it, no argument, no result', async () => {
    const data = expectSuccess(await client.post(`/servers/${serverId}/tools/call`, { name: 'echo', arguments: { text: ARGUMENT } }), 200);
    expect(data.result.content[0].text).toBe(ARGUMENT);
    expectRequest('POST', '/servers/:id/tools/call', 200);
    expectOperation({ operation: 'tools.call', via: 'http', server_id: serverId, tool_name: 'echo' });
    const calls = actions('mcp-fleet:mcp.client').filter(({ message }) => message.method === 'tools/call');
    expect(calls).toEqual([{ message: { method: 'tools/call', server_id: serverId, transport: 'http', era: '2026-07-28', tool_name: 'echo', outcome: 'ok', ...upstreamAddress() }, events: ASYNC_OK }]);
    // The upstream call starts within the operation, which starts within the request.
    const order = seen.filter((entry) => entry.event === 'start').map((entry) => entry.channel);
    expect(order.indexOf('mcp-fleet:http.request')).toBeLessThan(order.indexOf('mcp-fleet:operation'));
    expect(order.indexOf('mcp-fleet:operation')).toBeLessThan(order.lastIndexOf('mcp-fleet:mcp.client'));
  });

  it('a /v1/mcp tools/call: the JSON-RPC request, the operation it runs and the upstream call', async () => {
    const mcp = new Client({ name: 'trace-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${suite.served.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${client.key}` } } }));
    seen.length = 0;
    const result = (await mcp.callTool({ name: `${serverName}__echo`, arguments: { text: ARGUMENT } })) as Json;
    expect(result.content[0].text).toBe(ARGUMENT);
    await mcp.close();

    const requests = actions('mcp-fleet:http.request').filter(({ message }) => message.method === 'POST');
    expect(requests.length).toBeGreaterThanOrEqual(1);
    expect(requests.at(-1)?.message).toMatchObject({ route: '/mcp', account: client.account, status: 200, outcome: 'ok' });
    const served = actions('mcp-fleet:mcp.server');
    expect(served).toEqual([
      {
        message: { method: 'tools/call', jsonrpc_id: expect.anything(), era: '2026-07-28', protocol_version: '2026-07-28', transport: 'streamable-http', account: client.account, tool_name: `${serverName}__echo`, outcome: 'ok' },
        events: ASYNC_OK,
      },
    ]);
    expectOperation({ operation: 'tools.call', via: 'mcp', server_id: serverId, tool_name: 'echo' });
    const calls = actions('mcp-fleet:mcp.client').filter(({ message }) => message.method === 'tools/call');
    expect(calls.map(({ message }) => message)).toEqual([{ method: 'tools/call', server_id: serverId, transport: 'http', era: '2026-07-28', tool_name: 'echo', outcome: 'ok', ...upstreamAddress() }]);
  });

  it('a /v1/mcp tools/call refused (an unknown tool): error, with its JSON-RPC code', async () => {
    const mcp = new Client({ name: 'trace-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${suite.served.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${client.key}` } } }));
    seen.length = 0;
    const code = await mcp.callTool({ name: 'nowhere__echo', arguments: { text: ARGUMENT } }).then(
      () => undefined,
      (error: { code: number }) => error.code,
    );
    expect(code).toBe(-32602);
    await mcp.close();
    expect(actions('mcp-fleet:mcp.server')).toEqual([
      {
        message: { method: 'tools/call', jsonrpc_id: expect.anything(), era: '2026-07-28', protocol_version: '2026-07-28', transport: 'streamable-http', account: client.account, tool_name: 'nowhere__echo', outcome: 'error', jsonrpc_error_code: -32602, error: expect.anything() },
        events: ['start', 'end', 'error', 'asyncStart', 'asyncEnd'],
      },
    ]);
  });

  it('a 2025 session at /v1/mcp: its era and session id on each JSON-RPC request', async () => {
    const v1 = new V1Client({ name: 'trace-test-v1', version: '1.0.0' });
    const transport = new V1Transport(new URL(`${suite.served.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${client.key}` } } });
    await v1.connect(transport);
    seen.length = 0;
    const { tools } = await v1.listTools();
    expect(tools.map((tool) => tool.name)).toContain(`${serverName}__echo`);
    expect(actions('mcp-fleet:mcp.server').map(({ message }) => message)).toEqual([
      { method: 'tools/list', jsonrpc_id: expect.anything(), era: '2025', protocol_version: expect.stringMatching(/^2025-/), transport: 'streamable-http', account: client.account, session_id: transport.sessionId, outcome: 'ok' },
    ]);
    await transport.terminateSession();
    await v1.close();
  });

  it('a probe and a webhook delivery attempt, each published once done', async () => {
    const receiver = await startReceiver();
    try {
      const hook = expectSuccess(await client.post('/webhooks', { url: receiver.url, events: ['server.created'] }), 201);
      secrets.push(hook.secret);
      expectSuccess(await client.get(`/servers/${serverId}/health`), 200);
      const probes = seen.filter((entry) => entry.channel === 'mcp-fleet:probe').map((entry) => entry.snapshot);
      expect(probes).toEqual([{ server_id: serverId, account: client.account, transport: 'http', outcome: 'ok', era: '2026-07-28', duration_ms: expect.any(Number) }]);

      expectSuccess(await client.post(`/webhooks/${hook.id}/test`), 202);
      await receiver.waitFor(1);
      await expect.poll(() => seen.filter((entry) => entry.channel === 'mcp-fleet:webhook.delivery').length).toBe(1);
      const [delivery] = seen.filter((entry) => entry.channel === 'mcp-fleet:webhook.delivery');
      expect(delivery?.snapshot).toEqual({
        account: client.account,
        webhook_id: hook.id,
        delivery_id: expect.stringMatching(/^dlv_/),
        event_type: 'webhook.test',
        attempt: 1,
        outcome: 'ok',
        status_code: 200,
        duration_ms: expect.any(Number),
      });
    } finally {
      await receiver.close();
    }
  });

  it("the embedder's fleet.* API: its operations are traced too (via: api), an Err answer on `error`", async () => {
    const fleet = suite.served.fleet;
    expect((await fleet.servers.get(client.account, serverId)).isOk()).toBe(true);
    const missing = await fleet.servers.get(client.account, 'srv_000000000000000000000000');
    expect(missing.isErr()).toBe(true);
    const runs = actions('mcp-fleet:operation');
    expect(runs).toEqual([
      { message: { operation: 'servers.get', account: client.account, via: 'api', server_id: serverId, outcome: 'ok' }, events: ASYNC_OK },
      {
        message: { operation: 'servers.get', account: client.account, via: 'api', server_id: 'srv_000000000000000000000000', outcome: 'error', error_code: 'SERVER_NOT_FOUND', error: expect.anything() },
        events: ['start', 'end', 'error', 'asyncStart', 'asyncEnd'],
      },
    ]);
  });
});
