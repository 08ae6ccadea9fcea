// Tool call overhead: what a call through mcp-fleet costs on top of a direct SDK call to the same MCP server, in
// the same run. Against a 2025-era server (v1 SDK) and a 2026-07-28 server (v2 SDK), both in a child process
// (bench/toolcall-server.mjs), this process times one `tools/call` of the tool `ping` three ways, alternating:
//   direct   the SDK's Client, connected once and kept, callTool (what an embedder would do without mcp-fleet)
//   fleet    fleet.tools.call: registry read, kept connection, guarded fetch, record + listings + health written
//   http     POST /v1/servers/:id/tools/call through the Hono adapter on a real port (auth, rate limits off)
//   route    the same POST to a bare Hono route on its own port that does what an embedder without mcp-fleet would:
//            JSON body in, callTool on an SDK Client kept by the route, the fleet's answer shape out (same bytes).
//            It is the baseline of the HTTP target: both pay the same HTTP hop from this process.
// With BENCH_BASELINE (bench/builds.mjs) `fleet` and `http` also run on the baseline build (a second fleet in this
// process, its own Hono app on its own port), interleaved in the same passes.
// Run by bench/run.mjs; can also run alone: `node --expose-gc bench/toolcall.mjs`.
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Hono } from 'hono';
import { BUILD_IDS, createBenchFleet, describeBuild, importPackage } from './builds.mjs';
import { figure, fmtAddedFigure, fmtAddedMs, fmtMs, fmtRatio, interleavedRounds, max, median, min, pad, padLeft, printFigures, runQueueWaitMs } from './stats.mjs';

const ROUNDS = Number(process.env.BENCH_TOOLCALL_ROUNDS ?? 12);
const BATCH = Number(process.env.BENCH_TOOLCALL_BATCH ?? 40);
const WARMUP = Number(process.env.BENCH_TOOLCALL_WARMUP ?? 40);
const WARMUP_ROUNDS = Number(process.env.BENCH_TOOLCALL_WARMUP_ROUNDS ?? 1);

const check = (result) => {
  if (result?.content?.[0]?.text !== 'pong') throw new Error(`unexpected result ${JSON.stringify(result).slice(0, 200)}`);
};

/**
 * Times the variants (`interleavedRounds`), drops the warm-up rounds and prints each variant's time and the target
 * figures: `fleet.tools.call` − direct (≤ 0.15 ms) and the fleet's HTTP route − the bare route (≤ 0.5 ms), per build.
 */
