import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../store.js';
import { createFleet, type Fleet } from '../fleet.js';
import type { FleetOptions } from '../options.js';
import type { FleetEventMap } from '../events/catalog.js';
import type { ServerInput } from '../registry/schema.js';
import type { CommitResult, IndexStore, IndexTransaction } from '../storage/index-store.js';
import { MemoryIndexStore } from '../storage/memory-index-store.js';
import { closedAfterEach, refusedPort } from '../mcp/fixtures/listen.js';
import { startAuthServer } from '../mcp/fixtures/misc-servers.js';
import { startHostileUpstream } from '../mcp/fixtures/hostile-upstream.js';
import { startModernServer } from '../mcp/fixtures/modern-server.js';
import { startV1ToolServer, startV2ToolServer } from '../mcp/fixtures/tool-servers.js';
import { startWsServer } from '../mcp/fixtures/ws-server.js';
import { EVERYTHING, fixture, NODE } from '../stdio/test-helpers.js';
import { callInputSchema, plainCallInput } from './tool-service.js';

const ACCOUNT = 'acct_tools';
const started = closedAfterEach();
const fleets: Fleet[] = [];
afterEach(async () => {
  await Promise.all(fleets.splice(0).map((f) => f.close()));
});

function fleet(options: FleetOptions = {}): Fleet {
  // Not root, the fleet cannot give each account a user of its own: the tests' several accounts then share one.
  const stdio = { commands: [NODE], ...(process.getuid?.() !== 0 && { sharedUser: true }) };
  const created = createFleet({ allowPrivateNetworks: true, stdio, toolCalls: { backoff: { baseMs: 1, maxMs: 5 } }, ...options });
  fleets.push(created);
  return created;
}

async function serverOf(f: Fleet, body: Record<string, unknown>, account = ACCOUNT): Promise<string> {
  const created = await f.servers.create(account, { name: `s-${Math.random().toString(36).slice(2)}`, ...body } as ServerInput);
  return created._unsafeUnwrap().id;
}

const textOf = (result: unknown) => ((result as { content: { text: string }[] }).content[0] as { text: string }).text;

