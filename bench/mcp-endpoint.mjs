// The MCP endpoint (`/v1/mcp`), the targets of issue 31: what an agent's tool call through the fleet's own MCP server
// costs on top of a direct SDK call to the same upstream, how many calls per second it relays, and how long a
// `tools/list` of the account's aggregate takes from the cache.
// Servers: bench/toolcall-server.mjs in a child process (the same 2025-era v1 SDK and 2026-07-28 v2 SDK `ping`
// servers as section 4, plus 20 v2 servers of 20 tools each). This process runs the fleet behind the Hono adapter on
// a real port (auth on, rate limits off) and times, interleaved call by call (`interleavedRounds`, ROUNDS rounds of
// BATCH passes, the first round dropped):
//   direct   the v2 SDK Client, connected once to the upstream and kept, callTool `ping`
//   mcp      the v2 SDK Client, connected once to /v1/mcp with the API key and kept (one 2025 session), callTool
//            `bench-v1__ping` / `bench-v2__ping` (the `{prefix}__{tool}` name)
//   relay    the v2 SDK Client, connected once to a bare relay and kept: the v2 SDK's createMcpHandler in Hono on its
//            own port in this process, tools `bench-v1__ping` / `bench-v2__ping` whose handlers call `ping` on an SDK
//            Client kept per upstream: what an embedder would write without mcp-fleet, with the same extra MCP hop.
//   base     with BENCH_BASELINE: the same as mcp on a second fleet of the baseline build (its core and hono dist),
//            on its own port in this process, served by the same `serve`, with its own key and the same upstreams.
//   floor    the floor of a hop (`floorRelay`): a bare `node:http` relay that answers the client's initialize with
//            canned bytes and forwards its tools/call, as the fleet sends it, to the same upstream with undici and
//            answers the upstream's message as JSON; `floorHono` the same relay in a bare Hono app on
//            @hono/node-server. No work at all: `mcp − floor` is the fleet's own part of the hop.
// Figures, each the median of per-round figures with the rounds' range and spread:
//   7a/7b  mcp − direct (target ≤ +1.0 ms, both eras), relay − direct and mcp − relay (information); floor − direct,
//          floorHono − direct, mcp − floor and mcp − floorHono (information); with BENCH_BASELINE also base − direct
//          and mcp − base (this build − the baseline's, in the same rounds). BENCH_MCP_LATENCY_ONLY=1: 7a/7b alone;
//   7d     calls/s with CONCURRENCY clients (own sessions) in a closed loop, /v1/mcp / relay (target ≥ 1.5×), and this
//          process's CPU per call for each (clients and fleet, or clients and relay: the upstream is elsewhere);
//   7c     tools/list p50 of 400 tools (20 × 20, target ≤ 1 ms) and of 10,000 (500 servers × 20, the 20 upstreams
//          each registered 25 times; target ≤ 10 ms), from the cache, interleaved list by list, three ways: `http`
//          the list posted with undici's `request` on the SDK client's own live session, the body read whole and
//          JSON.parse'd (what any client must at least do: the fleet's answer time, which the targets apply to); `sdk`
//          the SDK Client's listTools on that session (its parse and zod validation of the result included, which no
//          server change removes; verdict printed too); `bare` the SDK Client's listTools of the very same tools from
//          a bare SDK server in this process (information: what the SDK client's own work costs without the fleet);
//          `floor` the same client code as `http` posting to a bare node:http server in this process that answers the
//          very bytes of the fleet's answer, kept as one Buffer (its Content-Length, one write): the least any server
//          can do (information, printed beside the target; `http − floor` is the fleet's own part); with
//          BENCH_BASELINE `base`, the same `http` client on the baseline build's fleet listing the same servers, and
//          http / base per round (400 tools; 10,000 too with BENCH_MCP_LIST_BASE_LARGE=1). BENCH_MCP_LIST_ONLY=1:
//          7c alone (no 7a/7b/7d/7e/7f/7g).
//   7e     1,000 live 2025 sessions over 50 accounts: RSS added per session (target ≤ 20 KB), and 7b's calls again
//          with them open (target: within 10 % of without).
//   7f/7g  mcp − direct for a stdio and a WebSocket upstream (information; bench/mcp-transports.mjs).
// 10,000 servers under the monitor: section 10 (bench/monitor.mjs).
// Until /v1/mcp exists (it answers 404), the section times the direct calls alone and reports { skipped: true }. Can run alone: `node --expose-gc bench/mcp-endpoint.mjs` (BENCH_MCP_* variables below).
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createFleet } from '@mcp-fleet/core';
import { createFleetApp } from '@mcp-fleet/hono';
import { createMcpHandler, McpServer, Server } from '@modelcontextprotocol/server';
import { Hono } from 'hono';
import { request } from 'undici';
import { BASELINE_DIR, createBenchFleet, importPackage } from './builds.mjs';
import { STDIO_COMMAND, transportRounds } from './mcp-transports.mjs';
import { collect, figure, fmtAddedFigure, fmtInt, fmtMs, fmtRatioFigure, fmtSpread, interleavedRounds, median, pad, quantile, rangeVerdict, settled } from './stats.mjs';

