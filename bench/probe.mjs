// Probe overhead: what a health probe by mcp-fleet costs on top of the MCP server's own answer time. Against a
// 2025-era server (v1 SDK) and a 2026-07-28 server (v2 SDK), both in a child process (bench/probe-server.mjs), this
// process times the same MCP exchange done four ways, alternating variants round after round:
//   direct        a bare client doing the exchange the probe does (the server's own answer time, plus a minimal client)
//   probeServer   mcp-fleet's MCP layer alone, on the global fetch, with the era remembered (no guard, no storage)
//   guarded       probeServer with the fleet's guarded fetch, as the fleet's prober calls it (no storage)
//   fleet         fleet.handle(GET /v1/servers/:id/health) end to end: auth, MCP layer, guard, recording, record read
// Run by bench/run.mjs (node --expose-gc); can also run alone: `node --expose-gc bench/probe.mjs`.
import { forkChild } from './child.mjs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createFleet, createGuardedFetch, DEFAULT_TIMEOUT_MS, MemoryTokenCache, probeServer } from '@mcp-fleet/core';
import { collect, fmtAddedMs, fmtMs, fmtRatio, interleavedRounds, max, median, min, pad, padLeft } from './stats.mjs';

const ROUNDS = Number(process.env.BENCH_PROBE_ROUNDS ?? 10);
const BATCH = Number(process.env.BENCH_PROBE_BATCH ?? 20);
const WARMUP = Number(process.env.BENCH_PROBE_WARMUP ?? 40);

/** The client identity the probe announces (packages/core/src/mcp/connect.ts CLIENT_INFO), so both send the same bytes. */
const CLIENT_INFO = { name: 'mcp-fleet', version: '0.1.0' };

/** The servers' process, with a tiny request/answer protocol over IPC (see bench/probe-server.mjs). */
function startServers() {
  const servers = forkChild('./probe-server.mjs');
  return { ready: servers.next('ready'), seen: () => servers.ask({ type: 'seen' }, 'seen'), exit: servers.exit };
}

/** 2025 era, direct: the SDK's Client (the one the probe uses, default legacy connect) + ping, then the session's DELETE, as the probe ends it. */
function directLegacy(url) {
  return async () => {
    const transport = new StreamableHTTPClientTransport(new URL(url));
    const client = new Client(CLIENT_INFO);
    await client.connect(transport);
    await client.ping();
    await transport.terminateSession();
    await client.close();
  };
}

/** 2026-07-28, direct: the one `server/discover` POST the probe sends (same headers, same body), answer read and checked. */
function directDiscover(url) {
  const headers = {
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'server/discover',
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 'server-discover-probe-1',
    method: 'server/discover',
    params: {
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  });
  return async () => {
    const response = await fetch(url, { method: 'POST', headers, body });
    const answer = await response.json();
    if (response.status !== 200 || !answer.result?.supportedVersions?.includes('2026-07-28')) {
      throw new Error(`server/discover answered ${response.status} ${JSON.stringify(answer).slice(0, 200)}`);
    }
  };
}

/** probeServer with the era remembered, as the fleet calls it from the second probe of a server on. */
function probe(url, era, deps) {
  const config = { type: 'http', endpoint: url, timeout: DEFAULT_TIMEOUT_MS };
  return async () => {
    const result = await probeServer(config, deps, { era });
    if (!result.ok || result.era !== era) throw new Error(`probeServer failed: ${JSON.stringify(result)}`);
  };
}

/** GET /v1/servers/:id/health through fleet.handle; keeps the response_time of each answer. */
function fleetHealth(fleet, secret, id, responseTimes) {
  const url = `http://x/v1/servers/${id}/health`;
  const headers = { authorization: `Bearer ${secret}` };
  return async () => {
    const response = await fleet.handle(new Request(url, { headers }));
    const body = await response.json();
    if (response.status !== 200 || body.data?.status !== 'healthy') throw new Error(`health answered ${response.status} ${JSON.stringify(body).slice(0, 300)}`);
    responseTimes.push(body.data.response_time);
  };
}