describe.each([
  ['v2 server (2026-07-28)', startV2ToolServer],
  ['v1 sdk server (2025)', startV1ToolServer],
])('tool calls over Streamable HTTP: %s', (_name, start) => {
  it('lists the tools and relays a call result; isError is recorded as error (TOOL_ERROR)', async () => {
    const server = await started(start());
    const f = fleet();
    const id = await serverOf(f, { type: 'http', endpoint: server.url });

    const tools = (await f.tools.list(ACCOUNT, id))._unsafeUnwrap();
    expect(tools.map((t) => t.name).sort()).toEqual(['echo', 'fail', 'slow']);

    const ok = (await f.tools.call(ACCOUNT, id, 'echo', { text: 'hello' }))._unsafeUnwrap();
    expect(ok).toMatchObject({ server_id: id, tool: 'echo', status: 'success', attempts: 1, error: null, via: 'api' });
    expect(textOf(ok.result)).toBe('hello');
    expect(ok.id).toMatch(/^call_/);

    const failed = (await f.tools.call(ACCOUNT, id, 'fail', {}))._unsafeUnwrap();
    expect(failed).toMatchObject({ status: 'error', attempts: 1, error: { code: 'TOOL_ERROR' } });
    expect(failed.result?.isError).toBe(true);

    const stored = (await f.toolCalls.get(ACCOUNT, failed.id))._unsafeUnwrap();
    const { result: _result, ...record } = failed;
    expect(stored).toEqual(record);
  });

  it('a call is listed under every filter and counted in health the moment it answers; a failed record write fails the call and frees its lane', async () => {
    const server = await started(start());
    let failCommits = false;
    const memory = new MemoryIndexStore();
    const index: IndexStore = {
      commit: (tx) => (failCommits ? Promise.reject(new Error('index down')) : memory.commit(tx)),
      claimOf: (key) => memory.claimOf(key),
      range: (set, options) => memory.range(set, options),
      count: (set) => memory.count(set),
      close: () => memory.close(),
    };
    const f = fleet({ store: { ...createMemoryStore(), index }, toolCalls: { maxConcurrentPerAccount: 1 } });
    const id = await serverOf(f, { type: 'http', endpoint: server.url });
    const failed = (await f.tools.call(ACCOUNT, id, 'fail', {}))._unsafeUnwrap();
    const page = { page: 1, limit: 10 };
    for (const filters of [{}, { server_id: id }, { status: 'error' as const }, { tool: 'fail' }, { server_id: id, status: 'error' as const, tool: 'fail' }]) {
      expect((await f.toolCalls.list(ACCOUNT, { ...page, ...filters }))._unsafeUnwrap().data.map((c) => c.id)).toEqual([failed.id]);
    }
    const ok = (await f.tools.call(ACCOUNT, id, 'echo', { text: 'x' }))._unsafeUnwrap();
    expect((await f.toolCalls.list(ACCOUNT, { ...page, status: 'success' }))._unsafeUnwrap().data.map((c) => c.id)).toEqual([ok.id]);
    // The probe at registration and two calls, one failed.
    expect((await f.servers.health(ACCOUNT, id))._unsafeUnwrap().error_rate).toBe('33.33%');

    failCommits = true;
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'lost' }))._unsafeUnwrapErr()).toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
    failCommits = false;
    // With one lane per account, a lane kept by the failed write would make this a 429.
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'again' }))._unsafeUnwrap().status).toBe('success');
  });

  it('a successful call over the memory index writes its listing through the index commit as every append does: a commit that throws fails the call', async () => {
    const server = await started(start());
    /** The memory index, whose commits throw (at once) while `failing`. */
    class FailingIndex extends MemoryIndexStore {
      failing = false;
      override commit(tx: IndexTransaction): CommitResult {
        if (this.failing) throw new Error('index down');
        return super.commit(tx);
      }
    }
    const index = new FailingIndex();
    const f = fleet({ store: { ...createMemoryStore(), index }, toolCalls: { maxConcurrentPerAccount: 1 } });
    const id = await serverOf(f, { type: 'http', endpoint: server.url });
    index.failing = true;
    const lost = await f.tools.call(ACCOUNT, id, 'echo', { text: 'lost' });
    index.failing = false;
    expect(lost._unsafeUnwrapErr()).toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
    expect((await f.toolCalls.list(ACCOUNT, { page: 1, limit: 10, status: 'success' }))._unsafeUnwrap().data).toEqual([]);
    // With one lane per account, a lane kept by the failed write would make this a 429.
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'again' }))._unsafeUnwrap().status).toBe('success');
  });

  it('retries a server that fails twice (HTTP 503) to success: attempts = 3; without retry: one attempt, error', async () => {
    const flaky = await started(start({ failFirstCalls: 2 }));
    const f = fleet();
    const id = await serverOf(f, { type: 'http', endpoint: flaky.url, retry: { enabled: true, max_attempts: 3 } });
    const outcome = (await f.tools.call(ACCOUNT, id, 'echo', { text: 'again' }))._unsafeUnwrap();
    expect(outcome).toMatchObject({ status: 'success', attempts: 3, error: null });
    expect(textOf(outcome.result)).toBe('again');

    const once = await started(start({ failFirstCalls: 2 }));
    const plain = await serverOf(f, { type: 'http', endpoint: once.url });
    expect((await f.tools.call(ACCOUNT, plain, 'echo', { text: 'x' }))._unsafeUnwrap()).toMatchObject({ status: 'error', attempts: 1 });
  });

  it('never retries past max_attempts, and never a tool that answered isError', async () => {
    const flaky = await started(start({ failFirstCalls: 5 }));
    const f = fleet();
    const id = await serverOf(f, { type: 'http', endpoint: flaky.url, retry: { enabled: true, max_attempts: 2 } });
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'x' }))._unsafeUnwrap()).toMatchObject({ status: 'error', attempts: 2 });
    const healthy = await started(start());
    const other = await serverOf(f, { type: 'http', endpoint: healthy.url, retry: { enabled: true, max_attempts: 3 } });
    expect((await f.tools.call(ACCOUNT, other, 'fail', {}))._unsafeUnwrap()).toMatchObject({ status: 'error', attempts: 1 });
  });

  it('ends a slow tool past the timeout as timeout (UPSTREAM_TIMEOUT)', async () => {
    const server = await started(start());
    const f = fleet();
    const id = await serverOf(f, { type: 'http', endpoint: server.url, timeout: 300 });
    const outcome = (await f.tools.call(ACCOUNT, id, 'slow', { ms: 3000 }))._unsafeUnwrap();
    expect(outcome).toMatchObject({ status: 'timeout', attempts: 1, error: { code: 'UPSTREAM_TIMEOUT' }, result: null });
  });

  it('a timed-out call of a tool without hints is not repeated: the tool ran once', async () => {
    const server = await started(start());
    const f = fleet();
    // A timeout long enough for the listing before the call on a loaded machine, so the call surely reaches the tool.
    const id = await serverOf(f, { type: 'http', endpoint: server.url, timeout: 1000, retry: { enabled: true, max_attempts: 3 } });
    const outcome = (await f.tools.call(ACCOUNT, id, 'slow', { ms: 4000 }))._unsafeUnwrap();
    expect(outcome).toMatchObject({ status: 'timeout', attempts: 1, error: { code: 'UPSTREAM_TIMEOUT' } });
    expect(server.slowRuns()).toBe(1);
  });

  it.each([{ idempotentHint: true }, { readOnlyHint: true }])('a timed-out call of a tool declaring %o is repeated', async (hints) => {
    const server = await started(start({ slowAnnotations: hints }));
    const f = fleet();
    const id = await serverOf(f, { type: 'http', endpoint: server.url, timeout: 800, retry: { enabled: true, max_attempts: 3 } });
    const outcome = (await f.tools.call(ACCOUNT, id, 'slow', { ms: 4000 }))._unsafeUnwrap();
    expect(outcome).toMatchObject({ status: 'timeout', attempts: 3 });
    expect(server.slowRuns()).toBe(3);
  });

  it('every attempt and wait of a call together stay within toolCalls.maxTotalMs', async () => {
    const server = await started(start({ slowAnnotations: { idempotentHint: true } }));
    const f = fleet({ toolCalls: { maxTotalMs: 700, backoff: { baseMs: 1, maxMs: 5 } } });
    const id = await serverOf(f, { type: 'http', endpoint: server.url, timeout: 300, retry: { enabled: true, max_attempts: 10 } });
    const began = performance.now();
    const outcome = (await f.tools.call(ACCOUNT, id, 'slow', { ms: 5000 }))._unsafeUnwrap();
    const took = performance.now() - began;
    // 10 attempts of 300 ms would be 3 s: the budget allows three, the last one cut to what is left.
    expect(outcome).toMatchObject({ status: 'timeout', error: { code: 'UPSTREAM_TIMEOUT' } });
    expect(outcome.attempts).toBeLessThanOrEqual(3);
    expect(took).toBeLessThan(2000);
  });

  it('an account has at most toolCalls.maxConcurrentPerAccount calls in flight: the next is 429, scope concurrency', async () => {
    const server = await started(start());
    const f = fleet({ toolCalls: { maxConcurrentPerAccount: 2 } });
    const id = await serverOf(f, { type: 'http', endpoint: server.url, timeout: 5000 });
    const slow = [f.tools.call(ACCOUNT, id, 'slow', { ms: 400 }), f.tools.call(ACCOUNT, id, 'slow', { ms: 400 })];
    await new Promise((resolve) => setTimeout(resolve, 50));
    const refused = (await f.tools.call(ACCOUNT, id, 'echo', { text: 'third' }))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'RATE_LIMITED', status: 429, details: { limit: 2, scope: 'concurrency' } });
    // Another account is not held up by this one.
    const otherId = await serverOf(f, { type: 'http', endpoint: server.url }, 'acct_other');
    expect((await f.tools.call('acct_other', otherId, 'echo', { text: 'other' }))._unsafeUnwrap().status).toBe('success');
    for (const call of await Promise.all(slow)) expect(call._unsafeUnwrap().status).toBe('success');
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'after' }))._unsafeUnwrap().status).toBe('success');
  });

  it('sends a progressToken with every call', async () => {
    const server = await started(start());
    const f = fleet();
    const id = await serverOf(f, { type: 'http', endpoint: server.url });
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'p' }))._unsafeUnwrap().status).toBe('success');
    expect(server.methods).toContain('tools/call');
    expect(server.progressTokens).toHaveLength(1);
  });

  it('sends the bearer token to the server', async () => {
    const server = await started(start({ authorize: (h) => h === 'Bearer tool-secret' }));
    const f = fleet();
    const id = await serverOf(f, { type: 'http', endpoint: server.url, authentication: { type: 'bearer', token: 'tool-secret' } });
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'auth' }))._unsafeUnwrap().status).toBe('success');
    const wrong = await serverOf(f, { type: 'http', endpoint: server.url, authentication: { type: 'bearer', token: 'nope' } });
    const refused = (await f.tools.call(ACCOUNT, wrong, 'echo', { text: 'auth' }))._unsafeUnwrap();
    expect(refused).toMatchObject({ status: 'error', error: { code: 'UPSTREAM_AUTH_FAILED' } });
    expect(JSON.stringify(refused)).not.toContain('nope');
    const listed = await f.tools.list(ACCOUNT, wrong);
    expect(listed._unsafeUnwrapErr()).toMatchObject({ code: 'UPSTREAM_AUTH_FAILED', status: 502 });
  });

  it('sends an oauth2 client-credentials token from the token endpoint, fetched once for two calls', async () => {
    const auth = await started(startAuthServer({ clientId: 'fleet', clientSecret: 'cc-secret', expiresIn: 3600 }));
    const server = await started(start({ authorize: (h) => auth.accepts(h) }));
    const f = fleet();
    const id = await serverOf(f, {
      type: 'http',
      endpoint: server.url,
      authentication: { type: 'oauth2', client_id: 'fleet', client_secret: 'cc-secret', token_url: auth.tokenUrl },
    });
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'a' }))._unsafeUnwrap().status).toBe('success');
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'b' }))._unsafeUnwrap().status).toBe('success');
    expect(auth.requests).toHaveLength(1);
    expect(server.authorizations.filter((h) => h === 'Bearer fixture-token-1').length).toBeGreaterThanOrEqual(2);
  });
});