const ROUNDS = Number(process.env.BENCH_MCP_ROUNDS ?? 8);
const BATCH = Number(process.env.BENCH_MCP_BATCH ?? 50);
const WARMUP = Number(process.env.BENCH_MCP_WARMUP ?? 50);
const LISTS = Number(process.env.BENCH_MCP_LISTS ?? 20);
const LIST_ROUNDS = Number(process.env.BENCH_MCP_LIST_ROUNDS ?? 6);
const CONCURRENCY = Number(process.env.BENCH_MCP_CONCURRENCY ?? 32);
const THROUGHPUT_MS = Number(process.env.BENCH_MCP_THROUGHPUT_MS ?? 2000);
const THROUGHPUT_ROUNDS = Number(process.env.BENCH_MCP_THROUGHPUT_ROUNDS ?? 6);
/** 500 servers × 20 tools: 10,000 tools in one account's tools/list. `0`: not measured. */
const LARGE_SERVERS = Number(process.env.BENCH_MCP_LARGE_SERVERS ?? 500);
/** 7e: live 2025 sessions over as many accounts. `0`: not measured. */
const SESSIONS = Number(process.env.BENCH_MCP_SESSIONS ?? 1000);
const SESSION_ACCOUNTS = Number(process.env.BENCH_MCP_SESSION_ACCOUNTS ?? 50);
/** 7f/7g, stdio and WebSocket upstreams. `0`: not measured. */
const TRANSPORTS = process.env.BENCH_MCP_TRANSPORTS !== '0';
/** `1`: 7a/7b alone (the latency of one call), nothing after them. */
const LATENCY_ONLY = process.env.BENCH_MCP_LATENCY_ONLY === '1';
/**
 * `1`: 7c's 10,000 tools on the baseline build's fleet too (BENCH_BASELINE). Off by default: filling a second fleet's
 * 500 listings on a loaded machine can outlast the first's 60 s TTL, and a list that asks again leaves out the
 * upstreams that miss their 5 s (the answer is then short, and the section fails); the CPU A/B of
 * bench/mcp-list-profile.mjs `ab` measures it instead.
 */
const LIST_BASE_LARGE = process.env.BENCH_MCP_LIST_BASE_LARGE === '1';
/** `1`: 7c alone (the lists from the cache), no call figures. */
const LIST_ONLY = process.env.BENCH_MCP_LIST_ONLY === '1';
// Targets of issue 31.
const TARGET_ADDED_MS = 1.0;
const TARGET_THROUGHPUT = 1.5;
const TARGET_LIST_MS = 1;
const TARGET_LARGE_LIST_MS = 10;
const TARGET_SESSION_KB = 20;

const check = (result) => {
  if (result?.content?.[0]?.text !== 'pong') throw new Error(`unexpected result ${JSON.stringify(result).slice(0, 200)}`);
};

/** The transport of each client `connect` made: 7c posts on the client's own session. */
const transportOf = new WeakMap();

async function connect(url, secret) {
  const client = new Client({ name: 'bench-mcp-endpoint', version: '1.0.0' });
  const requestInit = secret === undefined ? undefined : { headers: { authorization: `Bearer ${secret}` } };
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
  await client.connect(transport);
  transportOf.set(client, transport);
  return client;
}

/** The status of an `initialize` POST to /v1/mcp (404: not there yet). */
async function endpointStatus(url, secret) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench-probe', version: '1.0.0' } },
    }),
  });
  await response.body?.cancel();
  // A 2025 session the probe opened is closed again.
  const session = response.headers.get('mcp-session-id');
  if (session !== null) await fetch(url, { method: 'DELETE', headers: { authorization: `Bearer ${secret}`, 'mcp-session-id': session } }).then((answer) => answer.body?.cancel());
  return response.status;
}

/**
 * The baseline: a bare MCP relay. One `McpServer` per request (createMcpHandler's factory), with a tool per upstream
 * that calls `ping` on the SDK Client kept for it and answers its result as it is.
 */
async function bareRelay(upstreams) {
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'bench-relay', version: '1.0.0' });
    for (const [name, client] of Object.entries(upstreams)) {
      server.registerTool(name, { description: 'Relays ping' }, () => client.callTool({ name: 'ping', arguments: {} }));
    }
    return server;
  });
  const app = new Hono();
  app.all('/mcp', (c) => handler.fetch(c.req.raw));
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', createServer });
  await new Promise((resolve) => (server.listening ? resolve() : server.once('listening', resolve)));
  return { server, url: `http://127.0.0.1:${server.address().port}/mcp` };
}

/**
 * The floor of a hop: what relaying a tool call costs with no work at all. A bare `node:http` server (`floor`) and the
 * same relay under a bare Hono app on `@hono/node-server` (`floorHono`) that answer the client's `initialize` and
 * notifications with canned bytes, and forward its `tools/call` (the `{prefix}__` of the name cut, the 2026-07-28
 * envelope added for that upstream, as the fleet sends them) to the same upstream with undici `request` on a kept
 * `Pool` per upstream, answering the upstream's message as it came (the `data:` line of a 2025-era SSE answer, a
 * 2026-07-28 JSON answer whole) as `application/json` in one write. No key, no session record, no allowlist, no
 * validation, no record of the call: 7a/7b's `mcp − floor` is the fleet's own part of the hop.
 */
