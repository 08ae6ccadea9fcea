// Section 9d: what the trace points cost when nothing subscribes (issue 29, "free when off": ≤ 2 % on GET, POST and a
// tool call). Run by bench/telemetry.mjs in processes of its own (`node --expose-gc --min-semi-space-size=… …`,
// BENCH_OFF_PROCESSES, 2, one after the other, each with its share of the rounds), or alone after a build, in one
// process: `node --expose-gc --max-semi-space-size=2 --min-semi-space-size=2 bench/telemetry-off.mjs`.
//
// An A/B of the trace points present-but-off against absent, in-process, without sockets on the fleet's side:
//   as is    this checkout's built @mcp-fleet/core (packages/core/dist), nothing subscribed;
//   copy     the same files copied byte for byte to node_modules/.cache/mcp-fleet-bench/copy: the A/A control. Its
//            figure says what the method resolves (where the code sits, which copy was loaded first), and must
//            straddle 1.00×;
//   absent   a copy in node_modules/.cache/mcp-fleet-bench/absent with the trace points taken out
//            (`removeTracePoints`): every `…Channel.hasSubscribers` guard replaced by `false` and the branch it chose
//            folded, every store call `portCall(() => E, "port", "method")` replaced by `portCall(() => E)` (the
//            storage port's call as it was before the trace points), and `tracedOperations` and
//            `traceRequests` made to hand back what they wrap. What is left is the fleet without trace points.
//            Checked before measuring: every request answers the same status and body on all of them (ids, times
//            and request ids blanked).
// Each variant is a fleet as section 2's (limits on, 20 servers, one key), called through its fetch handler
// (`fleet.handle(new Request(…))`, the answer read to its end), one request at a time (the tool call: 2 at a time, so
// that the bench's work on one overlaps the upstream's on the other). A round runs PASSES passes; a pass
// runs a batch of each variant in an order rotated every pass and reversed every other pass, so that the variants of a
// round are milliseconds apart. The figure is the process's CPU time per request (`process.cpuUsage`: all its threads,
// the garbage collector's helpers included), which waiting for a core does not inflate. Before each batch a minor gc
// (untimed) empties the young generation, and the young generation is small and fixed (the flags above), so a batch
// pays for the scavenges its own allocation causes, not for its neighbour's. A batch is about SLICES[op] ms of the
// as-is variant's CPU, sized from the warm-up rounds (which also size the positive control's spin).
// Each process loads and builds the variants in an order rotated by its index, and the processes' rounds are pooled:
// what one process's layout and compilation give one copy by chance (the A/A control's ±1-2 % in single runs, of
// either sign) is then not always given to the same variant.
// A round's ratio is the median over its mirrored pairs of passes (stats.mjs, roundRatio, as section 2's parts).
// The figure is the median of the per-round ratios `as is / absent` (above 1: the trace points cost), with the 95 %
// interval of that median (`medianInterval`, order statistics) and the rounds' spread; the verdict reads the interval.
// Beside it: how many guards a request reads (a counting copy, `countGuards`) and what a guard read costs.
import { tracingChannel, channel } from 'node:diagnostics_channel';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { transformSync } from 'esbuild';
import { createBenchFleet, removeLoadServers } from './builds.mjs';
import { figure, fmtRatio, median, medianInterval, pad, padLeft, roundRatio, runQueueWaitMs } from './stats.mjs';

