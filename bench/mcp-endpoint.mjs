// The MCP endpoint (`/v1/mcp`): what an agent's tool call through the fleet's own MCP server costs on top of a direct
// SDK call to the same upstream, and how long a `tools/list` of the account's aggregate takes from the cache.
// Servers: bench/toolcall-server.mjs in a child process (the same 2025-era v1 SDK and 2026-07-28 v2 SDK `ping`
// servers as section 4, plus 20 v2 servers of 20 tools each). This process runs the fleet behind the Hono adapter on
// a real port (auth on, rate limits off) and times, alternating call by call:
//   direct   the v2 SDK Client, connected once to the upstream and kept, callTool `ping`
//   mcp      the v2 SDK Client, connected once to /v1/mcp with the API key and kept (one session), callTool
//            `bench-v1__ping` / `bench-v2__ping` (the `{prefix}__{tool}` name)
//   relay    the v2 SDK Client, connected once to a bare relay and kept: the v2 SDK's createMcpHandler in Hono on its
//            own port in this process, tools `bench-v1__ping` / `bench-v2__ping` whose handlers call `ping` on an SDK
//            Client kept per upstream. It is what an embedder would write without mcp-fleet, and it pays the same
//            extra MCP hop as /v1/mcp, so it is the baseline of the target.
// Added latency: median of the paired differences (call i of each, made back to back) and p99 minus p99, for mcp
// against direct (information) and mcp against relay. Target: ≤ 0.5 ms median added over the relay. Then `tools/list` of another account that has the 20 × 20
// servers, after the lists that fill the cache: ms per list (400 tools each).
// Until /v1/mcp exists (it answers 404), the section prints one line saying so, times the direct calls alone (so
// that half stays checked) and reports { skipped: true }. Can run alone: `node --expose-gc bench/mcp-endpoint.mjs`.
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createFleet } from '@mcp-fleet/core';
import { createFleetApp } from '@mcp-fleet/hono';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { Hono } from 'hono';
import { collect, fmtAddedMs, fmtMs, median, pad, padLeft, quantile, settled } from './stats.mjs';

const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 400);
const WARMUP = Number(process.env.BENCH_MCP_WARMUP ?? 50);
const LISTS = Number(process.env.BENCH_MCP_LISTS ?? 50);
const TARGET_ADDED_MS = 0.5;

const check = (result) => {
  if (result?.content?.[0]?.text !== 'pong') throw new Error(`unexpected result ${JSON.stringify(result).slice(0, 200)}`);
};

async function connect(url, secret) {
  const client = new Client({ name: 'bench-mcp-endpoint', version: '1.0.0' });
  const requestInit = secret === undefined ? undefined : { headers: { authorization: `Bearer ${secret}` } };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit }));
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