export async function floorRelay(urls) {
  const { Pool } = await import('undici');
  const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  // The 2025-era upstream: one session, opened once.
  const init = await fetch(urls.v1, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench-floor', version: '1.0.0' } } }),
  });
  await init.text();
  const session = init.headers.get('mcp-session-id');
  const v1Headers = { ...json, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': session };
  await (await fetch(urls.v1, { method: 'POST', headers: v1Headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  const envelope = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'bench-floor', version: '1.0.0' }, 'io.modelcontextprotocol/clientCapabilities': {} };
  const upstreams = {
    v1: { url: new URL(urls.v1), headers: v1Headers, meta: undefined },
    v2: { url: new URL(urls.v2), headers: { ...json, 'mcp-method': 'tools/call', 'mcp-name': 'ping', 'mcp-protocol-version': '2026-07-28' }, meta: envelope },
  };
  for (const upstream of Object.values(upstreams)) upstream.pool = new Pool(upstream.url.origin);
  const SESSION = 'bench-floor-session';
  /** The answer to one POST body: `[status, body]`. */
  const relay = async (text) => {
    const message = JSON.parse(text);
    if (message.method === 'initialize') {
      const result = { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'bench-floor', version: '1.0.0' } };
      return [200, JSON.stringify({ result, jsonrpc: '2.0', id: message.id })];
    }
    if (message.id === undefined) return [202, ''];
    const { name, arguments: args } = message.params;
    const upstream = upstreams[name.slice(6, 8)];
    const params = { name: name.slice(name.indexOf('__') + 2), arguments: args, ...(upstream.meta === undefined ? {} : { _meta: upstream.meta }) };
    const { body } = await upstream.pool.request({ path: upstream.url.pathname, method: 'POST', headers: upstream.headers, body: JSON.stringify({ method: 'tools/call', params, jsonrpc: '2.0', id: message.id }) });
    const answer = await body.text();
    const data = answer.indexOf('data: ');
    return [200, data === -1 ? answer : answer.slice(data + 6, answer.indexOf('\n', data))];
  };
  const headers = { 'content-type': 'application/json', 'mcp-session-id': SESSION };
  const node = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(req.method === 'DELETE' ? 200 : 405).end();
      return;
    }
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      relay(Buffer.concat(chunks).toString()).then(([status, body]) => res.writeHead(status, headers).end(body));
    });
  });
  await new Promise((resolve) => node.listen(0, '127.0.0.1', resolve));
  const app = new Hono();
  app.all('/mcp', async (c) => {
    if (c.req.method !== 'POST') return new Response(null, { status: c.req.method === 'DELETE' ? 200 : 405 });
    const [status, body] = await relay(await c.req.text());
    return new Response(status === 202 ? null : body, { status, headers });
  });
  const hono = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', createServer });
  await new Promise((resolve) => (hono.listening ? resolve() : hono.once('listening', resolve)));
  return {
    servers: [node, hono],
    url: `http://127.0.0.1:${node.address().port}/mcp`,
    honoUrl: `http://127.0.0.1:${hono.address().port}/mcp`,
    close: () => Promise.all(Object.values(upstreams).map((upstream) => upstream.pool.close())),
  };
}

/**
 * A fleet of the baseline build (BENCH_BASELINE) with the same two upstreams, behind its own Hono adapter on its own
 * port, served by this checkout's `serve` as the fleet under test is (one `@hono/node-server`, so one lightweight
 * `Response` in this process): 7a/7b time it in the same rounds.
 */
async function baselineFleet(urls) {
  const core = await importPackage('base', 'core');
  const { createFleetApp: baseApp } = await importPackage('base', 'hono');
  const fleet = createBenchFleet(core, { allowPrivateNetworks: true, rateLimit: false, onError: (error) => console.error('[bench base fleet]', error.code, error.cause ?? '') });
  const { secret } = (await fleet.keys.create({ account: 'bench-acct', tier: 'pro' }))._unsafeUnwrap();
  for (const era of ['v1', 'v2']) (await fleet.servers.create('bench-acct', { name: `bench-${era}`, type: 'http', endpoint: urls[era] }))._unsafeUnwrap();
  const server = serve({ fetch: baseApp(fleet).fetch, port: 0, hostname: '127.0.0.1', createServer });
  await new Promise((resolve) => (server.listening ? resolve() : server.once('listening', resolve)));
  return { fleet, server, secret, endpoint: `http://127.0.0.1:${server.address().port}/v1/mcp` };
}

/** Per-round figures of `a` against `b` (per-round medians): the difference in ms and the time ratio. */
function addedFigures(perRound, a, b) {
  return {
    added: figure(perRound[a].map((t, i) => t - perRound[b][i])),
    ratio: figure(perRound[a].map((t, i) => t / perRound[b][i])),
  };
}

/**
 * Throughput with `CONCURRENCY` clients, each with its own kept connection (a 2025 session on /v1/mcp), calling in a
 * closed loop for `THROUGHPUT_MS` per variant per round, the variants alternating round by round. Answers the calls/s
 * of each round per variant, and this process's CPU per call (the clients, the fleet or the relay, together).
 */
async function throughputRounds(variants) {
  const perRound = Object.fromEntries(variants.map((v) => [v.id, []]));
  const cpuPerCall = Object.fromEntries(variants.map((v) => [v.id, []]));
  for (let round = 0; round < THROUGHPUT_ROUNDS; round++) {
    const order = round % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) {
      collect();
      let calls = 0;
      let stop = false;
      const cpu0 = process.cpuUsage();
      const start = performance.now();
      const timer = setTimeout(() => (stop = true), THROUGHPUT_MS);
      await Promise.all(
        v.callers.map(async (run) => {
          while (!stop) {
            await run();
            calls++;
          }
        }),
      );
      clearTimeout(timer);
      const seconds = (performance.now() - start) / 1000;
      const cpu = process.cpuUsage(cpu0);
      // The first round warms the JIT and the connections: dropped.
      if (round === 0) continue;
      perRound[v.id].push(calls / seconds);
      cpuPerCall[v.id].push((cpu.user + cpu.system) / calls);
    }
  }
  return { perRound, cpuPerCall };
}

