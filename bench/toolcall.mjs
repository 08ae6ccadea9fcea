// Tool call overhead: what a call through mcp-fleet costs on top of a direct SDK call to the same MCP server, in
// the same run. Against a 2025-era server (v1 SDK) and a 2026-07-28 server (v2 SDK), both in a child process
// (bench/toolcall-server.mjs), this process times one `tools/call` of the tool `ping` three ways, alternating:
//   direct   the SDK's Client, connected once and kept, callTool (what an embedder would do without mcp-fleet)
//   fleet    fleet.tools.call: registry read, kept connection, guarded fetch, record + listings + health written
//   http     POST /v1/servers/:id/tools/call through the Hono adapter on a real port (auth, rate limits off)
//   route    the same POST to a bare Hono route on its own port that does what an embedder without mcp-fleet would:
//            JSON body in, callTool on an SDK Client kept by the route, the fleet's answer shape out (same bytes).
//            It is the baseline of the HTTP target: both pay the same HTTP hop from this process.
// Run by bench/run.mjs; can also run alone: `node --expose-gc bench/toolcall.mjs`.
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createFleet } from '@mcp-fleet/core';
import { createFleetApp } from '@mcp-fleet/hono';
import { Hono } from 'hono';
import { fmtAddedMs, fmtMs, fmtRatio, interleavedRounds, max, median, min, pad, padLeft } from './stats.mjs';

const ROUNDS = Number(process.env.BENCH_TOOLCALL_ROUNDS ?? 10);
const BATCH = Number(process.env.BENCH_TOOLCALL_BATCH ?? 20);
const WARMUP = Number(process.env.BENCH_TOOLCALL_WARMUP ?? 40);

const check = (result) => {
  if (result?.content?.[0]?.text !== 'pong') throw new Error(`unexpected result ${JSON.stringify(result).slice(0, 200)}`);
};

async function scenario(title, list) {
  for (const v of list) for (let i = 0; i < WARMUP; i++) await v.run();
  const perRound = await interleavedRounds(list, ROUNDS, BATCH);
  console.log(`\n${title}`);
  console.log(`  ${pad('variant', 56)} ${padLeft('median ms', 10)} ${padLeft('min..max ms', 13)} ${padLeft('× direct', 9)} ${padLeft('added ms', 9)}`);
  const base = perRound.direct;
  const out = { directMs: median(base) };
  for (const v of list) {
    const ts = perRound[v.id];
    const ratio = median(ts.map((t, i) => t / base[i]));
    const addedPerRound = ts.map((t, i) => t - base[i]);
    const added = median(addedPerRound);
    const cells = v.id === 'direct' ? ['', ''] : [fmtRatio(ratio), fmtAddedMs(added)];
    // The HTTP route against the bare route, per round (the HTTP target's figure).
    if (v.id === 'http' && perRound.route !== undefined) {
      const overRoute = ts.map((t, i) => t - perRound.route[i]);
      out.httpOverRoute = { ratio: median(ts.map((t, i) => t / perRound.route[i])), addedMs: median(overRoute), addedLow: min(overRoute), addedHigh: max(overRoute) };
    }
    console.log(`  ${pad(v.label, 56)} ${padLeft(fmtMs(median(ts)), 10)} ${padLeft(`${fmtMs(min(ts))}..${fmtMs(max(ts))}`, 13)} ${padLeft(cells[0], 9)} ${padLeft(cells[1], 9)}`);
    out[v.id] = { ms: median(ts), ratio, addedMs: added, addedLow: min(addedPerRound), addedHigh: max(addedPerRound) };
  }
  // The fleet against a direct client of its own era (information): what the fleet adds besides the era it picks.
  if (perRound.directModern !== undefined) {
    const over = perRound.fleet.map((t, i) => t - perRound.directModern[i]);
    out.fleetOverModern = { ratio: median(perRound.fleet.map((t, i) => t / perRound.directModern[i])), addedMs: median(over), addedLow: min(over), addedHigh: max(over) };
    console.log(`  ${pad('fleet.tools.call − the direct client of the same era, per round', 56)} ${padLeft('', 10)} ${padLeft(`${fmtAddedMs(min(over))}..${fmtAddedMs(max(over))}`, 13)} ${padLeft('', 9)} ${padLeft(fmtAddedMs(median(over)), 9)}`);
  }
  if (out.httpOverRoute !== undefined) {
    const r = out.httpOverRoute;
    console.log(`  ${pad('POST via the fleet − the bare Hono route, per round', 56)} ${padLeft('', 10)} ${padLeft(`${fmtAddedMs(r.addedLow)}..${fmtAddedMs(r.addedHigh)}`, 13)} ${padLeft('', 9)} ${padLeft(fmtAddedMs(r.addedMs), 9)}`);
  }
  return out;
}