/** Times `CALLS` calls of each variant, alternating (order flipped every call); answers every time, per variant id. */
async function alternate(list) {
  for (const v of list) for (let i = 0; i < WARMUP; i++) await v.run();
  collect();
  const times = Object.fromEntries(list.map((v) => [v.id, []]));
  for (let i = 0; i < CALLS; i++) {
    const order = i % 2 === 0 ? list : [...list].reverse();
    for (const v of order) {
      await settled();
      const start = performance.now();
      await v.run();
      times[v.id].push(performance.now() - start);
    }
  }
  return times;
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

/** The paired figures of `variant` against `base`: medians, p99s, the median of the per-call differences. */
function added(variant, base) {
  return { addedMs: median(variant.map((t, i) => t - base[i])), addedP99: quantile(variant, 0.99) - quantile(base, 0.99) };
}

function report(title, times) {
  console.log(`\n${title}`);
  console.log(`  ${pad('variant', 56)} ${padLeft('median ms', 10)} ${padLeft('p99 ms', 8)} ${padLeft('added median', 13)} ${padLeft('added p99', 10)}`);
  const direct = times.direct;
  const out = { directMs: median(direct), directP99: quantile(direct, 0.99) };
  console.log(`  ${pad('direct: SDK Client (kept connection) callTool', 56)} ${padLeft(fmtMs(out.directMs), 10)} ${padLeft(fmtMs(out.directP99), 8)}`);
  if (times.mcp !== undefined) {
    const mcp = times.mcp;
    out.mcpMs = median(mcp);
    out.mcpP99 = quantile(mcp, 0.99);
    Object.assign(out, added(mcp, direct));
    console.log(
      `  ${pad('mcp: SDK Client on /v1/mcp (kept session) callTool', 56)} ${padLeft(fmtMs(out.mcpMs), 10)} ${padLeft(fmtMs(out.mcpP99), 8)} ${padLeft(fmtAddedMs(out.addedMs), 13)} ${padLeft(fmtAddedMs(out.addedP99), 10)}`,
    );
    const relay = times.relay;
    out.relayMs = median(relay);
    out.relayP99 = quantile(relay, 0.99);
    const relayAdded = added(relay, direct);
    console.log(
      `  ${pad('relay: SDK Client on a bare SDK relay (Hono) callTool', 56)} ${padLeft(fmtMs(out.relayMs), 10)} ${padLeft(fmtMs(out.relayP99), 8)} ${padLeft(fmtAddedMs(relayAdded.addedMs), 13)} ${padLeft(fmtAddedMs(relayAdded.addedP99), 10)}`,
    );
    out.overRelay = added(mcp, relay);
    console.log(`  ${pad('mcp − relay (the target: ≤ 0.5 ms median)', 56)} ${padLeft('', 10)} ${padLeft('', 8)} ${padLeft(fmtAddedMs(out.overRelay.addedMs), 13)} ${padLeft(fmtAddedMs(out.overRelay.addedP99), 10)}`);
  }
  return out;
}

export async function runMcpEndpointBench() {
  const started = Date.now();
  console.log(`\n== 7. MCP endpoint: a tool call through /v1/mcp against a direct SDK call to the same server (${CALLS} calls each, alternating; after ${WARMUP} warm-up calls)`);
  const proc = fork(fileURLToPath(new URL('./toolcall-server.mjs', import.meta.url)), ['many'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const urls = await new Promise((resolve) => proc.once('message', resolve));

  const fleet = createFleet({ allowPrivateNetworks: true, rateLimit: false, onError: (error) => console.error('[bench fleet]', error.code, error.cause ?? '') });
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
  const relay = present ? await bareRelay({ 'bench-v1__ping': await kept(urls.v1), 'bench-v2__ping': await kept(urls.v2) }) : undefined;
  const relayClient = relay === undefined ? undefined : await kept(relay.url);
  const result = { skipped: !present };
  for (const [era, title] of [
    ['v1', '7a. 2025-era server: v1 SDK McpServer, sessionful Streamable HTTP'],
    ['v2', '7b. 2026-07-28 server: v2 SDK createMcpHandler'],
  ]) {
    const list = [{ id: 'direct', run: caller(await kept(urls[era]), 'ping') }];
    if (mcpClient !== undefined) list.push({ id: 'mcp', run: caller(mcpClient, `bench-${era}__ping`) }, { id: 'relay', run: caller(relayClient, `bench-${era}__ping`) });
    result[era === 'v1' ? 'legacy' : 'modern'] = report(title, await alternate(list));
  }

  if (present) {
    const { secret: listSecret } = (await fleet.keys.create({ account: 'bench-list', tier: 'pro' }))._unsafeUnwrap();
    for (const [s, url] of urls.many.entries()) await register('bench-list', `many${String(s).padStart(2, '0')}`, url);
    const lister = await kept(endpoint, listSecret);
    // The first lists fill the per-server caches; a server that is slow to answer its first tools/list is left out of
    // that answer (contract: 5 s), so up to 5 lists are made until all 400 tools are there.
    let count = 0;
    for (let attempt = 0; attempt < 5 && count !== 400; attempt++) count = (await lister.listTools()).tools.length;
    if (count !== 400) throw new Error(`tools/list over 20 × 20 answered ${count} tools after 5 lists, expected 400`);
    const times = [];
    for (let i = 0; i < LISTS; i++) {
      const start = performance.now();
      const { tools } = await lister.listTools();
      times.push(performance.now() - start);
      if (tools.length !== 400) throw new Error(`tools/list answered ${tools.length} tools, expected 400`);
    }
    result.list = { ms: median(times), p99: quantile(times, 0.99) };
    console.log(`\n7c. tools/list on /v1/mcp, 20 servers × 20 tools, from the cache (${LISTS} lists after those that fill it)`);
    console.log(`  ${pad('ms per list (400 tools)', 56)} ${padLeft(fmtMs(result.list.ms), 10)} ${padLeft(fmtMs(result.list.p99), 8)}  (median, p99)`);
  }

  for (const client of clients) await client.close();
  server.close();
  relay?.server.close();
  await fleet.close();
  proc.send({ type: 'exit' });
  result.seconds = (Date.now() - started) / 1000;
  result.targetAddedMs = TARGET_ADDED_MS;
  console.log(`\n  MCP endpoint section: ${result.seconds.toFixed(1)} s`);
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runMcpEndpointBench();
  if (process.send) process.send({ type: 'result', result });
}
