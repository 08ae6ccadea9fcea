// Section 2: the fleet against the bare framework it is mounted in. Every variant is a server in its own process
// (bench/frameworks-server.mjs), the load comes from another (bench/http-load.mjs); with BENCH_PIN=1 the load
// generator runs on CPU 0 and the servers on CPU 1 (bench/child.mjs). Three comparisons, each a set of server processes
// measured in rounds; in a round every variant gets its time in parts, in mirrored pairs of passes (A B C C B A, the
// order turned by one from each pair of passes to the next: partOrder), so that each variant's time in the round is
// centred on the same instant, a machine that drifts within the round charges every variant alike, and every variant
// takes every place in the order within each round. The first rounds are warm-up and dropped; a gc
// runs in the load generator (shared by every variant) before every part, never in a server (frameworks-server.mjs). A figure is the median of the per-round ratios
// (a round's ratio: the median over its mirrored pairs of parts, stats.mjs roundRatio), printed with the rounds' range
// and its spread around the median, and under it the same comparison in server CPU per request:
//   GET /v1/servers via Hono     fleet-hono (limits on) / bare-hono answering the same JSON; fleet-hono / fleet-hono-off
//                                is the limits ON/OFF figure
//   GET /v1/servers via Express  fleet-express / bare-express answering the same JSON
//   POST /v1/servers via Hono    fleet-hono / bare-hono (JSON.parse, strict zod schema, name Map, 201 envelope); and,
//                                as information, fleet-hono / bare-hono-contract (the same with the key check, the
//                                count and the seven answer headers every fleet answer carries)
// With BENCH_BASELINE (bench/builds.mjs) every fleet variant also runs on the baseline build, in the same rounds, and
// each figure is printed for both builds with this/base.
// Then one CPU profile of this build's fleet-hono server under GET load, summarised (top functions by self time).
// Can run alone after a build: `node bench/frameworks.mjs`.
import { BUILD_IDS, describeBuild } from './builds.mjs';
import { cpuFor, forkChild, pinning } from './child.mjs';
import { figure, fmtInt, max, median, min, pad, padLeft, printFigures, printInformation, roundRatio } from './stats.mjs';

const ROUNDS = Number(process.env.BENCH_HTTP_ROUNDS ?? 10);
const WARMUP_ROUNDS = Number(process.env.BENCH_HTTP_WARMUP_ROUNDS ?? 1);
const SLICE_MS = Number(process.env.BENCH_HTTP_SLICE_MS ?? 1000);
// Parts of a variant's time in a round, in mirror order (2: A B C C B A; 4: A B C C B A A B C C B A). Even, so that
// every variant's time stays centred on the same instant of the round.
const PARTS = 2 * Math.max(1, Math.round(Number(process.env.BENCH_HTTP_PARTS ?? 4) / 2));
const CONNECTIONS = Number(process.env.BENCH_HTTP_CONNECTIONS ?? 16);
// A round is run again when a server under test waited for a core more than this share of it (other work on the
// machine), at most RERUNS times per comparison. Off Linux the wait is unknown and no round is run again.
const MAX_WAIT = Number(process.env.BENCH_HTTP_MAX_WAIT ?? 0.05);
const RERUNS = Number(process.env.BENCH_HTTP_RERUNS ?? Math.ceil(ROUNDS / 2));
const PROFILE_MS = Number(process.env.BENCH_PROFILE_MS ?? 2000);
const ONLY = process.env.BENCH_HTTP_ONLY?.split(',');

const key = (variant, build) => (variant.startsWith('fleet-') ? `${variant}@${build}` : variant);

export async function startServer(variant, build = 'this', args = []) {
  const proc = forkChild('./frameworks-server.mjs', [variant, build, ...args], { cpu: cpuFor('server') });
  const ready = await proc.next('ready');
  return { key: key(variant, build), variant, build, proc, ...ready };
}