/** Per-exchange times (ms) of `n` exchanges, one after the other. */
async function batch(variant, n) {
  collect();
  const times = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await variant.run();
    times.push(performance.now() - start);
  }
  return times;
}

async function scenario(title, era, list, servers) {
  // Warm-up (JIT, keep-alive connections; the fleet's first probe also finds the era, remembered from then on).
  for (const v of list) await batch(v, WARMUP);

  // Sanity check: one exchange of each variant, and what the server received for it. Every variant must send the
  // same requests as the direct client (compared sorted: the 2025 client's GET, the SSE stream it opens after
  // `notifications/initialized`, is not awaited, so it may reach the server before or after the ping).
  const exchanges = [];
  await servers.seen();
  for (const v of list) {
    await v.run();
    exchanges.push((await servers.seen())[era]);
  }
  console.log(`\n${title}`);
  console.log(`  the server received, per exchange: ${exchanges[0].join(' → ')}`);
  const same = (seen) => [...seen].sort().join('|');
  exchanges.forEach((seen, i) => {
    if (same(seen) !== same(exchanges[0])) throw new Error(`${list[i].label} sent "${seen.join(' → ')}", the direct client "${exchanges[0].join(' → ')}"`);
  });
  const countedRequests = (seen) => seen.filter((r) => r !== 'GET').length;

  // Each round runs BATCH passes; a pass is one exchange of every variant, in an order rotated (and reversed every
  // other pass) so that no variant always goes first or follows the same neighbour. Exchanges of different variants
  // are thus milliseconds apart, and drift in the machine hits them alike.
  const perRound = await interleavedRounds(list, ROUNDS, BATCH);
  // Every exchange of the rounds reached the server whole (POSTs and DELETEs counted), and no 2025 session was left open.
  const after = await servers.seen();
  const expected = ROUNDS * BATCH * list.length * countedRequests(exchanges[0]);
  if (countedRequests(after[era]) !== expected) throw new Error(`the server received ${countedRequests(after[era])} POST/DELETE requests, expected ${expected}`);
  if (after.v1Sessions !== 0) throw new Error(`${after.v1Sessions} 2025 sessions left open on the server`);

  const base = perRound.direct;
  const ratios = (id) => perRound[id].map((t, i) => t / base[i]);
  const added = (id) => perRound[id].map((t, i) => t - base[i]);
  console.log(`  ${pad('variant', 56)} ${padLeft('median ms', 10)} ${padLeft('min..max ms', 13)} ${padLeft('× direct', 9)} ${padLeft('added ms', 9)}`);
  for (const v of list) {
    const ts = perRound[v.id];
    const relative = v.id === 'direct' ? ['', ''] : [fmtRatio(median(ratios(v.id))), fmtAddedMs(median(added(v.id)))];
    console.log(`  ${pad(v.label, 56)} ${padLeft(fmtMs(median(ts)), 10)} ${padLeft(`${fmtMs(min(ts))}..${fmtMs(max(ts))}`, 13)} ${padLeft(relative[0], 9)} ${padLeft(relative[1], 9)}`);
  }
  const split = (a, b) => median(perRound[a].map((t, i) => t - perRound[b][i]));
  console.log(
    `  added time by layer (medians of per-round differences, so they need not add up): MCP layer ${fmtAddedMs(split('probe', 'direct'))} ms, guarded fetch ${fmtAddedMs(split('guarded', 'probe'))} ms, handler + auth + storage ${fmtAddedMs(split('fleet', 'guarded'))} ms`,
  );
  const ratio = median(ratios('fleet'));
  const addedMs = median(added('fleet'));
  const rs = ratios('fleet');
  const as = added('fleet');
  console.log(
    `  ratio fleet probe / server's own answer: ${padLeft(fmtRatio(ratio), 7)}  (rounds ${fmtRatio(min(rs))}..${fmtRatio(max(rs))}); added ${fmtAddedMs(addedMs)} ms (rounds ${fmtAddedMs(min(as))}..${fmtAddedMs(max(as))})  (information)`,
  );
  return {
    directMs: median(base),
    probeMs: median(perRound.probe),
    guardedMs: median(perRound.guarded),
    fleetMs: median(perRound.fleet),
    ratio,
    addedMs,
    probeRatio: median(ratios('probe')),
    probeAddedMs: median(added('probe')),
  };
}