describe('session and era of kept connections', () => {
  it('a 2025 session the server forgot (HTTP 404) is replaced within the call: a new initialize, one attempt, success', async () => {
    const server = await started(startV1ToolServer());
    const f = fleet();
    const id = await serverOf(f, { type: 'http', endpoint: server.url });
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'one' }))._unsafeUnwrap().status).toBe('success');
    await server.forgetSessions();
    const outcome = (await f.tools.call(ACCOUNT, id, 'echo', { text: 'two' }))._unsafeUnwrap();
    expect(outcome).toMatchObject({ status: 'success', attempts: 1 });
    expect(textOf(outcome.result)).toBe('two');
    expect(server.methods.filter((m) => m === 'initialize')).toHaveLength(2);
  });

  it('a connection in use stays open past idleMs, and closes idleMs after its last call', async () => {
    const server = await started(startV1ToolServer());
    const f = fleet({ toolCalls: { idleMs: 150 } });
    const id = await serverOf(f, { type: 'http', endpoint: server.url });
    // A call every 40 ms for 600 ms: never 150 ms idle, so one connection serves them all.
    for (let i = 0; i < 15; i++) {
      expect((await f.tools.call(ACCOUNT, id, 'echo', { text: String(i) }))._unsafeUnwrap().status).toBe('success');
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    expect(server.methods.filter((m) => m === 'initialize')).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'later' }))._unsafeUnwrap().status).toBe('success');
    expect(server.methods.filter((m) => m === 'initialize')).toHaveLength(2);
  });

  it('a new connection to a 2025 server starts with initialize: the era is remembered across connections', async () => {
    const server = await started(startV1ToolServer());
    const f = fleet({ toolCalls: { idleMs: 50, backoff: { baseMs: 1, maxMs: 5 } } });
    const id = await serverOf(f, { type: 'http', endpoint: server.url });
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'one' }))._unsafeUnwrap().status).toBe('success');
    const discovers = server.methods.filter((m) => m === 'server/discover').length;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'two' }))._unsafeUnwrap().status).toBe('success');
    expect(server.methods.filter((m) => m === 'initialize')).toHaveLength(2);
    expect(server.methods.filter((m) => m === 'server/discover')).toHaveLength(discovers);
  });

  it('mirrors x-mcp-header arguments in Mcp-Param-* headers on a call with no tools/list before it', async () => {
    const server = await started(startV2ToolServer({ headerTool: true }));
    const f = fleet();
    const id = await serverOf(f, { type: 'http', endpoint: server.url });
    const outcome = (await f.tools.call(ACCOUNT, id, 'locate', { region: 'eu-west-1' }))._unsafeUnwrap();
    expect(outcome.status).toBe('success');
    expect(server.callHeaders[0]?.['mcp-param-region']).toBe('eu-west-1');
  });

  it('never calls a tool the SDK left out of tools/list for an invalid x-mcp-header, even by name', async () => {
    const server = await started(startV2ToolServer({ invalidHeaderTool: true }));
    const f = fleet();
    const id = await serverOf(f, { type: 'http', endpoint: server.url });
    const outcome = (await f.tools.call(ACCOUNT, id, 'bad', { data: {} }))._unsafeUnwrap();
    expect(outcome).toMatchObject({ status: 'error', attempts: 1, error: { code: 'TOOL_CALL_REJECTED' }, result: null });
    expect(server.methods).not.toContain('tools/call');
    expect((await f.tools.list(ACCOUNT, id))._unsafeUnwrap().map((t) => t.name)).not.toContain('bad');
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'still' }))._unsafeUnwrap().status).toBe('success');
  });
});

