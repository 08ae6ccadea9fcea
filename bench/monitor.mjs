// Section 10 (issue 31): SERVERS registered servers under the background health monitor at its 60 s default, against
// answering upstreams. Prints the fleet process's CPU share (its CPU time over the wall time), the probes of each
// round, each round's start against the period (the gap from the round before, against the jitter's bounds) and its
// duration against the period, and a verdict: "no probe round late" when every round probed every server and ended
// before the next could start.
//
// Upstreams: bench/toolcall-server.mjs in a child process (the 2025-era v1 SDK server and the 2026-07-28 v2 SDK
// server, each answering on any path): server i is registered at `<v1 or v2>/s<i>` (alternating), so every registered
// server is its own endpoint and the monitor probes each with its own exchange (2025: initialize, initialized, ping,
// DELETE of the session; 2026-07-28: one server/discover). The servers are spread over ACCOUNTS accounts (the monitor
// gives one account at most half its lanes), registered through a first fleet with no monitor; the fleet under test
// is then made over the same memory store with `monitor: true` (every monitor option at its default) unless
// BENCH_MONITOR_INTERVAL_MS says otherwise, so registering is not in its figures.
//
// How the rounds are seen, without touching the monitor: its leases (`store.leases.consume`, one counter
// `monitor:<server id>:<interval window>` per server and round) go through a wrapper that notes when each was asked and
// answered, a wrapper of its index sees each round's first read of every server (`servers-all` from offset 0), and
// the probes' ends come from the fleet's `mcp-fleet:probe` trace point. A round starts at that read; its leases are
// those of its interval window, and it ends at its last probe's end.
//
// Run of record: `BENCH_ONLY=monitor-record npm run bench` (10,000 servers, 60 s, 2 rounds: about 3 minutes). The
// default `npm run bench` runs `monitor`: 1,000 servers at a 6 s interval, 3 rounds: the same probes per second
// (10,000 / 60 s = 1,000 / 6 s = 167/s), so the same load on the fleet, in about 25 s. Alone:
// `BENCH_MONITOR_SERVERS=10000 BENCH_MONITOR_INTERVAL_MS=60000 node --expose-gc bench/monitor.mjs`.
import { fork } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createFleet, createMemoryStore } from '@mcp-fleet/core';
import { fmtInt, median, pad, quantile } from './stats.mjs';

const SERVERS = Number(process.env.BENCH_MONITOR_SERVERS ?? 10_000);
const INTERVAL_MS = Number(process.env.BENCH_MONITOR_INTERVAL_MS ?? 60_000);
const ROUNDS = Number(process.env.BENCH_MONITOR_ROUNDS ?? 2);
const ACCOUNTS = Number(process.env.BENCH_MONITOR_ACCOUNTS ?? 100);
/** The monitor's `concurrency` (its lanes); unset: its default (4). */
const CONCURRENCY = process.env.BENCH_MONITOR_CONCURRENCY === undefined ? undefined : Number(process.env.BENCH_MONITOR_CONCURRENCY);
/**
 * The monitor's defaults (packages/core/src/health/monitor.ts), for the bounds printed: each round runs in an interval
 * window of its own, up to JITTER of the interval after the window opens, so two rounds are INTERVAL_MS ± JITTER apart.
 */
const DEFAULT_INTERVAL_MS = 60_000;
const JITTER = 0.1;
/** A timer may fire this late on a busy machine before its round counts as started late. */
const START_SLACK_MS = 1_000;

/** CPU time of a process (user + system) in ms, from /proc (Linux); NaN elsewhere. */
function childCpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

const s = (ms) => `${(ms / 1000).toFixed(1)} s`;