/**
 * 7c's minimal client: `tools/list` posted with undici's `request` on `client`'s live session (its session id and
 * negotiated protocol version), the body read whole and `JSON.parse`d. Answers the tools; keeps the `bytes` and
 * content `type` of the last answer and each parse's time.
 */
function httpLister(url, secret, client) {
  const headers = {
    authorization: `Bearer ${secret}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': client.getNegotiatedProtocolVersion(),
  };
  const session = transportOf.get(client)?.sessionId;
  if (session !== undefined) headers['mcp-session-id'] = session;
  // String ids: never one of the SDK client's own (numbers) on the same session.
  let id = 0;
  const list = async () => {
    const { statusCode, headers: answered, body } = await request(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: `bench-list-${++id}`, method: 'tools/list' }) });
    const text = await body.text();
    if (statusCode !== 200) throw new Error(`tools/list answered ${statusCode}: ${text.slice(0, 200)}`);
    list.text = text;
    list.bytes = Buffer.byteLength(text);
    list.type = answered['content-type'];
    // A JSON answer (the fleet's lean road), else the one event of an SSE stream.
    const json = list.type === 'application/json' ? text : text.slice(text.indexOf('data:') + 5, text.indexOf('\n', text.indexOf('data:')));
    const parsing = performance.now();
    const { tools } = JSON.parse(json).result;
    list.parseMs.push(performance.now() - parsing);
    return tools;
  };
  /** How long each `JSON.parse` took, in ms: the client's share of the figure. */
  list.parseMs = [];
  return list;
}

/**
 * 7c's floor: a bare `node:http` server answering every POST, once its body is read, with `floor.bytes` (one `Buffer`,
 * its `Content-Length`, one write): what any server's answer of those bytes costs the same client, no work at all.
 */
async function floorLister() {
  const floor = { bytes: Buffer.alloc(0) };
  floor.server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': floor.bytes.length });
      res.end(floor.bytes);
    });
  });
  await new Promise((resolve) => floor.server.listen(0, '127.0.0.1', resolve));
  floor.url = `http://127.0.0.1:${floor.server.address().port}/mcp`;
  return floor;
}

/** A bare SDK server (createMcpHandler, Hono) listing whatever `tools` holds: 7c's baseline of the SDK client's own work. */
async function bareLister() {
  const bare = { tools: [] };
  const handler = createMcpHandler(() => {
    const server = new Server({ name: 'bench-bare-list', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler('tools/list', () => ({ tools: bare.tools }));
    return server;
  });
  const app = new Hono();
  app.all('/mcp', (c) => handler.fetch(c.req.raw));
  bare.server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', createServer });
  await new Promise((resolve) => (bare.server.listening ? resolve() : bare.server.once('listening', resolve)));
  bare.url = `http://127.0.0.1:${bare.server.address().port}/mcp`;
  return bare;
}

/**
 * `LIST_ROUNDS` rounds of `LISTS` lists by each variant (`{ id, list }`, `list` answering the tools), interleaved list
 * by list in an order drawn anew for each pass; answers each variant's p50 and p99 in ms (`timed`: the figures of the
 * per-round values; `perRound`: the per-round p50s, for differences and ratios round by round). Drawn, not turned: a
 * turned order keeps each variant's predecessor, so the one after the SDK clients' lists (`sdk`, `bare`: the most
 * garbage) always paid their collections — the baseline, which read 0.78–0.81× in an A/A (docs/performance.md "mcp-door").
 */
async function listRounds(variants, expected) {
  const times = Object.fromEntries(variants.map((v) => [v.id, { p50: [], p99: [] }]));
  for (let round = 0; round < LIST_ROUNDS; round++) {
    collect();
    const taken = Object.fromEntries(variants.map((v) => [v.id, []]));
    for (let i = 0; i < LISTS; i++) {
      for (const v of shuffled(variants)) {
        await settled();
        const start = performance.now();
        const tools = await v.list();
        taken[v.id].push(performance.now() - start);
        if (tools.length !== expected) throw new Error(`${v.id}: tools/list answered ${tools.length} tools, expected ${expected}`);
      }
    }
    for (const v of variants) {
      times[v.id].p50.push(median(taken[v.id]));
      times[v.id].p99.push(quantile(taken[v.id], 0.99));
    }
  }
  return {
    timed: Object.fromEntries(variants.map((v) => [v.id, { p50: figure(times[v.id].p50), p99: figure(times[v.id].p99) }])),
    perRound: Object.fromEntries(variants.map((v) => [v.id, times[v.id].p50])),
  };
}

/** A copy of `items` in a random order (Fisher–Yates). */
function shuffled(items) {
  const order = [...items];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

/** Lists until every server's tools are cached (a server slow to answer its first list is left out of that answer). */
async function fill(lister, expected) {
  let count = 0;
  for (let attempt = 0; attempt < 10 && count !== expected; attempt++) count = (await lister.listTools()).tools.length;
  if (count !== expected) throw new Error(`tools/list answered ${count} tools after 10 lists, expected ${expected}`);
}

/**
 * 7e: `SESSIONS` live 2025 sessions over `SESSION_ACCOUNTS` accounts, opened with bare `fetch` (initialize, then
 * notifications/initialized; a 2025 session lives in the fleet's process, the client holds only its id). The RSS and
 * the heap this process adds per session (after a full GC before and after), then 7b's calls again, interleaved as
 * before: `(mcp / direct) with the sessions open ÷ (mcp / direct) with none` is the latency figure (target ≤ 1.10×).
 */
async function liveSessions(fleet, endpoint, list, before) {
  const secrets = [];
  for (let a = 0; a < SESSION_ACCOUNTS; a++) secrets.push((await fleet.keys.create({ account: `bench-sessions-${a}`, tier: 'pro' }))._unsafeUnwrap().secret);
  const open = async (secret) => {
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(endpoint, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench-session', version: '1.0.0' } } }),
    });
    await init.text();
    const id = init.headers.get('mcp-session-id');
    if (init.status !== 200 || id === null) throw new Error(`initialize answered ${init.status}`);
    const done = await fetch(endpoint, {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    await done.text();
    return id;
  };
  // One session per account first, so that each account's first-time costs are not charged to the sessions.
  for (const secret of secrets) await open(secret);
  const settle = async () => {
    for (let i = 0; i < 3; i++) {
      collect();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return process.memoryUsage();
  };
  const m0 = await settle();
  const ids = [];
  for (let i = 0; i < SESSIONS; i++) ids.push(await open(secrets[i % secrets.length]));
  const m1 = await settle();
  const rssKb = (m1.rss - m0.rss) / 1024 / SESSIONS;
  const heapKb = (m1.heapUsed - m0.heapUsed) / 1024 / SESSIONS;
  const perRound = await interleavedRounds(list, ROUNDS + 1, BATCH);
  for (const id of Object.keys(perRound)) perRound[id].shift();
  const withOpen = figure(perRound.mcp.map((t, i) => t / perRound.direct[i]));
  // Against 7b's rounds (no session but the bench's own): the medians' ratio, the range from the rounds' extremes.
  const ratio = {
    ...figure([withOpen.median / before.overDirect.ratio.median]),
    low: withOpen.low / before.overDirect.ratio.high,
    high: withOpen.high / before.overDirect.ratio.low,
  };
  ratio.spreadPct = (100 * Math.max(ratio.high - ratio.median, ratio.median - ratio.low)) / ratio.median;
  console.log(`\n7e. ${fmtInt(SESSIONS)} live 2025 sessions over ${SESSION_ACCOUNTS} accounts (2026-07-28 upstream calls as 7b)`);
  console.log(`  ${pad('RSS added per session', 56)} ${rssKb.toFixed(1)} KB  ${rssKb <= TARGET_SESSION_KB ? 'met' : 'missed'} (≤ ${TARGET_SESSION_KB} KB)`);
  console.log(`  ${pad('heap added per session (information)', 56)} ${heapKb.toFixed(1)} KB`);
  console.log(`  ${pad('mcp / direct with them open ÷ with none (7b)', 56)} ${fmtRatioFigure(ratio)}  ${rangeVerdict(ratio, 1.1, { atMost: true })}`);
  return { rssKb, heapKb, ratio, ids: ids.length };
}

const fmtFigureMs = (f) => `${fmtMs(f.median)} ms (rounds ${fmtMs(f.low)}..${fmtMs(f.high)}, ${fmtSpread(f)})`;

export async function runMcpEndpointBench() {
  const started = Date.now();
  console.log(
    `\n== 7. MCP endpoint: a tool call through /v1/mcp against a direct SDK call to the same server and against a bare SDK relay (${ROUNDS} rounds of ${BATCH} calls each, interleaved; the first round dropped)`,
  );
  const proc = fork(fileURLToPath(new URL('./toolcall-server.mjs', import.meta.url)), ['many'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const urls = await new Promise((resolve) => proc.once('message', resolve));

  const fleet = createFleet({ allowPrivateNetworks: true, rateLimit: false, stdio: { commands: [STDIO_COMMAND] }, onError: (error) => console.error('[bench fleet]', error.code, error.cause ?? '') });
  const { secret } = (await fleet.keys.create({ account: 'bench-acct', tier: 'pro' }))._unsafeUnwrap();
  const register = async (account, name, endpoint) => (await fleet.servers.create(account, { name, type: 'http', endpoint }))._unsafeUnwrap().id;
  await register('bench-acct', 'bench-v1', urls.v1);
  await register('bench-acct', 'bench-v2', urls.v2);
  const server = serve({ fetch: createFleetApp(fleet).fetch, port: 0, hostname: '127.0.0.1', createServer });
  await new Promise((resolve) => (server.listening ? resolve() : server.once('listening', resolve)));
  const endpoint = `http://127.0.0.1:${server.address().port}/v1/mcp`;

  const clients = [];
  const kept = async (url, key) => {
    const client = await connect(url, key);
    clients.push(client);
    return client;
  };
  const caller = (client, name) => async () => check(await client.callTool({ name, arguments: {} }));

  const status = await endpointStatus(endpoint, secret);
  const present = status !== 404;
  if (!present) console.log(`  skipped: /v1/mcp answers 404 (the MCP endpoint is not there yet); timing the direct calls alone`);
  else if (status >= 400) throw new Error(`/v1/mcp answered ${status} to an initialize with a valid key`);

  const mcpClient = present ? await kept(endpoint, secret) : undefined;
  const based = present && BASELINE_DIR !== undefined ? await baselineFleet(urls) : undefined;
  const baseClient = based === undefined ? undefined : await kept(based.endpoint, based.secret);
  const upstreamClients = present ? { 'bench-v1__ping': await kept(urls.v1), 'bench-v2__ping': await kept(urls.v2) } : undefined;
  const relay = present ? await bareRelay(upstreamClients) : undefined;
  const relayClient = relay === undefined ? undefined : await kept(relay.url);
  const hop = present && !LIST_ONLY ? await floorRelay(urls) : undefined;
  const floorClients = hop === undefined ? undefined : { floor: await kept(hop.url), floorHono: await kept(hop.honoUrl) };
  const result = { skipped: !present, figures: [] };
  let modernList;
  let bare;
  let floor;
  for (const [era, title, label] of [
    ['v1', '7a. 2025-era server: v1 SDK McpServer, sessionful Streamable HTTP', '7a /v1/mcp tools/call − direct SDK call, 2025-era upstream'],
    ['v2', '7b. 2026-07-28 server: v2 SDK createMcpHandler', '7b /v1/mcp tools/call − direct SDK call, 2026-07-28 upstream'],
  ]) {
    if (LIST_ONLY) break;
    const list = [{ id: 'direct', run: caller(await kept(urls[era]), 'ping') }];
    if (mcpClient !== undefined) list.push({ id: 'mcp', run: caller(mcpClient, `bench-${era}__ping`) }, { id: 'relay', run: caller(relayClient, `bench-${era}__ping`) });
    if (baseClient !== undefined) list.push({ id: 'base', run: caller(baseClient, `bench-${era}__ping`) });
    if (floorClients !== undefined) for (const [id, client] of Object.entries(floorClients)) list.push({ id, run: caller(client, `bench-${era}__ping`) });
    for (const v of list) for (let i = 0; i < WARMUP; i++) await v.run();
    const perRound = await interleavedRounds(list, ROUNDS + 1, BATCH);
    for (const id of Object.keys(perRound)) perRound[id].shift();
    console.log(`\n${title}`);
    const out = { directMs: figure(perRound.direct) };
    console.log(`  ${pad('direct: SDK Client (kept connection) callTool', 56)} ${fmtFigureMs(out.directMs)}`);
    if (mcpClient !== undefined) {
      out.mcpMs = figure(perRound.mcp);
      out.relayMs = figure(perRound.relay);
      out.overDirect = addedFigures(perRound, 'mcp', 'direct');
      out.overRelay = addedFigures(perRound, 'mcp', 'relay');
      out.relayOverDirect = addedFigures(perRound, 'relay', 'direct');
      console.log(`  ${pad('mcp: SDK Client on /v1/mcp (kept session) callTool', 56)} ${fmtFigureMs(out.mcpMs)}`);
      console.log(`  ${pad('relay: SDK Client on a bare SDK relay (Hono) callTool', 56)} ${fmtFigureMs(out.relayMs)}`);
      console.log(`  ${pad('mcp − direct', 56)} ${fmtAddedFigure(out.overDirect.added)}  ${rangeVerdict(out.overDirect.added, TARGET_ADDED_MS, { atMost: true, unit: ' ms' })}`);
      console.log(`  ${pad('relay − direct (information)', 56)} ${fmtAddedFigure(out.relayOverDirect.added)}`);
      console.log(`  ${pad('mcp − relay (information)', 56)} ${fmtAddedFigure(out.overRelay.added)}`);
      // The floor of the hop (information): relays that do no work; mcp − floor is the fleet's own part.
      out.floorOverDirect = addedFigures(perRound, 'floor', 'direct');
      out.floorHonoOverDirect = addedFigures(perRound, 'floorHono', 'direct');
      out.overFloor = addedFigures(perRound, 'mcp', 'floor');
      out.overFloorHono = addedFigures(perRound, 'mcp', 'floorHono');
      console.log(`  ${pad('floor: a bare node:http relay, undici, no work', 56)} ${fmtFigureMs(figure(perRound.floor))}`);
      console.log(`  ${pad('floor − direct (information: the hop itself)', 56)} ${fmtAddedFigure(out.floorOverDirect.added)}`);
      console.log(`  ${pad('floor Hono − direct (the same relay in bare Hono)', 56)} ${fmtAddedFigure(out.floorHonoOverDirect.added)}`);
      console.log(`  ${pad('mcp − floor (information: the fleet\'s own part)', 56)} ${fmtAddedFigure(out.overFloor.added)}`);
      console.log(`  ${pad('mcp − floor Hono (information)', 56)} ${fmtAddedFigure(out.overFloorHono.added)}`);
      const figures = { label, kind: 'added', target: TARGET_ADDED_MS, builds: { this: out.overDirect.added }, ratios: { this: out.overDirect.ratio } };
      if (baseClient !== undefined) {
        out.baseOverDirect = addedFigures(perRound, 'base', 'direct');
        out.overBase = addedFigures(perRound, 'mcp', 'base');
        console.log(`  ${pad('base: the same on the baseline build\'s fleet', 56)} ${fmtFigureMs(figure(perRound.base))}`);
        console.log(`  ${pad('base − direct', 56)} ${fmtAddedFigure(out.baseOverDirect.added)}`);
        console.log(`  ${pad('mcp − base (this build − the baseline, same rounds)', 56)} ${fmtAddedFigure(out.overBase.added)}, time ${fmtRatioFigure(out.overBase.ratio)}`);
        figures.builds.base = out.baseOverDirect.added;
        figures.ratios.base = out.baseOverDirect.ratio;
        figures.ab = { what: 'per-round /v1/mcp call time', figure: out.overBase.ratio };
      }
      result.figures.push(figures);
    }
    result[era === 'v1' ? 'legacy' : 'modern'] = out;
    if (era === 'v2') modernList = list.filter((v) => v.id !== 'base');
  }

  if (present && TRANSPORTS && !LATENCY_ONLY && !LIST_ONLY) {
    const call = async (client, name) => check(await client.callTool({ name, arguments: {} }));
    result.transports = await transportRounds({ fleet, account: 'bench-acct', mcp: mcpClient, call, rounds: ROUNDS, batch: BATCH, warmup: WARMUP });
  }

  if (present && !LATENCY_ONLY && !LIST_ONLY) {
    // Throughput: CONCURRENCY clients (own sessions) on /v1/mcp, against as many on the bare relay, 2026-07-28 upstream.
    const mcpCallers = [];
    const relayCallers = [];
    for (let c = 0; c < CONCURRENCY; c++) {
      mcpCallers.push(caller(await kept(endpoint, secret), 'bench-v2__ping'));
      relayCallers.push(caller(await kept(relay.url), 'bench-v2__ping'));
    }
    const { perRound, cpuPerCall } = await throughputRounds([
      { id: 'mcp', callers: mcpCallers },
      { id: 'relay', callers: relayCallers },
    ]);
    const t = {
      mcp: figure(perRound.mcp),
      relay: figure(perRound.relay),
      ratio: figure(perRound.mcp.map((x, i) => x / perRound.relay[i])),
      cpuMcp: figure(cpuPerCall.mcp),
      cpuRelay: figure(cpuPerCall.relay),
    };
    result.throughput = t;
    console.log(`\n7d. Throughput: ${CONCURRENCY} concurrent clients calling in a closed loop, ${THROUGHPUT_MS} ms per variant, ${THROUGHPUT_ROUNDS - 1} rounds alternating (2026-07-28 upstream)`);
    console.log(`  ${pad('calls/s through /v1/mcp', 56)} ${fmtInt(t.mcp.median)} (rounds ${fmtInt(t.mcp.low)}..${fmtInt(t.mcp.high)})`);
    console.log(`  ${pad('calls/s through the bare SDK relay', 56)} ${fmtInt(t.relay.median)} (rounds ${fmtInt(t.relay.low)}..${fmtInt(t.relay.high)})`);
    console.log(`  ${pad('/v1/mcp / relay', 56)} ${fmtRatioFigure(t.ratio)}  ${rangeVerdict(t.ratio, TARGET_THROUGHPUT)}`);
    console.log(
      `  ${pad('CPU of this process per call (clients + fleet / + relay)', 56)} ${t.cpuMcp.median.toFixed(0)} µs / ${t.cpuRelay.median.toFixed(0)} µs (the upstream in its own process)`,
    );
    result.figures.push({ label: `7d calls/s via /v1/mcp / bare SDK relay, ${CONCURRENCY} clients`, kind: 'ratio', target: TARGET_THROUGHPUT, builds: { this: t.ratio } });
  }

  if (present && !LATENCY_ONLY) {
    // tools/list from the cache: 20 servers × 20 tools, then 500 servers × 20 tools (the 20 upstreams, each registered 25 times).
    bare = await bareLister();
    floor = await floorLister();
    const lists = [];
    const listSection = async (account, servers, named, target, withBase = based !== undefined) => {
      const { secret: key } = (await fleet.keys.create({ account, tier: 'pro' }))._unsafeUnwrap();
      for (let s = 0; s < servers; s++) await register(account, named(s), urls.many[s % urls.many.length]);
      const expected = servers * 20;
      const lister = await kept(endpoint, key);
      await fill(lister, expected);
      const http = httpLister(endpoint, key, lister);
      // The bare server lists the very tools the fleet answers; the floor answers the very bytes.
      bare.tools = await http();
      floor.bytes = Buffer.from(http.text);
      const bareClient = await kept(bare.url);
      const variants = [
        { id: 'http', list: http },
        { id: 'floor', list: httpLister(floor.url, key, lister) },
        { id: 'sdk', list: async () => (await lister.listTools()).tools },
        { id: 'bare', list: async () => (await bareClient.listTools()).tools },
      ];
      if (withBase) {
        // The baseline build's fleet lists the same servers to the same client code, in the same rounds.
        const { secret: baseKey } = (await based.fleet.keys.create({ account, tier: 'pro' }))._unsafeUnwrap();
        for (let s = 0; s < servers; s++) (await based.fleet.servers.create(account, { name: named(s), type: 'http', endpoint: urls.many[s % urls.many.length] }))._unsafeUnwrap();
        const baseLister = await kept(based.endpoint, baseKey);
        await fill(baseLister, expected);
        variants.push({ id: 'base', list: httpLister(based.endpoint, baseKey, baseLister) });
        // Filling the baseline's 500 listings takes long on a loaded machine: the fleet's own may be past their TTL
        // by now, and a list that asks an upstream again leaves out one that misses its 5 s.
        await fill(lister, expected);
      }
      for (const v of variants) for (let i = 0; i < 3; i++) await v.list();
      const { timed, perRound } = await listRounds(variants, expected);
      const overFloor = figure(perRound.http.map((t, i) => t - perRound.floor[i]));
      const overBase = withBase ? figure(perRound.http.map((t, i) => t / perRound.base[i])) : undefined;
      lists.push({ expected, target, version: lister.getNegotiatedProtocolVersion(), type: http.type, bytes: http.bytes, parseMs: median(http.parseMs), timed, overFloor, overBase });
      return timed;
    };
    result.list = await listSection('bench-list', 20, (s) => `many${String(s).padStart(2, '0')}`, TARGET_LIST_MS);
    if (LARGE_SERVERS > 0) {
      result.listLarge = await listSection('bench-large', LARGE_SERVERS, (s) => `large${String(s).padStart(3, '0')}`, TARGET_LARGE_LIST_MS, based !== undefined && LIST_BASE_LARGE);
    }
    const [first] = lists;
    console.log(`\n7c. tools/list on /v1/mcp from the cache (${LIST_ROUNDS} rounds of ${LISTS} lists per client after those that fill it, interleaved; per-round p50)`);
    console.log(`  the SDK client negotiated ${first.version}${first.version.startsWith('2025') ? ' (a 2025 session: the lean road)' : ''}; the fleet answered ${first.type}`);
    console.log(`  http: undici request on that session + JSON.parse (the fleet's answer time, the targets); sdk: SDK Client listTools; bare: SDK Client listTools of the same tools from a bare SDK server`);
    for (const { expected, target, bytes, parseMs, timed, overFloor, overBase } of lists) {
      const verdict = (f) => rangeVerdict(f, target, { atMost: true, unit: ' ms p50' });
      console.log(`  ${fmtInt(expected)} tools (an answer of ${fmtInt(bytes)} bytes), p50:`);
      console.log(`  ${pad('  http: undici request + JSON.parse (the target)', 56)} ${fmtFigureMs(timed.http.p50)}  ${verdict(timed.http.p50)}`);
      console.log(`  ${pad('    of which JSON.parse (information)', 56)} ${fmtMs(parseMs)} ms`);
      // The floor against the same target: a floor above it says no server makes the target on this machine.
      console.log(`  ${pad('  floor: the same bytes from a bare node:http (info)', 56)} ${fmtFigureMs(timed.floor.p50)}  (target ${target} ms: ${timed.floor.p50.median <= target ? 'the floor is under it' : 'the floor itself is above it'})`);
      console.log(`  ${pad('  http − floor (information: the fleet\'s own part)', 56)} ${fmtAddedFigure(overFloor)}`);
      if (overBase !== undefined) {
        console.log(`  ${pad('  base: the same http client on the baseline build', 56)} ${fmtFigureMs(timed.base.p50)}`);
        console.log(`  ${pad('  http / base (this build / the baseline, same rounds)', 56)} ${fmtRatioFigure(overBase)}`);
      }
      console.log(`  ${pad('  sdk: SDK Client listTools', 56)} ${fmtFigureMs(timed.sdk.p50)}  ${verdict(timed.sdk.p50)}`);
      console.log(`  ${pad('  bare: the same tools from a bare SDK server (info)', 56)} ${fmtFigureMs(timed.bare.p50)}`);
      console.log(`  ${pad('  p99 http / sdk / bare (information)', 56)} ${fmtMs(timed.http.p99.median)} / ${fmtMs(timed.sdk.p99.median)} / ${fmtMs(timed.bare.p99.median)} ms`);
      const label = `7c tools/list of ${fmtInt(expected)} tools from the cache`;
      const httpFigure = { label: `${label} (undici + JSON.parse)`, kind: 'ms', target, builds: { this: timed.http.p50 } };
      if (overBase !== undefined) {
        httpFigure.builds.base = timed.base.p50;
        httpFigure.ab = { what: 'per-round p50 of the http client', figure: overBase };
      }
      result.figures.push(httpFigure);
      // The floor against the same target (information): above it, no server makes the target on this machine.
      result.figures.push({ label: `7c floor: ${fmtInt(expected)} tools from a bare node:http (information)`, kind: 'ms', target, builds: { this: timed.floor.p50 } });
      result.figures.push({ label: `${label} (SDK Client listTools)`, kind: 'ms', target, builds: { this: timed.sdk.p50 } });
    }
  }

  if (present && SESSIONS > 0 && !LATENCY_ONLY && !LIST_ONLY) result.sessions = await liveSessions(fleet, endpoint, modernList, result.modern);

  for (const client of clients) await client.close();
  server.close();
  relay?.server.close();
  for (const s of hop?.servers ?? []) s.close();
  await hop?.close();
  bare?.server.close();
  floor?.server.close();
  based?.server.close();
  await based?.fleet.close();
  await fleet.close();
  proc.send({ type: 'exit' });
  result.seconds = (Date.now() - started) / 1000;
  console.log(`\n  MCP endpoint section: ${result.seconds.toFixed(1)} s`);
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runMcpEndpointBench();
  if (process.send) process.send({ type: 'result', result });
}
