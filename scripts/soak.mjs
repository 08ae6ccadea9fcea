// The soak test of issue 33's crash and flood scenarios (docs/mcp-endpoint.md, "Bounds"), against the built reference
// server over real HTTP, with hostile upstream MCP servers in a process of their own (scripts/soak-upstream.mjs):
//   (a) crash: tenant A creates a server whose tools/list pages 20 × ~3.9 MB, lists it through
//       GET /v1/servers/{id}/tools and through /v1/mcp tools/list, deletes it; SOAK_CYCLES times (default 10).
//   (b) flood: tenant E's upstream sends notifications/tools/list_changed as fast as it can for SOAK_FLOOD_MS
//       (default 20000) while tenant D holds SOAK_SESSIONS 2025 sessions (default 100) with their GET streams open.
// All along, tenant B (one small server, no sessions) times GET /v1/servers and /v1/mcp tools/list. Prints the
// server's RSS (and peak) before and after each scenario, B's latencies (p50/p99) before, during and after, what
// D's sessions heard (nothing is right) and how often the flooding upstream was re-listed.
// `npm run soak` (builds when stale). Bounded: the whole run is stopped after SOAK_DEADLINE_MS (default 180000).
// Exits non-zero when the reference server dies, a scenario misbehaves, or the deadline passes. Not part of `npm test`.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { forkChild } from '../bench/child.mjs';

const CYCLES = Number(process.env.SOAK_CYCLES ?? 10);
const FLOOD_MS = Number(process.env.SOAK_FLOOD_MS ?? 20_000);
const SESSIONS = Number(process.env.SOAK_SESSIONS ?? 100);
const DEADLINE_MS = Number(process.env.SOAK_DEADLINE_MS ?? 180_000);
const REFERENCE_SERVER = fileURLToPath(new URL('../examples/reference-server/dist/main.js', import.meta.url));

const KEYS = { a: 'soak-tenant-a-secret-0123456789abcdef', b: 'soak-tenant-b-secret-0123456789abcdef', d: 'soak-tenant-d-secret-0123456789abcdef', e: 'soak-tenant-e-secret-0123456789abcdef' };
const MIB = 1024 * 1024;
const failures = [];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------------------------
// The reference server, as `npm start` runs it: memory:// store, four tenants' keys, rate limits off (the soak sends
// more than a tier allows a minute; the limits are not what is measured).
const upstream = forkChild('../scripts/soak-upstream.mjs');
const { origin: upstreamOrigin } = await upstream.next('ready');
const server = spawn(process.execPath, [REFERENCE_SERVER], {
  cwd: mkdtempSync(join(tmpdir(), 'mcp-fleet-soak-')),
  env: {
    PATH: process.env.PATH,
    PORT: '0',
    MCP_FLEET_STORE: 'memory://',
    MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1',
    MCP_FLEET_RATE_LIMITS: 'off',
    MCP_FLEET_API_KEYS: Object.entries(KEYS)
      .map(([tenant, secret]) => `tenant-${tenant}:pro:${secret}`)
      .join(','),
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let stderr = '';
server.stderr.on('data', (chunk) => (stderr = (stderr + chunk).slice(-4000)));
let died;
const exited = new Promise((resolve) => server.once('exit', (code, signal) => resolve((died = { code, signal }))));
const base = await new Promise((resolve, reject) => {
  let out = '';
  server.stdout.on('data', (chunk) => {
    out += chunk;
    const found = /mcp-fleet listening on (http:\/\/\S+\/v1)/.exec(out);
    if (found) resolve(found[1]);
  });
  exited.then(() => reject(new Error(`the reference server exited at start: ${stderr}`)));
});

const deadline = setTimeout(() => {
  console.error(`soak: stopped at the deadline (${DEADLINE_MS} ms, SOAK_DEADLINE_MS), in the ${phase} phase`);
  report();
  server.kill('SIGKILL');
  process.exit(2);
}, DEADLINE_MS);

// ---------------------------------------------------------------------------------------------------------------
const proc = (field) => {
  const line = readFileSync(`/proc/${server.pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`));
  return line === undefined ? NaN : Number(line.split(/\s+/)[1]) / 1024;
};
const rss = () => (died ? NaN : proc('VmRSS'));
const peak = () => (died ? NaN : proc('VmHWM'));
/** CPU seconds the server has used (user + system). */
const cpu = () => {
  if (died) return NaN;
  const fields = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

const rest = async (tenant, method, path, body) => {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEYS[tenant]}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await response.text();
  return { status: response.status, bytes: Buffer.byteLength(text), json: () => JSON.parse(text) };
};

async function modernClient(tenant) {
  const client = new V2Client({ name: `soak-${tenant}`, version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new V2Transport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${KEYS[tenant]}` } } }));
  return client;
}

async function session(tenant, onChanged) {
  const client = new V1Client({ name: `soak-${tenant}`, version: '1.0.0' });
  client.setNotificationHandler(ToolListChangedNotificationSchema, onChanged);
  const transport = new V1Transport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${KEYS[tenant]}` } } });
  await client.connect(transport);
  return { client, transport };
}