describe('2026-07-28 result types (a hand-written server of the revision)', () => {
  it('reads a listing and a tools/call result without resultType as complete', async () => {
    const server = await started(startModernServer({ tools: true }));
    const f = fleet();
    const id = await serverOf(f, { type: 'http', endpoint: server.url });
    expect((await f.tools.list(ACCOUNT, id))._unsafeUnwrap().map((t) => t.name)).toEqual(['plain', 'ask']);
    const outcome = (await f.tools.call(ACCOUNT, id, 'plain', {}))._unsafeUnwrap();
    expect(outcome).toMatchObject({ status: 'success', attempts: 1, error: null });
    expect(textOf(outcome.result)).toBe('plain answer');
  });

  it('an input_required result is UPSTREAM_INPUT_REQUIRED, said as such, sent once even with retry on', async () => {
    const server = await started(startModernServer({ tools: true }));
    const f = fleet();
    const id = await serverOf(f, { type: 'http', endpoint: server.url, retry: { enabled: true, max_attempts: 3 } });
    const outcome = (await f.tools.call(ACCOUNT, id, 'ask', {}))._unsafeUnwrap();
    expect(outcome).toMatchObject({ status: 'error', attempts: 1, result: null, error: { code: 'UPSTREAM_INPUT_REQUIRED' } });
    expect(outcome.error?.message).toMatch(/asked for input/);
    expect(outcome.error?.message).toMatch(/cannot answer input requests/);
    expect(server.requests.filter((r) => r.method === 'tools/call')).toHaveLength(1);
    // The connection stays usable: the next call is answered.
    expect((await f.tools.call(ACCOUNT, id, 'plain', {}))._unsafeUnwrap().status).toBe('success');
  });
});