export async function runFrameworksBench() {
  const started = Date.now();
  const builds = BUILD_IDS;
  console.log(
    `\n== 2. The fleet against the bare framework (a server process per variant${pinning ? ' on CPU 1' : ''}; load: ${CONNECTIONS} keep-alive connections from a child process${pinning ? ' on CPU 0' : ''}; ${WARMUP_ROUNDS} warm-up + ${ROUNDS} rounds, ${SLICE_MS / 1000} s per variant per round in ${PARTS} mirrored parts; figure = median of per-round ratios)`,
  );
  for (const b of builds) console.log(`  build ${b}: ${await describeBuild(b)}`);
  const load = forkChild('./http-load.mjs', [], { execArgv: ['--expose-gc'], cpu: cpuFor('load') });
  const wanted = [
    ...builds.flatMap((b) => [
      ['fleet-hono', b],
      ['fleet-hono-off', b],
      ['fleet-express', b],
    ]),
    ['bare-hono', 'this'],
    ['bare-hono-contract', 'this'],
    ['bare-express', 'this'],
  ];
  const [, ...servers] = await Promise.all([load.next('ready'), ...wanted.map(([v, b]) => startServer(v, b))]);
  const s = Object.fromEntries(servers.map((server) => [server.key, server]));
  const { sample } = s['fleet-hono@this'];
  if (sample.status !== 200 || !sample.rateLimitHeaders) throw new Error('unexpected sample answer from the fleet');
  for (const b of builds.slice(1)) {
    const other = s[`fleet-hono@${b}`].sample;
    if (other.status !== 200 || other.servers !== sample.servers) throw new Error(`build ${b}: unexpected sample answer from the fleet (${other.status}, ${other.servers} servers)`);
  }
  const envelope = sample.body;
  await Promise.all([s['bare-hono'], s['bare-express']].map((b) => b.proc.ask({ type: 'envelope', body: envelope }, 'envelope-set')));
  console.log(`  the fleet answers ${sample.servers} servers, ${JSON.stringify(envelope).length} bytes of JSON; the bare servers answer the same body`);

  const perBuild = (variant) => builds.map((b) => `${variant}@${b}`);
  const comparisons = [
    {
      id: 'honoGet',
      label: 'GET /v1/servers via Hono',
      method: 'GET',
      variants: [...perBuild('fleet-hono'), 'bare-hono', ...perBuild('fleet-hono-off')],
      figures: [
        { id: 'honoGet', label: 'GET /v1/servers via Hono, fleet / bare Hono, req/s', ours: 'fleet-hono', theirs: () => 'bare-hono', target: 0.9 },
        { id: 'limits', label: 'GET /v1/servers via Hono, limits ON / OFF, req/s', ours: 'fleet-hono', theirs: (b) => `fleet-hono-off@${b}`, target: 0.9 },
      ],
    },
    {
      id: 'expressGet',
      label: 'GET /v1/servers via Express',
      method: 'GET',
      variants: [...perBuild('fleet-express'), 'bare-express'],
      figures: [{ id: 'expressGet', label: 'GET /v1/servers via Express, fleet / bare Express, req/s', ours: 'fleet-express', theirs: () => 'bare-express', target: 0.9 }],
    },
    {
      id: 'honoPost',
      label: 'POST /v1/servers via Hono',
      method: 'POST',
      variants: [...perBuild('fleet-hono'), 'bare-hono', 'bare-hono-contract'],
      // Every round creates into the same small fleet: what a create costs, not what a fleet grown by the rounds
      // before costs (frameworks-server.mjs, `reset`).
      reset: true,
      figures: [
        { id: 'honoPost', label: 'POST /v1/servers via Hono, fleet / bare parse+zod+Map, req/s', ours: 'fleet-hono', theirs: () => 'bare-hono', target: 0.7 },
        // The bare create with the key check, the count and the answer headers the contract asks of every request
        // (frameworks-server.mjs, bare-hono-contract): how much of the gap is the create itself.
        { id: 'honoPostContract', info: true, label: 'POST via Hono, fleet / bare + key, count, headers, req/s', ours: 'fleet-hono', theirs: () => 'bare-hono-contract' },
      ],
    },
  ].filter((c) => ONLY === undefined || ONLY.includes(c.id));

  const out = { figures: [] };
  for (const c of comparisons) {
    const measured = await runComparison(c, { servers: s, load, builds });
    out.waited = Math.max(out.waited ?? 0, measured.waited);
    for (const entry of measured.figures) {
      out[entry.id] = entry;
      out.figures.push(entry);
    }
  }

  // Where the fleet's time goes under the Hono GET: one CPU profile of this build's server process.
  if (PROFILE_MS > 0 && (ONLY === undefined || ONLY.includes('honoGet'))) {
    out.profile = await profileUnderLoad(s['fleet-hono@this'], load, { label: 'the fleet-hono server (this build)' });
  }

  await Promise.all([load.exit(), ...servers.map((server) => server.proc.exit())]);
  out.seconds = (Date.now() - started) / 1000;
  console.log(`\n  section 2: ${out.seconds.toFixed(1)} s`);
  return out;
}