// ---------------------------------------------------------------------------------------------------------------
// Tenant B, the bystander: one small server; its two requests timed one after the other, all run long.
const created = await rest('b', 'POST', '/servers', { name: 'bystander', type: 'http', endpoint: `${upstreamOrigin}/small/mcp` });
if (created.status !== 201) throw new Error(`tenant B's server was not created: ${created.status}`);
const bClient = await modernClient('b');
const samples = {};
let phase = 'before';
let sampling = true;
const sampler = (async () => {
  while (sampling && !died) {
    const bucket = (samples[phase] ??= { servers: [], tools: [] });
    let started = performance.now();
    try {
      const listed = await rest('b', 'GET', '/servers');
      if (listed.status === 200) bucket.servers.push(performance.now() - started);
      started = performance.now();
      const { tools } = await bClient.listTools(undefined, { cacheMode: 'bypass', timeout: 30_000 });
      if (tools.length === 3) bucket.tools.push(performance.now() - started);
      else failures.push(`tenant B's tools/list had ${tools.length} tools, not 3`);
    } catch (error) {
      if (!died) failures.push(`tenant B's request failed: ${error.message}`);
    }
    await sleep(50);
  }
})();
const quantile = (values, q) => (values.length === 0 ? NaN : [...values].sort((x, y) => x - y)[Math.min(values.length - 1, Math.floor(q * values.length))]);
const fmt = (ms) => (Number.isNaN(ms) ? '-' : ms < 10 ? ms.toFixed(1) : ms.toFixed(0));
const mb = (value) => (value === undefined ? '-' : Number.isNaN(value) ? 'dead' : `${value.toFixed(0)} MB`);

const figures = { rss: { start: rss() } };
const crash = {};
const flood = {};

/** B's latencies per phase and the RSS figures gathered so far (also when the deadline stops the run). */
function report() {
  console.log('');
  console.log("tenant B's latency (ms)          GET /v1/servers p50 / p99     /v1/mcp tools/list p50 / p99   samples");
  for (const name of ['before', 'crash', 'flood', 'after']) {
    const bucket = samples[name] ?? { servers: [], tools: [] };
    console.log(
      `  ${name.padEnd(30)} ${`${fmt(quantile(bucket.servers, 0.5))} / ${fmt(quantile(bucket.servers, 0.99))}`.padEnd(29)} ${`${fmt(quantile(bucket.tools, 0.5))} / ${fmt(quantile(bucket.tools, 0.99))}`.padEnd(30)} ${bucket.servers.length}`,
    );
  }
  console.log('');
  console.log(`RSS: start ${mb(figures.rss.start)}; crash scenario ${mb(crash.rssBefore)} → ${mb(crash.rssAfter)} (peak so far ${mb(crash.peak)});`);
  console.log(`     flood scenario ${mb(flood.rssBefore)} → ${mb(flood.rssAfter)} (peak so far ${mb(flood.peak)}); end ${mb(figures.rss.end)}, peak ${mb(peak())}`);
}
console.log(`soak: reference server pid ${server.pid} at ${base}; upstreams at ${upstreamOrigin}`);
console.log(`soak: RSS at start ${mb(figures.rss.start)}`);
await sleep(4000);

