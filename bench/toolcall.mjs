// Tool call overhead: what a call through mcp-fleet costs on top of a direct SDK call to the same MCP server, in
// the same run. Against a 2025-era server (v1 SDK) and a 2026-07-28 server (v2 SDK), both in a child process
// (bench/toolcall-server.mjs), this process times one `tools/call` of the tool `ping` three ways, alternating:
//   direct   the SDK's Client, connected once and kept, callTool (what an embedder would do without mcp-fleet)
//   fleet    fleet.tools.call: registry read, kept connection, guarded fetch, record + listings + health written
//   http     POST /v1/servers/:id/tools/call through the Hono adapter on a real port (auth, rate limits off)
// Run by bench/run.mjs; can also run alone: `node --expose-gc bench/toolcall.mjs`.
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createFleet } from '@mcp-fleet/core';
import { createFleetApp } from '@mcp-fleet/hono';
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
    console.log(`  ${pad(v.label, 56)} ${padLeft(fmtMs(median(ts)), 10)} ${padLeft(`${fmtMs(min(ts))}..${fmtMs(max(ts))}`, 13)} ${padLeft(cells[0], 9)} ${padLeft(cells[1], 9)}`);
    out[v.id] = { ms: median(ts), ratio, addedMs: added, addedLow: min(addedPerRound), addedHigh: max(addedPerRound) };
  }
  return out;
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
  const server = serve({ fetch: createFleetApp(fleet).fetch, port: 0, hostname: '127.0.0.1', createServer });
  await new Promise((resolve) => (server.listening ? resolve() : server.once('listening', resolve)));
  const base = `http://127.0.0.1:${server.address().port}/v1`;

  const clients = [];
  async function direct(url) {
    const client = new Client({ name: 'bench-direct', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    clients.push(client);
    return async () => check(await client.callTool({ name: 'ping', arguments: {} }));
  }
  const viaFleet = (id) => async () => {
    const outcome = (await fleet.tools.call('bench-acct', id, 'ping', {}))._unsafeUnwrap();
    if (outcome.status !== 'success') throw new Error(JSON.stringify(outcome));
    check(outcome.result);
  };
  const viaHttp = (id) => async () => {
    const response = await fetch(`${base}/servers/${id}/tools/call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ping', arguments: {} }),
    });
    const body = await response.json();
    if (response.status !== 200 || body.data?.status !== 'success') throw new Error(`${response.status} ${JSON.stringify(body).slice(0, 300)}`);
    check(body.data.result);
  };
  const variants = async (era) => [
    { id: 'direct', label: 'direct: SDK Client (kept connection) callTool', run: await direct(urls[era]) },
    { id: 'fleet', label: 'fleet.tools.call (recorded)', run: viaFleet(ids[era]) },
    { id: 'http', label: 'POST /v1/servers/:id/tools/call via Hono', run: viaHttp(ids[era]) },
  ];
  const legacy = await scenario('4a. 2025-era server: v1 SDK McpServer, sessionful Streamable HTTP', await variants('v1'));
  const modern = await scenario('4b. 2026-07-28 server: v2 SDK createMcpHandler', await variants('v2'));

  for (const client of clients) await client.close();
  server.close();
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
