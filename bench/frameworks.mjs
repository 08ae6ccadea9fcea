// Section 2: the fleet against the bare framework it is mounted in, each in its own server process, load from a
// child process (bench/http-load.mjs). Three comparisons, each a pair of server processes measured alternately round
// after round (ratio = median of the per-round ratios):
//   GET /v1/servers via Hono     fleet-hono (limits on) vs bare-hono answering the same JSON; fleet-hono-off rides along
//                                for the old limits ON/OFF figure
//   GET /v1/servers via Express  fleet-express vs bare-express answering the same JSON
//   POST /v1/servers via Hono    fleet-hono vs bare-hono (JSON.parse, strict zod schema, name Map, 201 envelope)
// Then one CPU profile of the fleet-hono server under GET load, summarised (top functions by self time).
// Can run alone after a build: `node bench/frameworks.mjs`.
import { forkChild } from './child.mjs';
import { fmtInt, fmtRatio, max, median, min, pad, padLeft, verdict } from './stats.mjs';

const ROUNDS = Number(process.env.BENCH_HTTP_ROUNDS ?? 5);
const DURATION_MS = Number(process.env.BENCH_HTTP_DURATION_MS ?? 1500);
const WARMUP_MS = Number(process.env.BENCH_HTTP_WARMUP_MS ?? 1000);
const CONNECTIONS = Number(process.env.BENCH_HTTP_CONNECTIONS ?? 32);
const PROFILE_MS = Number(process.env.BENCH_PROFILE_MS ?? 2000);

async function startServer(variant) {
  const proc = forkChild('./frameworks-server.mjs', [variant]);
  const ready = await proc.next('ready');
  return { variant, proc, ...ready };
}