const ROUNDS = Number(process.env.BENCH_OFF_ROUNDS ?? 30);
const WARMUP_ROUNDS = Number(process.env.BENCH_OFF_WARMUP_ROUNDS ?? 2);
// Even: the passes pair up in mirror order (A B C, C B A).
const PASSES = 2 * Math.max(1, Math.round(Number(process.env.BENCH_OFF_PASSES ?? 8) / 2));
// A batch: about this much of the as-is variant's CPU. The tool call is 20 times a GET's CPU and has the most to
// decide, so it gets the longer batches, with 2 calls in flight: the bench's CPU for one call overlaps the upstream's
// answer to the other, so a batch takes about half the wall time one at a time would.
const SLICE = process.env.BENCH_OFF_SLICE_MS;
const SLICES = {
  get: Number(SLICE ?? process.env.BENCH_OFF_SLICE_GET_MS ?? 10),
  post: Number(SLICE ?? process.env.BENCH_OFF_SLICE_POST_MS ?? 20),
  toolcall: Number(SLICE ?? process.env.BENCH_OFF_SLICE_TOOLCALL_MS ?? 48),
};
const IN_FLIGHT = { get: 1, post: 1, toolcall: Number(process.env.BENCH_OFF_TOOLCALL_IN_FLIGHT ?? 2) };
const MIN_BATCH = 20;
const ONLY = process.env.BENCH_OFF_WORKLOADS?.split(',');
const WORKLOADS = [
  ['get', 'GET /v1/servers'],
  ['post', 'POST /v1/servers'],
  ['toolcall', 'POST /v1/servers/{id}/tools/call (2026-07-28 upstream)'],
].filter(([op]) => ONLY === undefined || ONLY.includes(op));
// To find which trace point costs: kinds of `removeTracePoints` left in the absent copy (`store call`,
// `tracedOperations`, `traceRequests`, or a guard kind as printed, e.g. `guard: other`; a kept wrapper's own guard is
// still folded unless its kind is kept too). All of them kept: the code as is plus a comment, an A/A of the absent slot.
const KEEP = process.env.BENCH_OFF_KEEP?.split(',') ?? [];
const LIMIT = 1.02;
// The positive control: the absent variant with 2 % of a request's CPU added (spun), to show the run can see 2 %.
const CONTROL = process.env.BENCH_OFF_CONTROL !== '0';
const SERVERS = Number(process.env.BENCH_SERVERS ?? 20);
const HIGH = 1e9;

const DIST = path.dirname(fileURLToPath(import.meta.resolve('@mcp-fleet/core')));
// The copies live under the root node_modules (ignored by git, never packed), where their imports (neverthrow, zod…)
// resolve to the same packages as the real dist's.
const COPIES = fileURLToPath(new URL('../node_modules/.cache/mcp-fleet-bench/', import.meta.url));

/** Where `text[open]` is `(`: the index of its matching `)`, skipping string and template literals (esbuild's output). */
function closingParen(text, open) {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '"' || c === "'" || c === '`') {
      for (i++; i < text.length && text[i] !== c; i++) if (text[i] === '\\') i++;
    } else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  throw new Error('unbalanced parentheses');
}

const GUARD = /\b(\w+Channel)\.hasSubscribers\b/g;

/**
 * The core's bundled code (one chunk) without its trace points. Answers `{ code, sites }` (how many of each kind were
 * taken out); `copyOfCore` throws when a kind is found in none of the chunks, so that a change of the core's code shows
 * here instead of measuring nothing.
 */