describe('tool calls over WebSocket', () => {
  it('relays a call, and a JSON-RPC error is recorded as TOOL_CALL_REJECTED', async () => {
    const ws = await started(startWsServer());
    const f = fleet();
    const id = await serverOf(f, { type: 'websocket', endpoint: ws.url });
    const outcome = (await f.tools.call(ACCOUNT, id, 'echo', { a: 1 }))._unsafeUnwrap();
    expect(outcome).toMatchObject({ status: 'success', attempts: 1 });
    expect(JSON.parse(textOf(outcome.result))).toEqual({ a: 1 });
    expect((await f.tools.list(ACCOUNT, id))._unsafeUnwrap().map((t) => t.name)).toEqual(['echo']);
    const rejected = (await f.tools.call(ACCOUNT, id, 'missing', {}))._unsafeUnwrap();
    expect(rejected).toMatchObject({ status: 'error', error: { code: 'TOOL_CALL_REJECTED' } });
  });

  it('keeps one connection with heartbeat: pings at the interval; closes it when the server is deleted', async () => {
    const ws = await started(startWsServer());
    const f = fleet();
    const id = await serverOf(f, { type: 'websocket', endpoint: ws.url, heartbeat: { enabled: true, interval: 1000 } });
    expect((await f.tools.call(ACCOUNT, id, 'echo', {}))._unsafeUnwrap().status).toBe('success');
    await new Promise((resolve) => setTimeout(resolve, 3300));
    expect((await f.tools.call(ACCOUNT, id, 'echo', {}))._unsafeUnwrap().status).toBe('success');
    expect(ws.methods.filter((m) => m === 'initialize')).toHaveLength(1);
    expect(ws.pings.length).toBeGreaterThanOrEqual(2);
    const gaps = ws.pings.slice(1).map((at, i) => at - (ws.pings[i] as number));
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(800);
    expect(ws.connections()).toBe(1);

    await f.servers.delete(ACCOUNT, id);
    for (let i = 0; i < 50 && ws.connections() > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(ws.connections()).toBe(0);
  });
  it('keeps a 2026-07-28 websocket connection alive with server/discover, which has no ping: no reconnect loop', async () => {
    const ws = await started(startWsServer({ era: '2026-07-28' }));
    const f = fleet();
    const id = await serverOf(f, { type: 'websocket', endpoint: ws.url, heartbeat: { enabled: true, interval: 1000 } });
    expect((await f.tools.call(ACCOUNT, id, 'echo', {}))._unsafeUnwrap().status).toBe('success');
    const atConnect = ws.discovers.length;
    await new Promise((resolve) => setTimeout(resolve, 2300));
    expect(ws.discovers.length - atConnect).toBeGreaterThanOrEqual(2);
    expect(ws.methods).not.toContain('ping');
    expect(ws.connections()).toBe(1);
    expect((await f.tools.call(ACCOUNT, id, 'echo', {}))._unsafeUnwrap().status).toBe('success');
    expect(ws.connections()).toBe(1);
  });
});

describe('kept connections', () => {
  const until = async (check: () => boolean) => {
    for (let i = 0; i < 100 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    return check();
  };

  it('reuses one connection, reopens it after the server dropped it, and closes it when the server is updated', async () => {
    const ws = await started(startWsServer());
    const f = fleet();
    const id = await serverOf(f, { type: 'websocket', endpoint: ws.url });
    for (let i = 0; i < 3; i++) expect((await f.tools.call(ACCOUNT, id, 'echo', {}))._unsafeUnwrap().status).toBe('success');
    expect(ws.methods.filter((m) => m === 'initialize')).toHaveLength(1);
    expect(ws.connections()).toBe(1);

    await ws.close();
    const again = await started(startWsServer());
    const moved = await f.servers.update(ACCOUNT, id, { endpoint: again.url });
    expect(moved.isOk()).toBe(true);
    expect((await f.tools.call(ACCOUNT, id, 'echo', {}))._unsafeUnwrap().status).toBe('success');
    expect(again.connections()).toBe(1);
    await f.servers.update(ACCOUNT, id, { timeout: 5000 });
    expect(await until(() => again.connections() === 0)).toBe(true);
    expect((await f.tools.call(ACCOUNT, id, 'echo', {}))._unsafeUnwrap()).toMatchObject({ status: 'success', attempts: 1 });
    expect(again.methods.filter((m) => m === 'initialize')).toHaveLength(2);
  });
});

describe('legacy HTTP+SSE servers (2024-11-05)', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
  });

  it('server-everything in sse mode: healthy, tools listed and called, after the Streamable HTTP POST was refused', async () => {
    const port = await refusedPort();
    const child = spawn(NODE, [EVERYTHING, 'sse'], { env: { PATH: process.env.PATH, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(child);
    await new Promise<void>((resolve, reject) => {
      let seen = '';
      child.stderr.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes('Server is running')) resolve();
      });
      child.once('exit', () => reject(new Error(`server-everything exited: ${seen}`)));
    });
    const f = fleet();
    const id = await serverOf(f, { type: 'http', endpoint: `http://127.0.0.1:${port}/sse`, timeout: 20_000 });
    expect((await f.servers.health(ACCOUNT, id))._unsafeUnwrap()).toMatchObject({ status: 'healthy' });
    expect((await f.tools.list(ACCOUNT, id))._unsafeUnwrap().map((t) => t.name)).toContain('echo');
    const outcome = (await f.tools.call(ACCOUNT, id, 'echo', { message: 'over sse' }))._unsafeUnwrap();
    expect(outcome).toMatchObject({ status: 'success', attempts: 1 });
    expect(textOf(outcome.result)).toContain('over sse');
  });
});

