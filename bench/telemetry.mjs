// Section 9: what telemetry costs (issue 29). Two parts, each an A/B of variants measured alternately in this run:
//   9a. GET /v1/servers through Hono, server processes as in section 2 (bench/frameworks.mjs, runComparison): the
//       fleet with nothing subscribed, with @mcp-fleet/otel (BatchSpanProcessor, metrics read every 5 s, exporters that
//       count and drop: bench/telemetry-setup.mjs) and with @mcp-fleet/prometheus; req/s ratios, median of the rounds.
//   9b. A tool call through /v1/mcp (v2 SDK client, kept session, 2026-07-28 and 2025-era upstreams from
//       bench/toolcall-server.mjs), this process's fleet: in each round CALLS calls with OTel subscribed and CALLS
//       without, in mirrored order (on off, then off on); the figure is the median of the per-round differences of the
//       rounds' median times (ms added by OTel), with the rounds' range.
//   9d. Nothing subscribed: the trace points present against absent (a copy of the core with them taken out), in a
//       process of its own through the fleet's fetch handler, CPU per request for GET, POST and a tool call, with the
//       verdict on issue 29's ≤ 2 % (bench/telemetry-off.mjs). Run first.
// BENCH_TELEMETRY_ONLY=off,get,toolcall picks the parts (all by default). Can run alone after a build:
// `node --expose-gc bench/telemetry.mjs`.
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createFleet } from '@mcp-fleet/core';
import { createFleetApp } from '@mcp-fleet/hono';
import { forkChild, cpuFor } from './child.mjs';
import { summarizeTraceOff, traceOffHeading } from './telemetry-off.mjs';
import { runComparison, startServer } from './frameworks.mjs';
import { collect, figure, fmtAddedMs, fmtMs, median, pad, padLeft, settled } from './stats.mjs';
import { otelOn } from './telemetry-setup.mjs';

const ROUNDS = Number(process.env.BENCH_TELEMETRY_ROUNDS ?? 10);
const CALLS = Number(process.env.BENCH_TELEMETRY_CALLS ?? 60);
const WARMUP = Number(process.env.BENCH_TELEMETRY_WARMUP ?? 100);
const OFF_PROCESSES = Math.max(1, Number(process.env.BENCH_OFF_PROCESSES ?? 2));
const PARTS = process.env.BENCH_TELEMETRY_ONLY?.split(/[\s,]+/).filter(Boolean) ?? ['off', 'get', 'toolcall'];

/**
 * 9d in processes of its own, one after the other, each with a small fixed young generation and an exposed gc
 * (bench/telemetry-off.mjs says why), each running its share of the rounds with the variants loaded in a rotated
 * order; their rounds are pooled into the figures.
 */
async function offPart() {
  const started = Date.now();
  console.log(traceOffHeading(OFF_PROCESSES));
  const parts = [];
  for (let part = 0; part < OFF_PROCESSES; part++) {
    const proc = forkChild('./telemetry-off.mjs', [String(part), String(OFF_PROCESSES)], { execArgv: ['--expose-gc', '--min-semi-space-size=2', '--max-semi-space-size=2'], cpu: cpuFor('server') });
    parts.push((await proc.next('result')).result);
  }
  return summarizeTraceOff(parts, (Date.now() - started) / 1000);
}

async function httpPart() {
  const load = forkChild('./http-load.mjs', [], { execArgv: ['--expose-gc'], cpu: cpuFor('load') });
  const variants = ['fleet-hono', 'fleet-hono-otel', 'fleet-hono-prom'];
  const [, ...servers] = await Promise.all([load.next('ready'), ...variants.map((v) => startServer(v, 'this'))]);
  const s = Object.fromEntries(servers.map((server) => [server.key, server]));
  for (const server of servers) if (server.sample.status !== 200) throw new Error(`${server.key}: unexpected sample answer (${server.sample.status})`);
  const measured = await runComparison(
    {
      id: 'telemetryGet',
      label: '9a. GET /v1/servers via Hono: nothing subscribed, OTel on, Prometheus on',
      method: 'GET',
      variants: servers.map((server) => server.key),
      figures: [
        { id: 'otelGet', label: 'GET /v1/servers via Hono, OTel on / nothing subscribed, req/s', ours: 'fleet-hono-otel', theirs: () => 'fleet-hono@this', info: true },
        { id: 'promGet', label: 'GET /v1/servers via Hono, Prometheus on / nothing subscribed, req/s', ours: 'fleet-hono-prom', theirs: () => 'fleet-hono@this', info: true },
      ],
    },
    { servers: s, load, builds: ['this'] },
  );
  const cpu = (key) => median(measured.results[key].map((r) => r.cpuUsPerReq));
  const out = { figures: measured.figures, cpuUs: Object.fromEntries(servers.map((server) => [server.key, cpu(server.key)])), waited: measured.waited };
  console.log(
    `  server CPU per request: nothing ${out.cpuUs['fleet-hono@this'].toFixed(1)} µs, OTel ${out.cpuUs['fleet-hono-otel@this'].toFixed(1)} µs, Prometheus ${out.cpuUs['fleet-hono-prom@this'].toFixed(1)} µs (medians of the rounds)`,
  );
  await Promise.all([load.exit(), ...servers.map((server) => server.proc.exit())]);
  return out;
}