export function removeTracePoints(source, keep = KEEP) {
  let code = source;
  const sites = {};
  const replace = (kind, pattern, by) => {
    if (keep.includes(kind)) {
      sites[kind] = 'kept';
      return;
    }
    let n = 0;
    code = code.replace(pattern, (...m) => {
      n++;
      return typeof by === 'function' ? by(...m) : by;
    });
    sites[kind] = (sites[kind] ?? 0) + n;
  };
  // `portCall(() => E, "port", "method")` → `portCall(() => E)`: a storage port's call as it was before the trace
  // points (the port and method name the call on `mcp-fleet:store`; `portCall`'s own guard is folded below).
  let n = 0;
  for (let at = keep.includes('store call') ? -1 : code.indexOf('portCall('); at >= 0; at = code.indexOf('portCall(', at + 1)) {
    if (/\w/.test(code[at - 1])) continue;
    const open = at + 'portCall'.length;
    const close = closingParen(code, open);
    const inner = code.slice(open + 1, close);
    const m = /^([\s\S]*), "\w+", "\w+"$/.exec(inner);
    if (m === null) continue;
    code = `${code.slice(0, open + 1)}${m[1]}${code.slice(close)}`;
    n++;
  }
  sites['store call'] = keep.includes('store call') ? 'kept' : n;
  // The wrappers of the operations (`fleet.*`, the MCP endpoint) and of an upstream client's requests hand back what they wrap.
  replace('tracedOperations', /function tracedOperations\((\w+), (\w+)\) \{/g, (_, ops, via) => `function tracedOperations(${ops}, ${via}) {\n  return ${ops};`);
  replace('traceRequests', /function traceRequests\(([\w, ]+)\) \{/g, (_, args) => `function traceRequests(${args}) {\n  return;`);
  // The guards, folded where the branch is plain: `if (!G) return X;` → `return X;`, `if (G) S;` → nothing, `A && !G` →
  // `A`, `G && A` → `false`, `G ? A : B` → `false ? A : B` (V8 folds the constant), then any guard left → `false`.
  replace('guard: if (!G) return', /if \(!\w+Channel\.hasSubscribers\) return /g, 'return ');
  replace('guard: if (G) statement', /^(\s*)if \(\w+Channel\.hasSubscribers\) [^\n]*;$/gm, (_, indent) => `${indent};`);
  replace('guard: A && !G', / && !\w+Channel\.hasSubscribers\)/g, ')');
  replace('guard: G && A', /\bif \(\w+Channel\.hasSubscribers && \(/g, 'if (false && (');
  replace('guard: other', GUARD, 'false');
  return { code: `${code}\n// bench/telemetry-off.mjs: the absent copy (kept: ${keep.join(', ') || 'nothing'})\n`, sites };
}

/** The core's code with every guard read counted in `globalThis.__benchGuards` (by channel name). */
export function countGuards(source) {
  return source.replace(GUARD, (_, name) => `(globalThis.__benchGuards[${JSON.stringify(name)}] = (globalThis.__benchGuards[${JSON.stringify(name)}] ?? 0) + 1, ${name}.hasSubscribers)`);
}

/** A copy of the core's dist in `node_modules/.cache/mcp-fleet-bench/<name>`, its chunks passed through `transform`; answers the URL of its index.js and what the transform reported. */
function copyOfCore(name, transform) {
  const dir = path.join(COPIES, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const reports = [];
  for (const file of readdirSync(DIST)) {
    if (!file.endsWith('.js')) continue;
    const source = readFileSync(path.join(DIST, file), 'utf8');
    let code = source;
    if (transform !== undefined && GUARD.test(source)) {
      GUARD.lastIndex = 0;
      const out = transform(source);
      code = typeof out === 'string' ? out : out.code;
      if (typeof out !== 'string') reports.push(out.sites);
      if (name === 'absent' && KEEP.length === 0 && GUARD.test(code)) throw new Error(`${file}: a trace point guard is left after removeTracePoints`);
      GUARD.lastIndex = 0;
      transformSync(code, { format: 'esm', loader: 'js' }); // throws on a syntax error
    }
    writeFileSync(path.join(dir, file), code);
  }
  if (transform !== undefined && !existsSync(path.join(dir, 'index.js'))) throw new Error('no index.js in the core dist');
  // Every kind of trace point found somewhere in the core's chunks (esbuild may split the code that holds them into
  // several): a kind found nowhere means the core's code changed and this bench would measure nothing.
  const found = {};
  for (const sites of reports) for (const [kind, count] of Object.entries(sites)) found[kind] = count === 'kept' ? 'kept' : (found[kind] ?? 0) + count;
  for (const [kind, count] of Object.entries(found)) if (count === 0 && kind !== 'guard: other') throw new Error(`removeTracePoints: no ${kind} site in the core's code (bench/telemetry-off.mjs needs updating)`);
  return { url: pathToFileURL(path.join(dir, 'index.js')).href, sites: reports };
}

async function startUpstream() {
  const { fork } = await import('node:child_process');
  const proc = fork(fileURLToPath(new URL('./toolcall-server.mjs', import.meta.url)), [], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  // Should this process die before it says so, the upstream goes too.
  process.once('exit', () => proc.kill());
  const urls = await new Promise((resolve) => proc.once('message', resolve));
  return { urls, exit: () => proc.connected && proc.send({ type: 'exit' }) };
}

async function makeVariant(id, core, upstream) {
  const fleet = createBenchFleet(core, {
    allowPrivateNetworks: true,
    rateLimit: { tiers: { pro: HIGH }, operations: { 'servers.list': HIGH, 'servers.create': HIGH, 'servers.get': HIGH, 'tools.call': HIGH } },
    quotas: { serversPerAccount: 1_000_000_000 },
    onError: (error) => console.error(`[bench ${id}]`, error.code, error.cause ?? ''),
  });
  const { secret } = (await fleet.keys.create({ account: 'bench-acct', tier: 'pro' }))._unsafeUnwrap();
  for (let i = 0; i < SERVERS; i++) (await fleet.servers.create('bench-acct', { name: `server-${i}`, type: 'http', endpoint: `https://mcp-${i}.example.com/mcp` }))._unsafeUnwrap();
  const tool = (await fleet.servers.create('bench-acct', { name: 'bench-v2', type: 'http', endpoint: upstream.urls.v2 }))._unsafeUnwrap();
  const authorization = `Bearer ${secret}`;
  let created = 0;
  const send = async (method, url, body) => {
    const init = body === undefined ? { method, headers: { authorization } } : { method, headers: { authorization, 'content-type': 'application/json' }, body };
    const response = await fleet.handle(new Request(`http://bench.local${url}`, init));
    return { status: response.status, text: await response.text() };
  };
  return {
    id,
    fleet,
    ops: {
      get: () => send('GET', '/v1/servers'),
      post: () => send('POST', '/v1/servers', JSON.stringify({ name: `load-${created++}`, type: 'http', endpoint: 'https://mcp.example.com/mcp' })),
      toolcall: () => send('POST', `/v1/servers/${tool.id}/tools/call`, JSON.stringify({ name: 'ping', arguments: {} })),
    },
    expected: { get: 200, post: 201, toolcall: 200 },
    /** Removes what the POST batches created (untimed), so that every round creates into the same fleet. */
    reset: () => removeLoadServers(fleet),
  };
}

/**
 * An answer with what differs from fleet to fleet blanked: ids, times, request ids, created names, durations; a listing
 * sorted by name (servers created in the same millisecond are listed in the order of their random ids).
 */
function comparable(text) {
  const VARYING = /^(id|timestamp|request_id|created_at|updated_at|last_used_at|last_checked_at|duration_ms|response_time|call_id)$/;
  const blank = (value) => {
    if (Array.isArray(value)) return value.map(blank).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    if (value === null || typeof value !== 'object') return typeof value === 'string' ? value.replace(/^load-\d+$/, 'load-…').replace(/srv_[\w-]+/g, 'srv_…') : value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, VARYING.test(k) ? '…' : blank(v)]));
  };
  try {
    return JSON.stringify(blank(JSON.parse(text)));
  } catch {
    return text;
  }
}

/**
 * CPU µs of `n` requests of `op` to `v`, `inFlight` at a time, after a minor gc (untimed). `spinUs`: CPU to burn after
 * them, inside the timing (the positive control), measured on the process's CPU so that being descheduled does not
 * shorten it.
 */
async function batch(v, op, n, inFlight = 1, spinUs = 0) {
  globalThis.gc({ type: 'minor' });
  const expected = v.expected[op];
  let sent = 0;
  const lane = async () => {
    while (sent < n) {
      sent++;
      const { status } = await v.ops[op]();
      if (status !== expected) throw new Error(`${v.id} ${op}: status ${status}`);
    }
  };
  const cpu = process.cpuUsage();
  if (inFlight === 1) await lane();
  else await Promise.all(Array.from({ length: inFlight }, lane));
  let used = process.cpuUsage(cpu);
  const until = used.user + used.system + spinUs;
  while (used.user + used.system < until) used = process.cpuUsage(cpu);
  return used.user + used.system;
}

/** What one read of a guard costs: `hasSubscribers` of the fleet's channels (nothing subscribed), read in a loop, less the loop. */
function guardReadNs() {
  const names = ['http.request', 'operation', 'store', 'mcp.client'].map((n) => tracingChannel(`mcp-fleet:${n}`));
  const plain = ['ratelimit', 'auth', 'probe', 'webhook.delivery'].map((n) => channel(`mcp-fleet:${n}`));
  const time = (list, read) => {
    let best = Infinity;
    let sink = 0;
    for (let k = 0; k < 7; k++) {
      const start = process.cpuUsage();
      for (let i = 0; i < 2_000_000; i++) sink += read(list[i & 3]) ? 1 : 0;
      const used = process.cpuUsage(start);
      best = Math.min(best, ((used.user + used.system) * 1000) / 2_000_000);
    }
    if (sink < 0) console.log(sink);
    return best;
  };
  const loop = time(names, (c) => c === null);
  return { tracing: Math.max(0, time(names, (c) => c.hasSubscribers) - loop), plain: Math.max(0, time(plain, (c) => c.hasSubscribers) - loop) };
}

/**
 * One process's share of 9d: `part` of `parts` processes (bench/telemetry.mjs runs them one after the other), each
 * running its share of the rounds with the variants loaded and built in an order rotated by `part`. Answers the raw
 * rounds; `summarizeTraceOff` pools the processes' rounds into the figures.
 */
export async function runTraceOffBench(part = 0, parts = 1) {
  if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
  const started = Date.now();
  const absent = copyOfCore('absent', removeTracePoints);
  // The control's own copy of the absent code: sharing the absent variant's module (or its fleet) ran that code twice
  // as often as any other variant's, warmer in the caches and the JIT's feedback, which made `absent` read a few per
  // cent cheaper than the same code as is (docs/performance.md, "trace-off").
  const control = copyOfCore('absent-control', removeTracePoints);
  const copy = copyOfCore('copy');
  const counting = copyOfCore('counting', countGuards);
  globalThis.__benchGuards = {};
  const upstream = await startUpstream();
  try {
    return await measure(absent, control, copy, counting, upstream, started, part, parts);
  } finally {
    upstream.exit();
  }
}

/** The first line of 9d's output (printed by whoever runs the processes). */
export function traceOffHeading(parts) {
  return `\n== 9d. Nothing subscribed: the trace points present (as is) against absent (removed from a copy of the core), through the fleet's fetch handler, in ${parts} process${parts === 1 ? '' : 'es'} (the variants loaded in a rotated order in each); ${WARMUP_ROUNDS} warm-up + ${ROUNDS} rounds in all of ${PASSES} passes, batches of about ${Object.entries(SLICES).map(([op, ms]) => `${ms} ms (${op}${IN_FLIGHT[op] > 1 ? `, ${IN_FLIGHT[op]} in flight` : ''})`).join(', ')} of CPU; figure = CPU per request, median of per-round ratios`;
}

async function measure(absent, control, copy, counting, upstream, started, part, parts) {
  // The variants in the order this process loads and builds them: rotated by `part`, so that across the processes no
  // variant is always the first one loaded, compiled and given its heap (the A/A control's bias, if it has one).
  const loads = [
    ['as is', () => import('@mcp-fleet/core')],
    ['copy', () => import(copy.url)],
    ['absent', () => import(absent.url)],
  ];
  const rotated = loads.map((_, i) => loads[(i + part) % loads.length]);
  const built = {};
  for (const [id, load] of rotated) built[id] = await makeVariant(id, await load(), upstream);
  const variants = [built['as is'], built.copy, built.absent];
  const counter = await makeVariant('counting', await import(counting.url), upstream);
  // `absent + 2 %`: the absent code, on a copy of its own and a fleet of its own (so that the absent variant's code runs
  // as often as the others' and each variant's POSTs create into a fleet of the same size), each batch followed by a
  // spin of 2 % of the as-is variant's CPU for as many requests (set from the round before: the warm-up rounds for the
  // first). Its ratio over `absent` should read about 1.02×: the run's power to see 2 %. The spin is in the batch's
  // timing, not a wrapper around each request (a wrapper's own promise and await would add to the 2 %).
  const spin = { us: 0 };
  if (CONTROL) variants.push({ ...(await makeVariant('absent + 2 %', await import(control.url), upstream)), spun: true });
  // Nothing subscribes: every channel of the fleet is without subscribers (importing @mcp-fleet/otel and
  // @mcp-fleet/prometheus subscribes nothing; their instrument()/metrics() do, and close() undoes it).
  await import('@mcp-fleet/otel');
  await import('@mcp-fleet/prometheus');
  const { TRACE_CHANNELS } = await import('@mcp-fleet/core');
  const subscribed = Object.values(TRACE_CHANNELS).filter((n) => tracingChannel(n).hasSubscribers || channel(n).hasSubscribers);
  if (subscribed.length > 0) throw new Error(`something subscribes to ${subscribed.join(', ')}`);

  const out = { workloads: {}, sites: absent.sites[0], part, order: rotated.map(([id]) => id) };
  // The same requests, the same answers: each variant's answer to each workload, compared.
  for (const [op] of WORKLOADS) {
    const answers = [];
    for (const v of [...variants, counter]) {
      const { status, text } = await v.ops[op]();
      answers.push(`${status} ${comparable(text)}`);
    }
    const differ = answers.findIndex((a) => a !== answers[0]);
    if (differ >= 0) {
      let at = 0;
      while (answers[0][at] === answers[differ][at]) at++;
      throw new Error(`${op}: the variants answer differently, from character ${at}:\n${answers.map((a) => a.slice(Math.max(0, at - 100), at + 200)).join('\n')}`);
    }
  }
  const guard = guardReadNs();
  // This process's rounds: the ROUNDS shared out among the processes (the first ones take one more when they do not divide).
  const rounds = Math.floor(ROUNDS / parts) + (part < ROUNDS % parts ? 1 : 0);
  for (const [op, title] of WORKLOADS) {
    // Guard reads per request, from the counting copy (after its first requests).
    for (let i = 0; i < 50; i++) await counter.ops[op]();
    globalThis.__benchGuards = {};
    const COUNTED = 100;
    for (let i = 0; i < COUNTED; i++) await counter.ops[op]();
    const reads = Object.fromEntries(Object.entries(globalThis.__benchGuards).map(([k, n]) => [k, n / COUNTED]));
    if (op === 'post') await counter.reset();

    for (const v of variants) for (let i = 0; i < 200; i++) await v.ops[op]();
    // A first batch size from a short probe; it is set again after the warm-up rounds, from their as-is batches, with
    // the control's spin (a probe this soon after the first requests reads several times the CPU per request: the
    // compiler's threads are still at work, and their CPU is the process's).
    const probeN = 100;
    const probed = (await batch(variants[0], op, probeN, IN_FLIGHT[op])) / probeN;
    let n = Math.max(MIN_BATCH, Math.round((SLICES[op] * 1000) / probed));
    spin.us = 0.02 * probed;
    const perRound = Object.fromEntries(variants.map((v) => [v.id, []]));
    // Each round's batches, per variant in the order they ran, as `roundRatio` reads parts: (requests, CPU µs).
    const batches = Object.fromEntries(variants.map((v) => [v.id, []]));
    const waitStart = runQueueWaitMs();
    const wallStart = performance.now();
    for (let round = 0; round < WARMUP_ROUNDS + rounds; round++) {
      if (op === 'post') for (const v of variants) await v.reset();
      const parts = Object.fromEntries(variants.map((v) => [v.id, []]));
      for (let pass = 0; pass < PASSES; pass++) {
        const order = variants.map((_, i) => variants[(i + pass + round) % variants.length]);
        if (pass % 2 === 1) order.reverse();
        for (const v of order) parts[v.id].push({ requests: n, elapsedMs: await batch(v, op, n, IN_FLIGHT[op], v.spun ? n * spin.us : 0) });
      }
      // The as-is variant's CPU per request in this round: the control's spin in the next, and after the warm-up
      // rounds the batch size.
      const us = median(parts['as is'].map((p) => p.elapsedMs / p.requests));
      spin.us = 0.02 * us;
      if (round < WARMUP_ROUNDS) {
        if (round === WARMUP_ROUNDS - 1) n = Math.max(MIN_BATCH, Math.round((SLICES[op] * 1000) / us));
        continue;
      }
      for (const v of variants) {
        perRound[v.id].push(parts[v.id].reduce((t, p) => t + p.elapsedMs, 0) / (PASSES * n));
        batches[v.id].push(parts[v.id]);
      }
    }
    const waited = (runQueueWaitMs() - waitStart) / (performance.now() - wallStart);
    if (op === 'post') for (const v of variants) await v.reset();
    // A round's `a / b` CPU per request: the median over its mirrored pairs of passes (section 2's `roundRatio`, whose
    // req/s ratio of b over a is this CPU ratio of a over b), so that one batch hit by a major gc does not move it.
    const ratio = (a, b) => batches[a].map((ps, i) => roundRatio(batches[b][i], ps));
    out.workloads[op] = {
      title,
      batch: n,
      inFlight: IN_FLIGHT[op],
      cpuRounds: perRound,
      ab: ratio('as is', 'absent'),
      aa: ratio('as is', 'copy'),
      ...(CONTROL && { control: ratio('absent + 2 %', 'absent') }),
      reads,
      guardNs: guard,
      waited,
    };
  }
  for (const v of [...variants, counter]) await v.fleet.close();
  out.seconds = (Date.now() - started) / 1000;
  return out;
}

/**
 * The processes' rounds pooled, workload by workload: the figures, their 95 % intervals and the verdict, printed; answers
 * what bench/run.mjs summarizes (`workloads`, `sites`, `seconds`).
 */
export function summarizeTraceOff(partsOut, seconds) {
  const out = { workloads: {}, sites: partsOut[0].sites, seconds, processes: partsOut.length };
  console.log(`  taken out of the absent copy: ${Object.entries(out.sites).map(([k, n]) => `${k} ${n}`).join(', ')}`);
  console.log(`  load order per process: ${partsOut.map((p) => p.order.join(', ')).join(' | ')}`);
  for (const [op] of WORKLOADS) {
    const each = partsOut.map((p) => p.workloads[op]);
    const pooled = (key) => each.flatMap((w) => w[key]);
    const withInterval = (ratios) => ({ ...figure(ratios), interval: medianInterval(ratios) });
    const ids = Object.keys(each[0].cpuRounds);
    const first = each[0];
    const readsTotal = Object.values(first.reads).reduce((a, b) => a + b, 0);
    const result = {
      title: first.title,
      batch: each.map((w) => w.batch).join('/'),
      inFlight: first.inFlight,
      cpuUs: Object.fromEntries(ids.map((id) => [id, median(each.flatMap((w) => w.cpuRounds[id]))])),
      ab: withInterval(pooled('ab')),
      aa: withInterval(pooled('aa')),
      ...(first.control !== undefined && { control: withInterval(pooled('control')) }),
      perProcess: each.map((w) => ({ ab: median(w.ab), aa: median(w.aa) })),
      reads: first.reads,
      readsTotal,
      guardNs: first.guardNs,
      waited: each.reduce((t, w) => t + w.waited, 0) / each.length,
    };
    result.verdict = offVerdict(result.ab.interval, result.aa.interval, result.control?.interval);
    out.workloads[op] = result;
    printWorkload(result);
  }
  console.log(`\n  section 9d: ${seconds.toFixed(1)} s`);
  return out;
}

/**
 * The verdict on "≤ 2 %", from the 95 % interval of the median A/B ratio: shown when the whole interval is at most
 * 1.02×, refuted when the whole interval is above it, undecided otherwise, and undecided too when the positive control
 * (`positive`: 2 % added to the absent variant) was not told from 1.00×: a measurement that cannot see 2 % would
 * "show" anything. The A/A control's interval must contain 1.00×; when it does not, the copies differ by where they
 * sit, and the verdict says so.
 */
export function offVerdict(ab, aa, positive) {
  if (positive !== undefined && positive.low <= 1) return `undecided (the positive control, 2 % added, was not told from nothing: ${fmtRatio(positive.low)}..${fmtRatio(positive.high)})`;
  const control = aa.low <= 1 && aa.high >= 1 ? '' : ` (but the A/A control's interval ${fmtRatio(aa.low)}..${fmtRatio(aa.high)} misses 1.00×: the copies differ by more than the trace points can be told from)`;
  if (ab.high <= LIMIT) return `≤ 2 %: shown (95 % interval of the median ≤ ${LIMIT}×)${control}`;
  if (ab.low > LIMIT) return `more than 2 %: shown (95 % interval of the median > ${LIMIT}×)${control}`;
  return `undecided (the 95 % interval of the median straddles ${LIMIT}×: more rounds or a quieter machine)${control}`;
}

function printWorkload(r) {
  console.log(`\n  ${r.title} (batches of ${r.batch} requests${r.inFlight > 1 ? `, ${r.inFlight} in flight` : ''}; the bench process waited for a core ${(r.waited * 100).toFixed(1)}% of the time)`);
  console.log(`  ${pad('variant', 40)} ${padLeft('CPU µs/req', 11)}`);
  for (const [id, us] of Object.entries(r.cpuUs)) console.log(`  ${pad(id, 40)} ${padLeft(us.toFixed(2), 11)}`);
  const line = (label, f) => `  ${pad(label, 40)} ${fmtRatio(f.median)} (95 % interval ${fmtRatio(f.interval.low)}..${fmtRatio(f.interval.high)}; rounds ${fmtRatio(f.low)}..${fmtRatio(f.high)}, ±${f.spreadPct.toFixed(1)}%)`;
  console.log(line('as is / absent (the trace points, off)', r.ab));
  console.log(line('as is / copy (A/A control)', r.aa));
  if (r.perProcess.length > 1) console.log(`  ${pad('per process (A/B, A/A)', 40)} ${r.perProcess.map((p) => `${fmtRatio(p.ab)}, ${fmtRatio(p.aa)}`).join(' | ')}`);
  if (r.control !== undefined) {
    const sees = r.control.interval.low > 1 ? 'the run sees 2 %' : 'the run cannot tell 2 % from nothing: its verdict cannot be ≤ 2 % shown';
    console.log(`${line('absent + 2 % spun / absent (control)', r.control)}: ${sees}`);
  }
  const guardUs = Object.entries(r.reads).reduce((t, [name, n]) => t + n * (name === 'storeChannel' || name === 'operationChannel' || name === 'httpRequestChannel' || name === 'mcpServerChannel' || name === 'mcpClientChannel' ? r.guardNs.tracing : r.guardNs.plain), 0) / 1000;
  console.log(
    `  guards read per request: ${r.readsTotal.toFixed(1)} (${Object.entries(r.reads).map(([k, n]) => `${k.replace('Channel', '')} ${n.toFixed(1)}`).join(', ')}); a read costs ${r.guardNs.tracing.toFixed(1)} ns (TracingChannel) / ${r.guardNs.plain.toFixed(1)} ns (Channel): ${(guardUs * 1000).toFixed(0)} ns a request, ${((100 * guardUs) / r.cpuUs['as is']).toFixed(2)}% of its CPU`,
  );
  console.log(`  verdict: ${r.verdict}`);
}

// As a child of bench/telemetry.mjs (`telemetry-off.mjs <part> <parts>`): this process's rounds, sent back raw. Alone: one
// process, printed.
if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.send) {
    const result = await runTraceOffBench(Number(process.argv[2] ?? 0), Number(process.argv[3] ?? 1));
    process.send({ type: 'result', result });
  } else {
    console.log(traceOffHeading(1));
    const started = Date.now();
    summarizeTraceOff([await runTraceOffBench()], (Date.now() - started) / 1000);
  }
}
