// `npm run bench`: builds first (see package.json), then runs each section in its own node process and prints a
// summary of the ratios. Every figure is a ratio against a baseline measured in this same run, never a number to
// compare across runs or machines. See bench/README.md.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fmtAddedMs, fmtMs, fmtRatio, pad, verdict } from './stats.mjs';

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
const http = await section('./http.mjs');
const probe = await section('./probe.mjs', ['--expose-gc']);
const toolCalls = await section('./toolcall.mjs', ['--expose-gc']);
const webhooks = await section('./webhooks.mjs');
const mcpEndpoint = await section('./mcp-endpoint.mjs', ['--expose-gc']);

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
line('2 GET /v1/servers req/s, limits ON / OFF', http.ratio, verdict(http.ratio, 0.9));
line('2 server CPU per request, OFF / ON', http.cpuRatio, '(information)');
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
  line(`${name}: fleet.tools.call / direct SDK callTool`, r.fleet.ratio, `${fmtMs(r.fleet.ms)} vs ${fmtMs(r.directMs)} ms, ${fmtAddedMs(r.fleet.addedMs)} ms (information)`);
  line(`${name}: POST .../tools/call via Hono / direct SDK callTool`, r.http.ratio, `${fmtMs(r.http.ms)} vs ${fmtMs(r.directMs)} ms, ${fmtAddedMs(r.http.addedMs)} ms (information)`);
}
line('5 webhooks: deliveries/s, worker / plain undici requests', webhooks.ratio, `${Math.round(webhooks.workerPerSecond)}/s vs ${Math.round(webhooks.plainPerSecond)}/s (information)`);
console.log(`  ${pad('5 webhooks: delivery lag, change → receiver', 67)} p50 ${fmtMs(webhooks.lagP50)} ms, p90 ${fmtMs(webhooks.lagP90)} ms (information)`);
if (mcpEndpoint.skipped) {
  console.log(`  ${pad('6 MCP endpoint', 67)} skipped: /v1/mcp answers 404 (not there yet)`);
} else {
  for (const [name, r] of [
    ['6a MCP endpoint, 2025-era upstream', mcpEndpoint.legacy],
    ['6b MCP endpoint, 2026-07-28 upstream', mcpEndpoint.modern],
  ]) {
    const mark = r.addedMs <= mcpEndpoint.targetAddedMs ? 'meets' : 'MISSES';
    console.log(
      `  ${pad(`${name}: /v1/mcp callTool − direct callTool`, 67)} median ${fmtAddedMs(r.addedMs)} ms, p99 ${fmtAddedMs(r.addedP99)} ms (${mark} target ≤ ${mcpEndpoint.targetAddedMs} ms median)`,
    );
  }
  console.log(`  ${pad('6c MCP endpoint: tools/list, 20 servers × 20 tools, from cache', 67)} p50 ${fmtMs(mcpEndpoint.list.ms)} ms, p99 ${fmtMs(mcpEndpoint.list.p99)} ms per list (information)`);
}
console.log(`\n  benchmark wall time (after the build): ${((Date.now() - started) / 1000).toFixed(1)} s`);