// ---------------------------------------------------------------------------------------------------------------
// (a) The crash scenario.
phase = 'crash';
const aClient = await modernClient('a');
Object.assign(crash, { cycles: [], rssBefore: rss() });
for (let i = 0; i < CYCLES && !died; i++) {
  try {
    const made = await rest('a', 'POST', '/servers', { name: `big-${i}`, type: 'http', endpoint: `${upstreamOrigin}/big/mcp`, timeout: 60_000 });
    const { id } = made.json().data;
    const listed = await rest('a', 'GET', `/servers/${id}/tools`);
    const started = performance.now();
    const aggregate = await aClient.listTools(undefined, { cacheMode: 'bypass', timeout: 60_000 });
    const mcpMs = performance.now() - started;
    const deleted = await rest('a', 'DELETE', `/servers/${id}`);
    const cycle = { rest: listed.status, restBytes: listed.bytes, mcpTools: aggregate.tools.length, mcpBytes: Buffer.byteLength(JSON.stringify(aggregate)), mcpMs, deleted: deleted.status, rss: rss() };
    crash.cycles.push(cycle);
    console.log(
      `soak: crash cycle ${i + 1}/${CYCLES}: GET /servers/{id}/tools ${cycle.rest} (${(cycle.restBytes / MIB).toFixed(2)} MiB), /mcp tools/list ${cycle.mcpTools} tools (${(cycle.mcpBytes / MIB).toFixed(2)} MiB, ${fmt(mcpMs)} ms), DELETE ${cycle.deleted}; RSS ${mb(cycle.rss)}`,
    );
    if (cycle.rest !== 502) failures.push(`crash cycle ${i + 1}: GET /servers/{id}/tools answered ${cycle.rest}, not 502 UPSTREAM_RESPONSE_TOO_LARGE`);
  } catch (error) {
    if (!died) failures.push(`crash cycle ${i + 1} failed: ${error.message}`);
    break;
  }
}
await aClient.close().catch(() => {});
crash.rssAfter = rss();
crash.peak = peak();

// ---------------------------------------------------------------------------------------------------------------
// (b) The flood scenario.
phase = 'between';
await sleep(2000);
flood.rssBefore = rss();
let heardByD = 0;
let heardByE = 0;
const held = [];
if (!died) {
  await rest('e', 'POST', '/servers', { name: 'noisy', type: 'http', endpoint: `${upstreamOrigin}/flood/mcp` });
  await rest('d', 'POST', '/servers', { name: 'quiet', type: 'http', endpoint: `${upstreamOrigin}/small/mcp` });
  const e = await session('e', () => (heardByE += 1));
  held.push(e);
  await e.client.listTools();
  for (let i = 0; i < SESSIONS; i++) held.push(await session('d', () => (heardByD += 1)));
  // Let every GET stream open (the fleet's to the upstream, the sessions' to the fleet) before the flood.
  await sleep(1000);
  const before = await upstream.ask({ type: 'stats' }, 'stats');
  const cpuBefore = cpu();
  phase = 'flood';
  const { sent } = await upstream.ask({ type: 'flood', ms: FLOOD_MS }, 'flooded');
  flood.sent = sent;
  flood.cpuSeconds = cpu() - cpuBefore;
  await sleep(2000);
  const after = await upstream.ask({ type: 'stats' }, 'stats');
  flood.relists = after.toolsLists.flood - before.toolsLists.flood;
  flood.heardByD = heardByD;
  flood.heardByE = heardByE;
  flood.rssAfter = rss();
  flood.peak = peak();
  console.log(
    `soak: flood: ${sent} notifications/tools/list_changed in ${FLOOD_MS} ms; upstream re-listed ${flood.relists} times; tenant E's session heard ${heardByE}, tenant D's ${SESSIONS} sessions heard ${heardByD}; fleet CPU ${flood.cpuSeconds.toFixed(1)} s; RSS ${mb(flood.rssAfter)}`,
  );
  if (heardByD !== 0) failures.push(`tenant D's sessions heard ${heardByD} notifications of tenant E's upstream`);
  if (heardByE === 0) failures.push("tenant E's session heard none of its upstream's changes");
  await Promise.all(held.map(({ client, transport }) => transport.terminateSession().then(() => client.close()).catch(() => {})));
}

// ---------------------------------------------------------------------------------------------------------------
phase = 'after';
await sleep(5000);
sampling = false;
await sampler;
await bClient.close().catch(() => {});
figures.rss.end = rss();
report();
if (died) failures.push(`the reference server died (code ${died.code}, signal ${died.signal}): ${stderr.split('\n').slice(-5).join(' | ')}`);

clearTimeout(deadline);
server.kill('SIGTERM');
await exited;
await upstream.exit();
if (failures.length > 0) {
  console.log('');
  for (const failure of [...new Set(failures)].slice(0, 20)) console.log(`FAILED: ${failure}`);
  process.exit(1);
}
console.log('soak: passed');
