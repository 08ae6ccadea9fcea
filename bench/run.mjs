// `npm run bench`: builds first (see package.json), then runs each section in its own node process and prints a
// summary of the ratios. Every figure is a ratio against a baseline measured in this same run, never a number to
// compare across runs or machines. See bench/README.md.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fmtAddedMs, fmtMs, fmtRatio, pad, verdict, verdictAtMost } from './stats.mjs';

const started = Date.now();

/** Runs a section in a fresh process (own heap, own JIT) and returns what it sent back. */
function section(file, execArgv = []) {
  return new Promise((resolve, reject) => {
    const proc = fork(fileURLToPath(new URL(file, import.meta.url)), [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let result;
    proc.on('message', (message) => {
      if (message.type === 'result') result = message.result;
    });
    proc.once('exit', (code) => (code === 0 && result !== undefined ? resolve(result) : reject(new Error(`${file} failed (exit ${code})`))));
  });
}

console.log(`mcp-fleet benchmarks — node ${process.version}, ${(await import('node:os')).cpus().length} CPUs, ${new Date().toISOString()}`);
const limiter = await section('./limiter.mjs', ['--expose-gc']);
const http = await section('./frameworks.mjs');
const probe = await section('./probe.mjs', ['--expose-gc']);
const toolCalls = await section('./toolcall.mjs', ['--expose-gc']);
const webhooks = await section('./webhooks.mjs');
const storage = await section('./storage.mjs', ['--expose-gc']);
const mcpEndpoint = await section('./mcp-endpoint.mjs', ['--expose-gc']);

const addedRange = (r) => `(rounds ${fmtAddedMs(r.addedLow)}..${fmtAddedMs(r.addedHigh)})`;
const line = (label, value, note) => console.log(`  ${pad(label, 67)} ${fmtRatio(value).padStart(7)}  ${note}`);
console.log('\n== Summary (each ratio compares two variants measured alternately in this run; medians of per-round ratios)');
for (const [name, r] of [
  ['1a nothing refused', limiter.allowed],
  ['1b most refused', limiter.refused],
]) {
  line(`${name}: store, as the limiter drives it / rlf consume`, r['store/rlf'], verdict(r['store/rlf'], 1));
  line(`${name}: RateLimiter.admit / rlf consume`, r['admit/rlf'], verdict(r['admit/rlf'], 1));
  line(`${name}: RateLimiter.admit / rlf two consumes (same job)`, r['admit/rlf2'], '(information)');
}
const rounds = (r) => `(rounds ${fmtRatio(r.low)}..${fmtRatio(r.high)})`;
line('2 GET /v1/servers via Hono, fleet / bare Hono, req/s', http.honoGet.ratio, `${rounds(http.honoGet)} ${verdict(http.honoGet.ratio, 0.8)}`);
line('2 GET /v1/servers via Express, fleet / bare Express, req/s', http.expressGet.ratio, `${rounds(http.expressGet)} ${verdict(http.expressGet.ratio, 0.8)}`);
line('2 POST /v1/servers via Hono, fleet / bare parse+zod+Map, req/s', http.honoPost.ratio, `${rounds(http.honoPost)} ${verdict(http.honoPost.ratio, 0.6)}`);
line('2 GET /v1/servers via Hono, limits ON / OFF, req/s', http.limits.ratio, `${rounds(http.limits)} ${verdict(http.limits.ratio, 0.9)}`);
console.log(`  2 top of the Hono GET profile: ${http.profile.top.slice(0, 5).map((f) => `${f.name} ${f.selfPct.toFixed(0)}%`).join(', ')}`);
for (const [name, r] of [
  ['3a probe time, 2025 era', probe.legacy],
  ['3b probe time, 2026-07-28', probe.modern],
]) {
  line(`${name}: fleet health request / server's answer`, r.ratio, `${fmtMs(r.fleetMs)} vs ${fmtMs(r.directMs)} ms, ${fmtAddedMs(r.addedMs)} ms (information)`);
  line(`${name}: probeServer alone / server's answer`, r.probeRatio, `${fmtMs(r.probeMs)} vs ${fmtMs(r.directMs)} ms, ${fmtAddedMs(r.probeAddedMs)} ms (information)`);
}
for (const [name, r] of [
  ['4a tool calls, 2025 era', toolCalls.legacy],
  ['4b tool calls, 2026-07-28', toolCalls.modern],
]) {
  line(`${name}: fleet.tools.call / direct SDK callTool`, r.fleet.ratio, `${fmtMs(r.fleet.ms)} vs ${fmtMs(r.directMs)} ms, ${fmtAddedMs(r.fleet.addedMs)} ms added ${addedRange(r.fleet)} ${verdictAtMost(r.fleet.addedMs, 0.15, ' ms')}`);
  if (r.fleetOverModern !== undefined) {
    const o = r.fleetOverModern;
    line(`${name}: fleet.tools.call / a direct Client pinned to 2026-07-28`, o.ratio, `${fmtAddedMs(o.addedMs)} ms added (rounds ${fmtAddedMs(o.addedLow)}..${fmtAddedMs(o.addedHigh)}) (information: the default Client speaks the 2025 era to this server)`);
  }
  line(`${name}: POST .../tools/call via Hono / bare Hono route + SDK`, r.httpOverRoute.ratio, `${fmtMs(r.http.ms)} vs ${fmtMs(r.route.ms)} ms, ${fmtAddedMs(r.httpOverRoute.addedMs)} ms added ${addedRange(r.httpOverRoute)} ${verdictAtMost(r.httpOverRoute.addedMs, 0.5, ' ms')}`);
  line(`${name}: POST .../tools/call via Hono / direct SDK callTool`, r.http.ratio, `${fmtMs(r.http.ms)} vs ${fmtMs(r.directMs)} ms, ${fmtAddedMs(r.http.addedMs)} ms added ${addedRange(r.http)}, of which the HTTP hop (bare route) ${fmtAddedMs(r.route.addedMs)} (information)`);
}
line('5 webhooks: deliveries/s, worker / plain undici requests', webhooks.ratio, `${Math.round(webhooks.workerPerSecond)}/s vs ${Math.round(webhooks.plainPerSecond)}/s (information)`);
console.log(`  ${pad('5 webhooks: delivery lag, change → receiver', 67)} p50 ${fmtMs(webhooks.lagP50)} ms, p90 ${fmtMs(webhooks.lagP90)} ms (information)`);
if (storage.roundTrips !== undefined) console.log(`  ${pad('6a Redis round trips, authenticated rate-limited GET /v1/servers/{id}', 67)} ${String(storage.roundTrips).padStart(7)}  ${storage.commands} commands ${verdictAtMost(storage.roundTrips, 2)}`);
else console.log('  6a Redis round trips: skipped (no Redis)');
line('6b page 1 at 100k / at 1k servers, memory (time)', storage.memory.ratio, `${rounds(storage.memory)} ${verdictAtMost(storage.memory.ratio, 1.5, '×')}`);
if (storage.redis !== undefined) line('6b page 1 at 100k / at 1k servers, Redis (time)', storage.redis.ratio, `${rounds(storage.redis)} ${verdictAtMost(storage.redis.ratio, 1.5, '×')}`);
console.log(`  ${pad('6c RSS for 100k servers in the memory store', 67)} ${`${storage.rssMb.toFixed(0)} MB`.padStart(7)}  (information)`);
if (mcpEndpoint.skipped) {
  console.log(`  ${pad('7 MCP endpoint', 67)} skipped: /v1/mcp answers 404 (not there yet)`);
} else {
  for (const [name, r] of [
    ['7a MCP endpoint, 2025-era upstream', mcpEndpoint.legacy],
    ['7b MCP endpoint, 2026-07-28 upstream', mcpEndpoint.modern],
  ]) {
    const over = r.overRelay;
    const mark = over.addedMs <= mcpEndpoint.targetAddedMs ? 'meets target' : 'misses target';
    console.log(
      `  ${pad(`${name}: /v1/mcp callTool − bare SDK relay callTool`, 67)} median ${fmtAddedMs(over.addedMs)} ms, p99 ${fmtAddedMs(over.addedP99)} ms (${mark}: ≤ ${mcpEndpoint.targetAddedMs} ms median)`,
    );
    console.log(`  ${pad(`${name}: /v1/mcp callTool − direct callTool`, 67)} median ${fmtAddedMs(r.addedMs)} ms, p99 ${fmtAddedMs(r.addedP99)} ms (information: the extra MCP hop included)`);
  }
  console.log(`  ${pad('7c MCP endpoint: tools/list, 20 servers × 20 tools, from cache', 67)} p50 ${fmtMs(mcpEndpoint.list.ms)} ms, p99 ${fmtMs(mcpEndpoint.list.p99)} ms per list (information)`);
}
console.log(`\n  benchmark wall time (after the build): ${((Date.now() - started) / 1000).toFixed(1)} s`);