async function toolCallPart() {
  const proc = fork(fileURLToPath(new URL('./toolcall-server.mjs', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const urls = await new Promise((resolve) => proc.once('message', resolve));
  const fleet = createFleet({ allowPrivateNetworks: true, rateLimit: false, onError: (error) => console.error('[bench fleet]', error.code, error.cause ?? '') });
  const { secret } = (await fleet.keys.create({ account: 'bench-acct', tier: 'pro' }))._unsafeUnwrap();
  for (const era of ['v1', 'v2']) (await fleet.servers.create('bench-acct', { name: `bench-${era}`, type: 'http', endpoint: urls[era] }))._unsafeUnwrap();
  const server = serve({ fetch: createFleetApp(fleet).fetch, port: 0, hostname: '127.0.0.1', createServer });
  await new Promise((resolve) => (server.listening ? resolve() : server.once('listening', resolve)));
  const client = new Client({ name: 'bench-telemetry', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.address().port}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));

  const out = {};
  for (const [era, title] of [
    ['v2', '9b. tools/call through /v1/mcp, 2026-07-28 upstream'],
    ['v1', '9c. tools/call through /v1/mcp, 2025-era upstream'],
  ]) {
    const call = async () => {
      const result = await client.callTool({ name: `bench-${era}__ping`, arguments: {} });
      if (result?.content?.[0]?.text !== 'pong') throw new Error(`unexpected result ${JSON.stringify(result).slice(0, 200)}`);
    };
    const timed = async () => {
      const times = [];
      for (let i = 0; i < CALLS; i++) {
        await settled();
        const start = performance.now();
        await call();
        times.push(performance.now() - start);
      }
      return median(times);
    };
    // Warm both ways: the calls, and OTel's own code (its first spans, batches and metric records) before any round.
    for (let i = 0; i < WARMUP; i++) await call();
    const warming = await otelOn(fleet);
    for (let i = 0; i < WARMUP; i++) await call();
    await warming.close();
    const on = [];
    const off = [];
    let spans = 0;
    for (let round = 0; round < ROUNDS; round++) {
      collect();
      for (const phase of round % 2 === 0 ? ['on', 'off'] : ['off', 'on']) {
        if (phase === 'off') {
          off.push(await timed());
          continue;
        }
        const telemetry = await otelOn(fleet);
        on.push(await timed());
        await telemetry.close();
        spans += telemetry.exported();
      }
    }
    if (spans === 0) throw new Error('OTel on: no span was exported');
    const added = figure(on.map((t, i) => t - off[i]));
    out[era] = { onMs: median(on), offMs: median(off), added, spansPerCall: spans / (ROUNDS * CALLS) };
    console.log(`\n  ${title} (${ROUNDS} rounds of ${CALLS} calls each way)`);
    console.log(`  ${pad('variant', 40)} ${padLeft('median ms', 10)}`);
    console.log(`  ${pad('nothing subscribed', 40)} ${padLeft(fmtMs(out[era].offMs), 10)}`);
    console.log(`  ${pad(`OTel on (${out[era].spansPerCall.toFixed(1)} spans a call exported)`, 40)} ${padLeft(fmtMs(out[era].onMs), 10)}`);
    console.log(`  ${pad('added by OTel, median of the rounds', 40)} ${padLeft(fmtAddedMs(added.median), 10)}  (rounds ${fmtAddedMs(added.low)}..${fmtAddedMs(added.high)})`);
  }
  await client.close();
  server.close();
  await fleet.close();
  proc.send({ type: 'exit' });
  return out;
}

export async function runTelemetryBench() {
  const started = Date.now();
  console.log('\n== 9. Telemetry: the fleet with nothing subscribed, with @mcp-fleet/otel, with @mcp-fleet/prometheus (alternating, same run)');
  const off = PARTS.includes('off') ? await offPart() : undefined;
  const http = PARTS.includes('get') ? await httpPart() : undefined;
  const toolCalls = PARTS.includes('toolcall') ? await toolCallPart() : undefined;
  const seconds = (Date.now() - started) / 1000;
  console.log(`\n  section 9: ${seconds.toFixed(1)} s`);
  return { off, http, toolCalls, seconds };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runTelemetryBench();
  if (process.send) process.send({ type: 'result', result });
}