describe('tool calls over stdio', () => {
  it('calls the echo fixture through the supervisor process', async () => {
    const f = fleet();
    const id = await serverOf(f, { type: 'stdio', command: NODE, args: [fixture('echo-server.mjs')] });
    const outcome = (await f.tools.call(ACCOUNT, id, 'echo', { n: 2 }))._unsafeUnwrap();
    expect(outcome).toMatchObject({ status: 'success' });
    expect(JSON.parse(textOf(outcome.result))).toEqual({ n: 2 });
    expect((await f.tools.call(ACCOUNT, id, 'echo', { n: 3 }))._unsafeUnwrap().status).toBe('success');
    // The probe can still talk to the process between calls.
    expect((await f.servers.health(ACCOUNT, id))._unsafeUnwrap().status).toBe('healthy');
  });

  it.runIf(process.getuid?.() === 0)('a fleet running as root runs stdio servers as the account’s own uid from stdio.uids: no tenant reads the service’s environment', async () => {
    const f = fleet();
    const id = await serverOf(f, { type: 'stdio', command: NODE, args: [fixture('echo-server.mjs')] });
    const outcome = (await f.tools.call(ACCOUNT, id, 'echo', { probe: 'process' }))._unsafeUnwrap();
    const seen = JSON.parse(textOf(outcome.result)) as { uid: number; read: string };
    expect(seen.read).toBe('EACCES');
    expect(seen.uid).toBeGreaterThanOrEqual(200_000);
    expect(seen.uid).toBeLessThanOrEqual(265_535);
  });

  it.runIf(process.getuid?.() === 0)('stdio.user names one user for every account: the first account keeps it, the next is refused with what to set', async () => {
    const f = createFleet({ stdio: { commands: [NODE], user: 'nobody' } });
    fleets.push(f);
    const id = await serverOf(f, { type: 'stdio', command: NODE, args: [fixture('echo-server.mjs')] });
    const outcome = (await f.tools.call(ACCOUNT, id, 'echo', { probe: 'process' }))._unsafeUnwrap();
    expect(JSON.parse(textOf(outcome.result))).toEqual({ uid: 65534, read: 'EACCES' });
    const other = await f.servers.create('acct_other', { name: 'x', type: 'stdio', command: NODE, args: [fixture('echo-server.mjs')] });
    expect(other._unsafeUnwrapErr().code).toBe('INVALID_REQUEST');
    expect(other._unsafeUnwrapErr().message).toContain('stdio.sharedUser');
  });

  it.runIf(process.getuid?.() === 0)('stdio.user names another user, and a user that does not exist fails at start with what to set', () => {
    expect(() => createFleet({ stdio: { commands: [NODE], user: 'no-such-user-here' } })).toThrow(/stdio.user "no-such-user-here".*MCP_FLEET_STDIO_USER/);
    expect(() => createFleet({ stdio: { commands: [NODE], user: { uid: -1, gid: 0 } } })).toThrow(/stdio.user must be/);
  });

  it('one initialised client per live process, shared by probes, listings and calls: one initialize, ids never restart', async () => {
    const f = fleet();
    const id = await serverOf(f, { type: 'stdio', command: NODE, args: [fixture('echo-server.mjs')] });
    expect((await f.servers.health(ACCOUNT, id))._unsafeUnwrap().status).toBe('healthy');
    expect((await f.tools.list(ACCOUNT, id))._unsafeUnwrap().map((t) => t.name)).toEqual(['echo']);
    expect((await f.tools.call(ACCOUNT, id, 'echo', { n: 1 }))._unsafeUnwrap().status).toBe('success');
    expect((await f.servers.health(ACCOUNT, id))._unsafeUnwrap().status).toBe('healthy');
    const stats = JSON.parse(textOf((await f.tools.call(ACCOUNT, id, 'stats', {}))._unsafeUnwrap().result)) as {
      initialize: number;
      discover: number;
      ids: number[];
    };
    expect(stats.initialize).toBe(1);
    expect(stats.discover).toBeLessThanOrEqual(1);
    expect(new Set(stats.ids).size).toBe(stats.ids.length);
  });

  it('calls @modelcontextprotocol/server-everything', async () => {
    const f = fleet();
    const id = await serverOf(f, { type: 'stdio', command: NODE, args: [EVERYTHING, 'stdio'], timeout: 20_000 });
    const tools = (await f.tools.list(ACCOUNT, id))._unsafeUnwrap();
    expect(tools.map((t) => t.name)).toContain('echo');
    const outcome = (await f.tools.call(ACCOUNT, id, 'echo', { message: 'everything' }))._unsafeUnwrap();
    expect(outcome.status).toBe('success');
    expect(textOf(outcome.result)).toContain('everything');
  });
});