export async function runFrameworksBench() {
  const started = Date.now();
  console.log(
    `\n== 2. The fleet against the bare framework (separate server processes; load: undici Pool, ${CONNECTIONS} keep-alive connections, in a child process; ${ROUNDS} rounds × ${DURATION_MS / 1000} s per variant, order alternated; ratio = median of per-round ratios)`,
  );
  const load = forkChild('./http-load.mjs', []);
  const names = ['fleet-hono', 'fleet-hono-off', 'bare-hono', 'fleet-express', 'bare-express'];
  const [, ...servers] = await Promise.all([load.next('ready'), ...names.map(startServer)]);
  const s = Object.fromEntries(servers.map((server) => [server.variant, server]));
  const { sample } = s['fleet-hono'];
  if (sample.status !== 200 || !sample.rateLimitHeaders) throw new Error('unexpected sample answer from the fleet');
  const envelope = sample.body;
  await Promise.all([s['bare-hono'], s['bare-express']].map((b) => b.proc.ask({ type: 'envelope', body: envelope }, 'envelope-set')));
  console.log(`  the fleet answers ${sample.servers} servers, ${JSON.stringify(envelope).length} bytes of JSON; the bare servers answer the same body`);

  const measure = async (server, method, durationMs) => {
    await server.proc.ask({ type: 'mark' }, 'marked');
    const headers = server.secret ? { authorization: `Bearer ${server.secret}` } : {};
    const result = await load.ask({ type: 'run', origin: `http://127.0.0.1:${server.port}`, path: '/v1/servers', headers, connections: CONNECTIONS, durationMs, method }, 'done');
    const { cpuMs, wallMs } = await server.proc.ask({ type: 'stop' }, 'cpu');
    if (result.non2xx + result.errors > 0) throw new Error(`${server.variant} ${method}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
    return { rps: (result.requests * 1000) / result.elapsedMs, cpuUsPerReq: (cpuMs * 1000) / Math.max(1, result.requests), busy: cpuMs / wallMs, ...result };
  };

  const comparisons = [
    { id: 'honoGet', label: 'GET /v1/servers via Hono', method: 'GET', ours: 'fleet-hono', theirs: 'bare-hono', extra: ['fleet-hono-off'], target: 0.8 },
    { id: 'expressGet', label: 'GET /v1/servers via Express', method: 'GET', ours: 'fleet-express', theirs: 'bare-express', extra: [], target: 0.8 },
    { id: 'honoPost', label: 'POST /v1/servers via Hono', method: 'POST', ours: 'fleet-hono', theirs: 'bare-hono', extra: [], target: 0.6 },
  ];
  const out = {};
  for (const c of comparisons) {
    const variants = [c.ours, c.theirs, ...c.extra];
    for (const v of variants) await measure(s[v], c.method, WARMUP_MS);
    const results = Object.fromEntries(variants.map((v) => [v, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const order = variants.map((_, i) => variants[(i + round) % variants.length]);
      if (round % 2 === 1) order.reverse();
      for (const v of order) results[v].push(await measure(s[v], c.method, DURATION_MS));
    }
    console.log(`\n  ${c.label}`);
    console.log(`  ${pad('variant', 16)} ${padLeft('median req/s', 13)} ${padLeft('min..max req/s', 18)} ${padLeft('server CPU µs/req', 18)} ${padLeft('server busy', 12)} ${padLeft('p50 ms', 7)} ${padLeft('p99 ms', 7)}`);
    for (const v of variants) {
      const rs = results[v];
      const rps = rs.map((r) => r.rps);
      console.log(
        `  ${pad(v, 16)} ${padLeft(fmtInt(median(rps)), 13)} ${padLeft(`${fmtInt(min(rps))}..${fmtInt(max(rps))}`, 18)} ${padLeft(median(rs.map((r) => r.cpuUsPerReq)).toFixed(1), 18)} ${padLeft(`${(median(rs.map((r) => r.busy)) * 100).toFixed(0)}%`, 12)} ${padLeft(median(rs.map((r) => r.p50Ms)).toFixed(2), 7)} ${padLeft(median(rs.map((r) => r.p99Ms)).toFixed(2), 7)}`,
      );
    }
    const ratios = results[c.ours].map((r, i) => r.rps / results[c.theirs][i].rps);
    const cpuRatios = results[c.ours].map((r, i) => results[c.theirs][i].cpuUsPerReq / r.cpuUsPerReq);
    const entry = { ratio: median(ratios), low: min(ratios), high: max(ratios), cpuRatio: median(cpuRatios), cpuLow: min(cpuRatios), cpuHigh: max(cpuRatios), target: c.target };
    console.log(`  ratio fleet / bare req/s:               ${padLeft(fmtRatio(entry.ratio), 7)}  (rounds ${fmtRatio(entry.low)}..${fmtRatio(entry.high)})  ${verdict(entry.ratio, c.target)}`);
    console.log(`  ratio bare / fleet server CPU per req:  ${padLeft(fmtRatio(entry.cpuRatio), 7)}  (rounds ${fmtRatio(entry.cpuLow)}..${fmtRatio(entry.cpuHigh)})  (information)`);
    if (c.extra.includes('fleet-hono-off')) {
      const onOff = results['fleet-hono'].map((r, i) => r.rps / results['fleet-hono-off'][i].rps);
      out.limits = { ratio: median(onOff), low: min(onOff), high: max(onOff) };
      console.log(`  ratio limits ON / OFF req/s:            ${padLeft(fmtRatio(out.limits.ratio), 7)}  (rounds ${fmtRatio(out.limits.low)}..${fmtRatio(out.limits.high)})  ${verdict(out.limits.ratio, 0.9)}`);
    }
    out[c.id] = entry;
  }

  // Where the fleet's time goes under the Hono GET: one CPU profile of its server process.
  await s['fleet-hono'].proc.ask({ type: 'profile-start' }, 'profiling');
  await load.ask({ type: 'run', origin: `http://127.0.0.1:${s['fleet-hono'].port}`, path: '/v1/servers', headers: { authorization: `Bearer ${s['fleet-hono'].secret}` }, connections: CONNECTIONS, durationMs: PROFILE_MS, method: 'GET' }, 'done');
  const profile = await s['fleet-hono'].proc.ask({ type: 'profile-stop' }, 'profile');
  console.log(`\n  CPU profile of the fleet-hono server under GET /v1/servers (${PROFILE_MS / 1000} s, self time, top functions):`);
  for (const f of profile.top) console.log(`  ${padLeft(f.selfPct.toFixed(1), 5)}%  ${pad(f.name, 34)} ${f.where}`);
  console.log(`  by package: ${profile.packages.map((p) => `${p.group} ${p.pct.toFixed(0)}%`).join(', ')}`);
  out.profile = profile;

  await Promise.all([load.exit(), ...servers.map((server) => server.proc.exit())]);
  out.seconds = (Date.now() - started) / 1000;
  console.log(`\n  section 2: ${out.seconds.toFixed(1)} s`);
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runFrameworksBench();
  if (process.send) process.send({ type: 'result', result });
}