export async function runProbeBench() {
  const started = Date.now();
  console.log(
    `\n== 3. Probe overhead against the MCP server's own answer time (servers in a child process on 127.0.0.1; ${ROUNDS} rounds of ${BATCH} passes, a pass = one exchange per variant in rotated order; a round's figure is the median of its exchanges; ratio and added ms = medians of per-round figures)`,
  );
  if (typeof globalThis.gc !== 'function') console.log('  (run with --expose-gc for a gc() between batches)');
  const servers = startServers();
  const urls = await servers.ready;

  const fleet = createFleet({
    allowPrivateNetworks: true,
    rateLimit: false,
    onError: (error) => console.error('[bench fleet]', error.code, error.cause ?? ''),
  });
  const { secret } = (await fleet.keys.create({ account: 'bench-acct', tier: 'pro' }))._unsafeUnwrap();
  const register = async (name, endpoint) => {
    const made = await fleet.servers.create('bench-acct', { name, type: 'http', endpoint });
    if (made.isErr()) throw made.error;
    return made.value.id;
  };
  const ids = { v1: await register('bench-v1', urls.v1), v2: await register('bench-v2', urls.v2) };

  // The guarded fetch and token cache the fleet's prober passes to probeServer (packages/core/src/health/mcp-prober.ts).
  const guardedFetch = createGuardedFetch({ allowPrivateNetworks: true });
  const guardedDeps = { fetch: guardedFetch, dispatcher: guardedFetch.dispatcher, tokens: new MemoryTokenCache(), now: Date.now };

  const responseTimes = { v1: [], v2: [] };
  const variants = (server, era, direct, directLabel) => [
    { id: 'direct', label: directLabel, run: direct },
    { id: 'probe', label: 'probeServer, era remembered (MCP layer alone)', run: probe(urls[server], era, {}) },
    { id: 'guarded', label: "probeServer + guarded fetch (as the fleet's prober)", run: probe(urls[server], era, guardedDeps) },
    { id: 'fleet', label: 'fleet.handle GET /v1/servers/:id/health (end to end)', run: fleetHealth(fleet, secret, ids[server], responseTimes[server]) },
  ];

  const legacy = await scenario(
    '3a. 2025-era server: v1 SDK McpServer, sessionful StreamableHTTPServerTransport',
    'v1',
    variants('v1', '2025', directLegacy(urls.v1), 'direct: SDK Client connect + ping + DELETE + close'),
    servers,
  );
  console.log(`  the fleet's health record said response_time ${median(responseTimes.v1)} ms (median; whole ms, the probe's own clock)`);
  const modern = await scenario(
    '3b. 2026-07-28 server: v2 SDK createMcpHandler (stateless)',
    'v2',
    variants('v2', '2026-07-28', directDiscover(urls.v2), 'direct: one server/discover POST (fetch), answer read'),
    servers,
  );
  console.log(`  the fleet's health record said response_time ${median(responseTimes.v2)} ms (median; whole ms, the probe's own clock)`);

  await fleet.close();
  await guardedFetch.dispatcher.close();
  await servers.exit();
  const seconds = (Date.now() - started) / 1000;
  console.log(`\n  probe section: ${seconds.toFixed(1)} s`);
  return { legacy, modern, seconds };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runProbeBench();
  if (process.send) process.send({ type: 'result', result });
}