export async function runMonitorBench() {
  const started = Date.now();
  const perSecond = (SERVERS / INTERVAL_MS) * 1000;
  console.log(
    `\n== 10. Health monitor: ${fmtInt(SERVERS)} servers over ${ACCOUNTS} accounts, interval ${s(INTERVAL_MS)}${INTERVAL_MS === DEFAULT_INTERVAL_MS ? ' (the default)' : ''}, ${CONCURRENCY === undefined ? 'other monitor options at their defaults' : `concurrency ${CONCURRENCY}, other options at their defaults`}; ${perSecond.toFixed(0)} probes/s; ${ROUNDS} rounds`,
  );
  const proc = fork(fileURLToPath(new URL('./toolcall-server.mjs', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const urls = await new Promise((resolve) => proc.once('message', resolve));

  const store = createMemoryStore();
  const onError = (error) => console.error('[bench fleet]', error.code ?? error, error.cause ?? '');
  const registering = createFleet({ store, allowPrivateNetworks: true, rateLimit: false, onError });
  const registerStart = performance.now();
  for (let i = 0; i < SERVERS; i++) {
    const endpoint = `${i % 2 === 0 ? urls.v1 : urls.v2}/s${i}`;
    (await registering.servers.create(`bench-monitor-${i % ACCOUNTS}`, { name: `m${String(i).padStart(5, '0')}`, type: 'http', endpoint }))._unsafeUnwrap();
  }
  await registering.close();
  console.log(`  registered in ${s(performance.now() - registerStart)} (a fleet without monitor over the same memory store)`);

  // What the monitor asks of the store and what its probes end with.
  const rounds = new Map();
  const leaseOf = new Map();
  const round = (window) => {
    let r = rounds.get(window);
    if (r === undefined) rounds.set(window, (r = { window, first: Infinity, lastLease: 0, asked: 0, won: 0, ended: 0, ok: 0, errors: new Map(), lastEnd: 0, probeMs: [] }));
    return r;
  };
  let probes = 0;
  /** At the first round's start: the span of whole periods from there is the steady state's CPU share. */
  let firstRound;
  /** When each round began: the monitor reads the servers of every account (`servers-all`) from offset 0. */
  const starts = [];
  const index = new Proxy(store.index, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key !== 'range' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
      return (set, range, ...rest) => {
        if (set === 'servers-all' && range.offset === 0) {
          starts.push(performance.now());
          if (starts.length === 1) firstRound = { at: performance.now(), cpu: process.cpuUsage(), probes };
        }
        return value.call(target, set, range, ...rest);
      };
    },
  });
  const leases = {
    async consume(counters, expiresAt) {
      const at = performance.now();
      const answer = await store.leases.consume(counters, expiresAt);
      const [, id, window] = /^monitor:(.+):(\d+)$/.exec(counters[0].key) ?? [];
      if (id !== undefined) {
        const r = round(Number(window));
        r.first = Math.min(r.first, at);
        r.lastLease = Math.max(r.lastLease, performance.now());
        r.asked += 1;
        if (answer.allowed) {
          r.won += 1;
          leaseOf.set(id, r);
        }
      }
      return answer;
    },
  };
  const onProbe = (message) => {
    probes += 1;
    const r = leaseOf.get(message.server_id);
    if (r === undefined) return;
    leaseOf.delete(message.server_id);
    r.ended += 1;
    r.probeMs.push(message.duration_ms);
    r.lastEnd = performance.now();
    if (message.outcome === 'ok') r.ok += 1;
    else r.errors.set(message.error_code ?? 'unknown', (r.errors.get(message.error_code ?? 'unknown') ?? 0) + 1);
  };
  subscribe('mcp-fleet:probe', onProbe);

  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const upstreamCpu0 = childCpuMs(proc.pid);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const fleet = createFleet({
    store: { ...store, index, leases },
    allowPrivateNetworks: true,
    rateLimit: false,
    monitor: INTERVAL_MS === DEFAULT_INTERVAL_MS && CONCURRENCY === undefined ? true : { intervalMs: INTERVAL_MS, ...(CONCURRENCY !== undefined && { concurrency: CONCURRENCY }) },
    onError,
  });
  // Until ROUNDS rounds have started and every probe they started has ended (or a deadline well past it).
  const deadline = t0 + (ROUNDS + 2.5) * INTERVAL_MS + 60_000;
  const complete = () => {
    const seen = [...rounds.values()];
    // A round is over when every probe it started has ended and it asks no more leases: it asked one per server, or
    // the round after it has begun (servers whose probe of the round before was still under way are left out).
    return seen.length > ROUNDS && seen.slice(0, ROUNDS).every((r, k) => r.ended === r.won && (r.asked >= SERVERS || seen[k + 1].first < performance.now() - 1_000));
  };
  while (!complete() && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  // ROUNDS whole periods from the first round's start (the rounds may end sooner): the monitor's steady CPU share.
  const periodsEnd = firstRound === undefined ? 0 : firstRound.at + ROUNDS * INTERVAL_MS;
  while (performance.now() < Math.min(periodsEnd, deadline)) await new Promise((resolve) => setTimeout(resolve, 100));
  const steady = firstRound === undefined ? undefined : { cpu: process.cpuUsage(firstRound.cpu), wall: performance.now() - firstRound.at, probes: probes - firstRound.probes };
  const measured = [...rounds.values()].slice(0, ROUNDS);
  // From the fleet's creation to the end of the last round measured (information: it includes the wait for round 1).
  const cpu = process.cpuUsage(cpu0);
  const wallNow = performance.now();
  const cpuMs = (cpu.user + cpu.system) / 1000;
  const upstreamCpuMs = childCpuMs(proc.pid) - upstreamCpu0;
  loop.disable();
  await fleet.close();
  unsubscribe('mcp-fleet:probe', onProbe);
  proc.send({ type: 'exit' });

  const share = steady === undefined ? Number.NaN : (steady.cpu.user + steady.cpu.system) / 1000 / steady.wall;
  console.log(`  ${pad('the upstreams\' process CPU share (information)', 56)} ${((100 * upstreamCpuMs) / (wallNow - t0)).toFixed(1)} % of one core`);
  console.log(`  ${pad('fleet process CPU share (CPU time / wall time)', 56)} ${(share * 100).toFixed(1)} % of one core over ${ROUNDS} periods from round 1's start (${fmtInt(steady?.probes ?? 0)} probes)`);
  console.log(`  ${pad('  from the fleet\'s creation (idle until round 1)', 56)} ${((100 * cpuMs) / (wallNow - t0)).toFixed(1)} % over ${s(wallNow - t0)}; ${(cpuMs / probes).toFixed(2)} ms CPU per probe`);
  const late = [];
  for (const [k, r] of measured.entries()) {
    // The round's start: the monitor's read of the first page (its leases follow at once).
    const at = starts[k] ?? r.first;
    const gap = at - (k === 0 ? t0 : (starts[k - 1] ?? measured[k - 1].first));
    const duration = Math.max(r.lastEnd, r.lastLease) - at;
    const errors = [...r.errors].map(([code, n]) => `${code} ${n}`).join(', ');
    console.log(
      `  round ${k + 1} (lease window ${r.window}): started +${s(at - t0)}${k === 0 ? ' (in the window after the start)' : `, ${fmtInt(gap)} ms after the round before (due ${fmtInt(INTERVAL_MS * (1 - JITTER))}..${fmtInt(INTERVAL_MS * (1 + JITTER))})`}; ` +
        `leases ${fmtInt(r.won)} of ${fmtInt(r.asked)}, probes ${fmtInt(r.ended)} (${fmtInt(r.ok)} ok${errors === '' ? '' : `; ${errors}`}), each ${median(r.probeMs).toFixed(0)} ms p50 / ${quantile(r.probeMs, 0.9).toFixed(0)} ms p90; ` +
        `duration ${s(duration)} = ${((100 * duration) / INTERVAL_MS).toFixed(0)} % of the period`,
    );
    const why = [];
    if (k > 0 && gap > INTERVAL_MS * (1 + JITTER) + START_SLACK_MS) why.push(`started ${fmtInt(gap - INTERVAL_MS * (1 + JITTER))} ms past its latest due time`);
    if (r.asked !== SERVERS) why.push(`${fmtInt(r.asked)} leases asked in its window for ${fmtInt(SERVERS)} servers (${r.asked > SERVERS ? 'another round in the same window' : 'servers left out'})`);
    if (r.won < r.asked) why.push(`${r.asked - r.won} leases refused`);
    if (r.ended < r.won) why.push(`${r.won - r.ended} probes never ended`);
    if (duration > INTERVAL_MS * (1 - JITTER)) why.push('ran past the earliest start of the next round');
    if (why.length > 0) late.push(`round ${k + 1}: ${why.join('; ')}`);
  }
  const begun = starts.filter((at) => at < measured[measured.length - 1].first + 1).length;
  if (begun > measured.length) late.push(`${begun} rounds started in ${measured.length} lease windows`);
  if (measured.length < ROUNDS) late.push(`${ROUNDS - measured.length} of ${ROUNDS} rounds never started`);
  const p = (q) => loop.percentile(q) / 1e6;
  console.log(`  ${pad('event-loop delay (timers fire this late)', 56)} p50 ${p(50).toFixed(1)} ms, p99 ${p(99).toFixed(1)} ms, max ${(loop.max / 1e6).toFixed(1)} ms`);
  console.log(`  ${pad('RSS of the fleet process at the end', 56)} ${(process.memoryUsage().rss / 1024 / 1024).toFixed(0)} MB`);
  const verdict = late.length === 0 ? 'no probe round late' : `late: ${late.join(' | ')}`;
  console.log(`  ${pad('verdict', 56)} ${verdict}`);
  const result = {
    servers: SERVERS,
    intervalMs: INTERVAL_MS,
    cpuShare: share,
    cpuMsPerProbe: cpuMs / probes,
    rounds: measured.map((r) => ({ window: r.window, start: r.first - t0, won: r.won, asked: r.asked, probes: r.ended, ok: r.ok, durationMs: Math.max(r.lastEnd, r.lastLease) - r.first })),
    late,
    seconds: (Date.now() - started) / 1000,
  };
  console.log(`\n  health monitor section: ${result.seconds.toFixed(1)} s`);
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runMonitorBench();
  if (process.send) process.send({ type: 'result', result });
}