describe('records, events, health', () => {
  it('stores arguments and results only when the embedder turns it on', async () => {
    const server = await started(startV2ToolServer());
    const off = fleet();
    const offId = await serverOf(off, { type: 'http', endpoint: server.url });
    const plain = (await off.tools.call(ACCOUNT, offId, 'echo', { text: 'private' }))._unsafeUnwrap();
    const plainStored = (await off.toolCalls.get(ACCOUNT, plain.id))._unsafeUnwrap();
    expect(plainStored).not.toHaveProperty('arguments');
    expect(plainStored).not.toHaveProperty('result');

    const on = fleet({ toolCalls: { record: { arguments: true, results: true } } });
    const onId = await serverOf(on, { type: 'http', endpoint: server.url });
    const kept = (await on.tools.call(ACCOUNT, onId, 'echo', { text: 'kept' }))._unsafeUnwrap();
    const stored = (await on.toolCalls.get(ACCOUNT, kept.id))._unsafeUnwrap();
    expect(stored.arguments).toEqual({ text: 'kept' });
    expect(textOf(stored.result)).toBe('kept');
    // Listings never carry them.
    expect((await on.toolCalls.list(ACCOUNT))._unsafeUnwrap().data[0]).not.toHaveProperty('arguments');
  });

  it('emits tool_call.failed after the record, and failed calls count in error_rate', async () => {
    const server = await started(startV2ToolServer());
    const f = fleet();
    const failures: FleetEventMap['tool_call.failed'][] = [];
    f.events.on('tool_call.failed', (event) => {
      failures.push(event);
    });
    const id = await serverOf(f, { type: 'http', endpoint: server.url });
    const failed = (await f.tools.call(ACCOUNT, id, 'fail', {}))._unsafeUnwrap();
    await f.tools.call(ACCOUNT, id, 'echo', { text: 'ok' });
    expect(failures).toHaveLength(1);
    expect(failures[0]?.tool_call.id).toBe(failed.id);
    expect((await f.toolCalls.get(ACCOUNT, failed.id)).isOk()).toBe(true);
    // Two calls (one failed) and the probe: 1 of 3.
    expect((await f.servers.health(ACCOUNT, id))._unsafeUnwrap().error_rate).toBe('33.33%');
  });

  it('records an unreachable server as error after the allowed attempts; lists answer 502; unknown server 404', async () => {
    const f = fleet();
    const port = await refusedPort();
    const id = await serverOf(f, { type: 'http', endpoint: `http://127.0.0.1:${port}/mcp`, retry: { enabled: true, max_attempts: 2 } });
    expect((await f.tools.call(ACCOUNT, id, 'echo', {}))._unsafeUnwrap()).toMatchObject({ status: 'error', attempts: 2, error: { code: 'UPSTREAM_UNREACHABLE' } });
    expect((await f.tools.list(ACCOUNT, id))._unsafeUnwrapErr()).toMatchObject({ code: 'UPSTREAM_UNREACHABLE', status: 502 });
    expect((await f.tools.call(ACCOUNT, 'srv_doesnotexist', 'echo', {}))._unsafeUnwrapErr().code).toBe('SERVER_NOT_FOUND');
    const guarded = createFleet({});
    fleets.push(guarded);
    const blocked = (await guarded.servers.create(ACCOUNT, { name: 'blocked', type: 'http', endpoint: `http://127.0.0.1:${port}/mcp` }))._unsafeUnwrap();
    expect((await guarded.tools.call(ACCOUNT, blocked.id, 'echo', {}))._unsafeUnwrap().error?.code).toBe('DESTINATION_NOT_ALLOWED');
  });

  it('close() is safe to call twice', async () => {
    const f = fleet();
    await f.close();
    await f.close();
  });
});