async function scenario(title, list, builds) {
  for (const v of list) for (let i = 0; i < WARMUP; i++) await v.run();
  const waitStart = runQueueWaitMs();
  const wallStart = performance.now();
  const all = await interleavedRounds(list, WARMUP_ROUNDS + ROUNDS, BATCH);
  const waited = (runQueueWaitMs() - waitStart) / (performance.now() - wallStart);
  const perRound = Object.fromEntries(Object.entries(all).map(([id, ts]) => [id, ts.slice(WARMUP_ROUNDS)]));
  console.log(`\n${title}`);
  console.log(`  ${pad('variant', 60)} ${padLeft('median ms', 10)} ${padLeft('min..max ms', 13)} ${padLeft('× direct', 9)} ${padLeft('added ms', 9)}`);
  const base = perRound.direct;
  const out = { directMs: median(base), variants: {}, waited };
  if (!Number.isNaN(waited)) console.log(`  this process waited for a core ${(waited * 100).toFixed(1)}% of the time (other work on the machine; near 0 on a quiet one)`);
  const per = (a, b, op) => perRound[a].map((t, i) => op(t, perRound[b][i]));
  for (const v of list) {
    const ts = perRound[v.id];
    const ratio = median(ts.map((t, i) => t / base[i]));
    const added = median(ts.map((t, i) => t - base[i]));
    const cells = v.id === 'direct' ? ['', ''] : [fmtRatio(ratio), fmtAddedMs(added)];
    console.log(`  ${pad(v.label, 60)} ${padLeft(fmtMs(median(ts)), 10)} ${padLeft(`${fmtMs(min(ts))}..${fmtMs(max(ts))}`, 13)} ${padLeft(cells[0], 9)} ${padLeft(cells[1], 9)}`);
    out.variants[v.id] = { ms: median(ts), ratio, addedMs: added };
  }
  const entry = (label, target, ours, theirs) => {
    const e = { label, kind: 'added', target, builds: {}, ratios: {} };
    for (const b of builds) {
      e.builds[b] = figure(per(`${ours}@${b}`, theirs, (x, y) => x - y));
      e.ratios[b] = figure(per(`${ours}@${b}`, theirs, (x, y) => x / y));
    }
    if (builds.includes('base')) e.ab = { what: `${ours} call time; below 1: faster`, figure: figure(per(`${ours}@this`, `${ours}@base`, (x, y) => x / y)) };
    return e;
  };
  out.fleet = entry(`${title.slice(0, 2)} fleet.tools.call − direct SDK callTool`, 0.15, 'fleet', 'direct');
  out.httpOverRoute = entry(`${title.slice(0, 2)} POST .../tools/call via Hono − bare Hono route + SDK`, 0.5, 'http', 'route');
  out.figures = [out.fleet, out.httpOverRoute];
  printFigures(out.figures, '  ');
  // The fleet against a direct client of its own era (information): what the fleet adds besides the era it picks.
  if (perRound.directModern !== undefined) {
    out.fleetOverModern = figure(per('fleet@this', 'directModern', (x, y) => x - y));
    console.log(`  ${pad('(information) fleet.tools.call − the direct client of the same era', 66)} ${fmtAddedFigure(out.fleetOverModern)}`);
  }
  out.httpOverDirect = figure(per('http@this', 'direct', (x, y) => x - y));
  out.routeOverDirect = figure(per('route', 'direct', (x, y) => x - y));
  console.log(`  ${pad('(information) POST via the fleet − direct; of which the HTTP hop', 66)} ${fmtAddedFigure(out.httpOverDirect)}; bare route − direct ${fmtAddedFigure(out.routeOverDirect)}`);
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
    `\n== 4. Tool calls: a call through mcp-fleet against a direct SDK call to the same server (servers in a child process on 127.0.0.1; ${WARMUP_ROUNDS} warm-up + ${ROUNDS} rounds of ${BATCH} passes, variants alternated call by call; ratio and added ms = medians of per-round figures)`,
  );
  const proc = fork(fileURLToPath(new URL('./toolcall-server.mjs', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const urls = await new Promise((resolve) => proc.once('message', resolve));

  const builds = BUILD_IDS;
  for (const b of builds) console.log(`  build ${b}: ${await describeBuild(b)}`);
  // One fleet per build, each behind its own build's Hono adapter on its own port.
  const fleets = {};
  for (const b of builds) {
    const core = await importPackage(b, 'core');
    const { createFleetApp } = await importPackage(b, 'hono');
    const fleet = createBenchFleet(core, { allowPrivateNetworks: true, rateLimit: false, onError: (error) => console.error(`[bench fleet ${b}]`, error.code, error.cause ?? '') });
    const { secret } = (await fleet.keys.create({ account: 'bench-acct', tier: 'pro' }))._unsafeUnwrap();
    const register = async (name, endpoint) => (await fleet.servers.create('bench-acct', { name, type: 'http', endpoint }))._unsafeUnwrap().id;
    const ids = { v1: await register('bench-v1', urls.v1), v2: await register('bench-v2', urls.v2) };
    const server = await listen(createFleetApp(fleet).fetch);
    fleets[b] = { fleet, secret, ids, server, base: `http://127.0.0.1:${server.address().port}/v1` };
  }
  const { ids, secret, base } = fleets.this;

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
  const viaFleet = (fleet, id) => async () => {
    const outcome = (await fleet.tools.call('bench-acct', id, 'ping', {}))._unsafeUnwrap();
    if (outcome.status !== 'success') throw new Error(JSON.stringify(outcome));
    check(outcome.result);
  };
  const viaHttp = (id, origin = base, key = secret) => async () => {
    const response = await fetch(`${origin}/servers/${id}/tools/call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
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
    ...builds.flatMap((b) => [
      { id: `fleet@${b}`, label: `fleet.tools.call (recorded), ${b} build`, run: viaFleet(fleets[b].fleet, fleets[b].ids[era]) },
      { id: `http@${b}`, label: `POST /v1/servers/:id/tools/call via Hono, ${b} build`, run: viaHttp(fleets[b].ids[era], fleets[b].base, fleets[b].secret) },
    ]),
    { id: 'route', label: 'the same POST to a bare Hono route (kept SDK Client)', run: viaHttp(ids[era], bareBase) },
    // The SDK's default client speaks the 2025 era to a 2026-07-28 server; the fleet negotiates 2026-07-28 with it.
    ...(era === 'v2'
      ? [{ id: 'directModern', label: "direct, Client pinned to 2026-07-28 (the fleet's era)", run: await direct(urls[era], { versionNegotiation: { mode: { pin: '2026-07-28' } } }) }]
      : []),
  ];
  const legacy = await scenario('4a. 2025-era server: v1 SDK McpServer, sessionful Streamable HTTP', await variants('v1'), builds);
  const modern = await scenario('4b. 2026-07-28 server: v2 SDK createMcpHandler', await variants('v2'), builds);

  for (const client of clients) await client.close();
  bare.close();
  for (const f of Object.values(fleets)) {
    f.server.close();
    await f.fleet.close();
  }
  proc.send({ type: 'exit' });
  const seconds = (Date.now() - started) / 1000;
  console.log(`\n  tool call section: ${seconds.toFixed(1)} s`);
  return { legacy, modern, figures: [...legacy.figures, ...modern.figures], seconds };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runToolCallBench();
  if (process.send) process.send({ type: 'result', result });
}