/**
 * One comparison of section 2's kind (section 8 runs its own through this too): `c` is `{ id, label, method, variants,
 * figures, reset? }` (`reset`: each server removes what the POST load created before every round), `variants` keys of `servers` (`{ key: { proc, port, secret } }`), each figure `{ id, label, ours, theirs(b),
 * target, kind?, info? }` with `ours` a variant name measured once per build (`${ours}@${build}`). Runs the warm-up and
 * measured rounds (each variant's time in mirrored parts, a round run again when a server waited for a core), prints the
 * variants' table and the figures, and answers `{ figures, results, waited }`.
 */
export async function runComparison(c, { servers: s, load, builds, path = '/v1/servers', rounds = ROUNDS, warmupRounds = WARMUP_ROUNDS, sliceMs = SLICE_MS, maxReruns = RERUNS }) {
  const slice = async (server, method, durationMs) => {
    await server.proc.ask({ type: 'mark' }, 'marked');
    const headers = server.secret ? { authorization: `Bearer ${server.secret}` } : {};
    const result = await load.ask({ type: 'run', origin: `http://127.0.0.1:${server.port}`, path, headers, connections: CONNECTIONS, durationMs, method }, 'done');
    const { cpuMs, wallMs, waitMs } = await server.proc.ask({ type: 'stop' }, 'cpu');
    if (result.non2xx + result.errors > 0) throw new Error(`${server.key} ${method}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
    return { ...result, serverCpuMs: cpuMs, serverWallMs: wallMs, serverWaitMs: waitMs };
  };
  const results = Object.fromEntries(c.variants.map((v) => [v, []]));
  // A round in which a server waited for a core more than MAX_WAIT of its time is run again, at most maxReruns times
  // per comparison: whether a round is kept depends on what else ran on the machine, never on its ratio.
  let reruns = 0;
  for (let round = 0; round < warmupRounds + rounds + reruns; round++) {
    if (c.reset) await Promise.all(c.variants.map((v) => s[v].proc.ask({ type: 'reset' }, 'reset-done')));
    const parts = {};
    for (let k = 0; k < PARTS; k++) for (const v of partOrder(c.variants, round, k)) (parts[v] ??= []).push(await slice(s[v], c.method, sliceMs / PARTS));
    if (round < warmupRounds) continue;
    const combined = c.variants.map((v) => combine(parts[v]));
    if (combined.some((r) => r.waited > MAX_WAIT) && reruns < maxReruns) {
      reruns++;
      continue;
    }
    c.variants.forEach((v, i) => results[v].push({ ...combined[i], parts: parts[v] }));
  }
  console.log(`\n  ${c.label}`);
  if (reruns > 0) {
    console.log(
      `  rounds run again: ${reruns} (a server waited for a core more than ${(MAX_WAIT * 100).toFixed(0)}% of the round)${reruns === maxReruns ? `; the limit of ${maxReruns} was reached, so disturbed rounds remain` : ''}`,
    );
  }
  console.log(
    `  ${pad('variant', 20)} ${padLeft('median req/s', 13)} ${padLeft('min..max req/s', 18)} ${padLeft('server CPU µs/req', 18)} ${padLeft('server busy', 12)} ${padLeft('waited', 7)} ${padLeft('load CPU µs/req', 16)} ${padLeft('p50 ms', 7)} ${padLeft('p99 ms', 7)}`,
  );
  for (const v of c.variants) {
    const rs = results[v];
    const rps = rs.map((r) => r.rps);
    console.log(
      `  ${pad(v, 20)} ${padLeft(fmtInt(median(rps)), 13)} ${padLeft(`${fmtInt(min(rps))}..${fmtInt(max(rps))}`, 18)} ${padLeft(median(rs.map((r) => r.cpuUsPerReq)).toFixed(1), 18)} ${padLeft(`${(median(rs.map((r) => r.busy)) * 100).toFixed(0)}%`, 12)} ${padLeft(fmtWaited(rs), 7)} ${padLeft(median(rs.map((r) => r.loadUsPerReq)).toFixed(1), 16)} ${padLeft(median(rs.map((r) => r.p50Ms)).toFixed(2), 7)} ${padLeft(median(rs.map((r) => r.p99Ms)).toFixed(2), 7)}`,
    );
  }
  const disturbed = c.variants.filter((v) => max(results[v].map((r) => r.waited)) > MAX_WAIT);
  if (disturbed.length > 0) {
    console.log(`  note: in kept rounds the server of ${disturbed.join(', ')} waited more than ${(MAX_WAIT * 100).toFixed(0)}% of the time for a core (column \`waited\`, the worst round): other work was running, and those rounds' ratios carry it`);
  }
  const waited = Math.max(0, ...c.variants.flatMap((v) => results[v].map((r) => r.waited)));
  const idle = c.variants.filter((v) => median(results[v].map((r) => r.busy)) < 0.9);
  if (idle.length > 0) {
    console.log(
      `  note: ${idle.join(', ')} used less than 90% of a core: the server was not the bottleneck (other work took the cores, or the client set the pace), so the req/s ratios below are not the servers' own; the CPU lines are the steadier reading`,
    );
  }
  // A round's ratio: the median over its mirrored pairs of parts (stats.mjs, roundRatio).
  const ratios = (a, b) => results[a].map((r, i) => roundRatio(r.parts, results[b][i].parts));
  const cpuRatios = (a, b) => results[a].map((r, i) => results[b][i].cpuUsPerReq / r.cpuUsPerReq);
  const figures = [];
  for (const f of c.figures) {
    const entry = { id: f.id, section: f.section ?? 2, label: f.info ? f.label : `${f.section ?? 2} ${f.label}`, kind: 'ratio', target: f.target, info: f.info === true, builds: {} };
    // An information figure is this build's only.
    const figureBuilds = f.info ? ['this'] : builds;
    const perRound = Object.fromEntries(figureBuilds.map((b) => [b, ratios(`${f.ours}@${b}`, f.theirs(b))]));
    for (const b of figureBuilds) entry.builds[b] = figure(perRound[b]);
    // The CPU view of the same comparison (theirs' CPU per request / ours), printed under it (stats.mjs, printFigures).
    const cpuPerRound = Object.fromEntries(figureBuilds.map((b) => [b, cpuRatios(`${f.ours}@${b}`, f.theirs(b))]));
    entry.cpuBuilds = Object.fromEntries(figureBuilds.map((b) => [b, figure(cpuPerRound[b])]));
    entry.cpu = entry.cpuBuilds.this;
    // this / base of the figure itself, round by round; against the same bare server it is the fleets' req/s ratio.
    if (figureBuilds.includes('base')) {
      entry.ab = { what: 'the figure, round by round', figure: figure(perRound.this.map((r, i) => r / perRound.base[i])) };
      entry.cpuAb = figure(cpuPerRound.this.map((r, i) => r / cpuPerRound.base[i]));
    }
    figures.push(entry);
  }
  printFigures(figures.filter((e) => !e.info), '  ');
  printInformation(figures.filter((x) => x.info), '  ');
  return { figures, results, waited };
}

/**
 * The order of the variants in pass `k` of a round: passes go two by two, the second the mirror of the first (A B C
 * C B A), so that each variant's two parts of a pair are centred on the same instant as every other variant's. The
 * order turns by one from one pair of passes to the next (A B C C B A, B C A A C B, C A B B A C, …), and the round
 * starts where the round before it left off, reversed every other round. Every variant thus takes every place in the
 * order within a round, not in one place for the whole round: a place costs or gains alike for all (the middle ones
 * always follow another server's part on the same core, an end one runs twice in a row at the mirror), and with the
 * place fixed for a round that went into the round's ratio and moved from round to round.
 */
export function partOrder(variants, round, k) {
  const n = variants.length;
  const turn = round * Math.ceil(PARTS / 2) + Math.floor(k / 2);
  const order = variants.map((_, i) => variants[(i + turn) % n]);
  if (round % 2 === 1) order.reverse();
  return k % 2 === 0 ? order : order.reverse();
}

/** A variant's figures in one round: its parts summed. */
function combine(list) {
  const sum = (field) => list.reduce((total, part) => total + part[field], 0);
  const requests = sum('requests');
  return {
    rps: (requests * 1000) / sum('elapsedMs'),
    cpuUsPerReq: (sum('serverCpuMs') * 1000) / Math.max(1, requests),
    loadUsPerReq: (sum('cpuMs') * 1000) / Math.max(1, requests),
    busy: sum('serverCpuMs') / sum('serverWallMs'),
    // Share of the time the server's thread was runnable but waited for a core: other work on the machine.
    waited: sum('serverWaitMs') / sum('serverWallMs'),
    p50Ms: median(list.map((part) => part.p50Ms)),
    p99Ms: max(list.map((part) => part.p99Ms)),
  };
}

/** One CPU profile of `server` under `ms` of `method` load on `path`: `{ top, packages }`, also printed. */
export async function profileUnderLoad(server, load, { method = 'GET', path = '/v1/servers', ms = PROFILE_MS, label }) {
  await server.proc.ask({ type: 'profile-start' }, 'profiling');
  await load.ask({ type: 'run', origin: `http://127.0.0.1:${server.port}`, path, headers: server.secret ? { authorization: `Bearer ${server.secret}` } : {}, connections: CONNECTIONS, durationMs: ms, method }, 'done');
  const profile = await server.proc.ask({ type: 'profile-stop' }, 'profile');
  console.log(`\n  CPU profile of ${label} under ${method} ${path} (${ms / 1000} s, self time, top functions):`);
  for (const f of profile.top) console.log(`  ${padLeft(f.selfPct.toFixed(1), 5)}%  ${pad(f.name, 34)} ${f.where}`);
  console.log(`  by package: ${profile.packages.map((p) => `${p.group} ${p.pct.toFixed(0)}%`).join(', ')}`);
  return profile;
}

/** The largest share of a round the server waited for a core, e.g. `12%` (`n/a` off Linux). */
const fmtWaited = (rs) => {
  const worst = max(rs.map((r) => r.waited));
  return Number.isNaN(worst) ? 'n/a' : `${(worst * 100).toFixed(0)}%`;
};

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runFrameworksBench();
  if (process.send) process.send({ type: 'result', result });
}