describe('bounded upstream answers', () => {
  it('an answer over maxUpstreamBytes fails the call with UPSTREAM_RESPONSE_TOO_LARGE, and a smaller one passes', async () => {
    const server = await started(startV2ToolServer());
    const f = fleet({ maxUpstreamBytes: 64 * 1024 });
    const id = await serverOf(f, { type: 'http', endpoint: server.url });
    const small = (await f.tools.call(ACCOUNT, id, 'echo', { text: 'x'.repeat(1000) }))._unsafeUnwrap();
    expect(small.status).toBe('success');
    const big = (await f.tools.call(ACCOUNT, id, 'echo', { text: 'x'.repeat(200 * 1024) }))._unsafeUnwrap();
    expect(big).toMatchObject({ status: 'error', error: { code: 'UPSTREAM_RESPONSE_TOO_LARGE' }, result: null });
    expect(big.error?.message).toContain('maxUpstreamBytes');
    // The connection is let go, and the next call works.
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'after' }))._unsafeUnwrap().status).toBe('success');
  });

  it('a WebSocket message over maxUpstreamBytes fails the call with UPSTREAM_RESPONSE_TOO_LARGE, and the next call works', async () => {
    const ws = await started(startWsServer());
    const f = fleet({ maxUpstreamBytes: 64 * 1024 });
    const id = await serverOf(f, { type: 'websocket', endpoint: ws.url });
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'x'.repeat(1000) }))._unsafeUnwrap().status).toBe('success');
    const big = (await f.tools.call(ACCOUNT, id, 'echo', { text: 'x'.repeat(200 * 1024) }))._unsafeUnwrap();
    expect(big).toMatchObject({ status: 'error', error: { code: 'UPSTREAM_RESPONSE_TOO_LARGE' }, result: null });
    expect(big.error?.message).toContain('maxUpstreamBytes');
    expect((await f.tools.call(ACCOUNT, id, 'echo', { text: 'after' }))._unsafeUnwrap().status).toBe('success');
  });
});

describe('bounded listings, every page together', () => {
  it('a tools/list past maxUpstreamBytes over its pages (listings.maxBytes follows it) is UPSTREAM_RESPONSE_TOO_LARGE, read no further; a call still goes', async () => {
    // Pages of ~100 KB, each under the 300 KB a single answer may have: the third passes 300 KB in all.
    const hostile = await started(startHostileUpstream({ pages: 10, perPage: 10, descriptionBytes: 10_000 }));
    const f = fleet({ maxUpstreamBytes: 300_000 });
    const id = await serverOf(f, { type: 'http', endpoint: hostile.url });
    const listed = await f.tools.list(ACCOUNT, id);
    expect(listed._unsafeUnwrapErr().code).toBe('UPSTREAM_RESPONSE_TOO_LARGE');
    expect(listed._unsafeUnwrapErr().details).toEqual({ limit_bytes: 300_000, option: 'listings.maxBytes' });
    expect(hostile.pagesServed()).toBe(3);
    // Without a listing the call goes, as before any listing: the upstream answered it (it runs no tool: isError).
    const called = (await f.tools.call(ACCOUNT, id, 't0_0', {}))._unsafeUnwrap();
    expect(called.error?.code).toBe('TOOL_ERROR');
  });

  it('listings.maxItems bounds the items over all pages', async () => {
    const hostile = await started(startHostileUpstream({ pages: 5, perPage: 40 }));
    const f = fleet({ listings: { maxItems: 100 } });
    const id = await serverOf(f, { type: 'http', endpoint: hostile.url });
    const listed = await f.tools.list(ACCOUNT, id);
    expect(listed._unsafeUnwrapErr().details).toEqual({ limit_items: 100, option: 'listings.maxItems' });
    expect(hostile.pagesServed()).toBe(3);
  });
});

describe('plainCallInput, the at-once reading of a call body', () => {
  it('accepts only what callInputSchema accepts, and hands those on as the schema would', () => {
    const inherited = Object.create({ extra: 1 }) as Record<string, unknown>;
    inherited.name = 'echo';
    const bodies: unknown[] = [
      { name: 'echo' },
      { name: 'echo', arguments: {} },
      { name: 'echo', arguments: { text: 'x', nested: { a: [1] } } },
      { name: 'echo', arguments: undefined },
      { name: 'x'.repeat(256), arguments: {} },
      { name: 'x'.repeat(257) },
      { name: 'echo\ud800' },
      { name: '\udfffecho' },
      { name: 'echo 🛰️' },
      { name: '' },
      { name: 1 },
      { name: 'echo', arguments: [] },
      { name: 'echo', arguments: null },
      { name: 'echo', arguments: 'text' },
      { name: 'echo', extra: true },
      { arguments: {} },
      {},
      [],
      null,
      'echo',
      inherited,
      Object.assign(Object.create(null) as object, { name: 'echo' }),
    ];
    for (const body of bodies) {
      const plain = plainCallInput(body);
      const schema = callInputSchema.safeParse(body);
      if (plain !== undefined) {
        expect(schema.success, JSON.stringify(body)).toBe(true);
        expect(plain.name).toBe(schema.data?.name);
        expect(plain.arguments).toBe(schema.data?.arguments);
      }
    }
    // The common shapes do take the at-once path.
    expect(plainCallInput({ name: 'echo', arguments: { text: 'x' } })).toBeDefined();
    expect(plainCallInput({ name: 'echo' })).toBeDefined();
  });
});