/**
 * The baseline of the HTTP route: a bare Hono app answering `POST /v1/servers/:id/tools/call` by calling the tool on
 * an SDK Client it keeps per server, with the fleet's answer (`template`, one real answer) around the result, so that
 * the bytes on the wire match. No auth, no record: what an embedder's own route would do.
 */
function bareRoute(clientsById, template) {
  const app = new Hono();
  app.post('/v1/servers/:id/tools/call', async (c) => {
    const body = await c.req.json();
    const result = await clientsById[c.req.param('id')].callTool({ name: body.name, arguments: body.arguments ?? {} });
    return c.json({ ...template, data: { ...template.data, result } });
  });
  return app;
}

async function listen(fetch) {
  const server = serve({ fetch, port: 0, hostname: '127.0.0.1', createServer });
  await new Promise((resolve) => (server.listening ? resolve() : server.once('listening', resolve)));
  return server;
}

export async function runToolCallBench() {
  const started = Date.now();
  console.log(
    `\n== 4. Tool calls: a call through mcp-fleet against a direct SDK call to the same server (servers in a child process on 127.0.0.1; ${ROUNDS} rounds of ${BATCH} passes; ratio and added ms = medians of per-round figures)`,
  );
  const proc = fork(fileURLToPath(new URL('./toolcall-server.mjs', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const urls = await new Promise((resolve) => proc.once('message', resolve));

  const fleet = createFleet({ allowPrivateNetworks: true, rateLimit: false, onError: (error) => console.error('[bench fleet]', error.code, error.cause ?? '') });
  const { secret } = (await fleet.keys.create({ account: 'bench-acct', tier: 'pro' }))._unsafeUnwrap();
  const register = async (name, endpoint) => (await fleet.servers.create('bench-acct', { name, type: 'http', endpoint }))._unsafeUnwrap().id;
  const ids = { v1: await register('bench-v1', urls.v1), v2: await register('bench-v2', urls.v2) };
  const server = await listen(createFleetApp(fleet).fetch);
  const base = `http://127.0.0.1:${server.address().port}/v1`;

  const clients = [];
  async function connected(url, options) {
    const client = new Client({ name: 'bench-direct', version: '1.0.0' }, options);
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    clients.push(client);
    return client;
  }
  async function direct(url, options) {
    const client = await connected(url, options);
    return async () => check(await client.callTool({ name: 'ping', arguments: {} }));
  }
  const viaFleet = (id) => async () => {
    const outcome = (await fleet.tools.call('bench-acct', id, 'ping', {}))._unsafeUnwrap();
    if (outcome.status !== 'success') throw new Error(JSON.stringify(outcome));
    check(outcome.result);
  };
  const viaHttp = (id, origin = base) => async () => {
    const response = await fetch(`${origin}/servers/${id}/tools/call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ping', arguments: {} }),
    });
    const body = await response.json();
    if (response.status !== 200 || body.data?.status !== 'success') throw new Error(`${response.status} ${JSON.stringify(body).slice(0, 300)}`);
    check(body.data.result);
  };
  // The bare route's answer around the result: one real answer of the fleet's route.
  const template = await (
    await fetch(`${base}/servers/${ids.v2}/tools/call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ping', arguments: {} }),
    })
  ).json();
  const routeClients = { [ids.v1]: await connected(urls.v1), [ids.v2]: await connected(urls.v2) };
  const bare = await listen(bareRoute(routeClients, template).fetch);
  const bareBase = `http://127.0.0.1:${bare.address().port}/v1`;
  const variants = async (era) => [
    { id: 'direct', label: 'direct: SDK Client (kept connection) callTool', run: await direct(urls[era]) },
    { id: 'fleet', label: 'fleet.tools.call (recorded)', run: viaFleet(ids[era]) },
    { id: 'http', label: 'POST /v1/servers/:id/tools/call via Hono', run: viaHttp(ids[era]) },
    { id: 'route', label: 'the same POST to a bare Hono route (kept SDK Client)', run: viaHttp(ids[era], bareBase) },
    // The SDK's default client speaks the 2025 era to a 2026-07-28 server; the fleet negotiates 2026-07-28 with it.
    ...(era === 'v2'
      ? [{ id: 'directModern', label: "direct, Client pinned to 2026-07-28 (the fleet's era)", run: await direct(urls[era], { versionNegotiation: { mode: { pin: '2026-07-28' } } }) }]
      : []),
  ];
  const legacy = await scenario('4a. 2025-era server: v1 SDK McpServer, sessionful Streamable HTTP', await variants('v1'));
  const modern = await scenario('4b. 2026-07-28 server: v2 SDK createMcpHandler', await variants('v2'));

  for (const client of clients) await client.close();
  server.close();
  bare.close();
  await fleet.close();
  proc.send({ type: 'exit' });
  const seconds = (Date.now() - started) / 1000;
  console.log(`\n  tool call section: ${seconds.toFixed(1)} s`);
  return { legacy, modern, seconds };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runToolCallBench();
  if (process.send) process.send({ type: 'result', result });
}
