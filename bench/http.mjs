// Requests per second of authenticated GET /v1/servers through the Hono adapter, rate limits ON versus OFF.
// Two server processes (one per variant, same code, same data) and one load-generator process; this process only
// orchestrates, alternating ON and OFF round after round. Can also run alone: `node bench/http.mjs`.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fmtInt, fmtRatio, max, median, min, pad, padLeft, verdict } from './stats.mjs';

const ROUNDS = Number(process.env.BENCH_HTTP_ROUNDS ?? 6);
const DURATION_MS = Number(process.env.BENCH_HTTP_DURATION_MS ?? 3000);
const WARMUP_MS = Number(process.env.BENCH_HTTP_WARMUP_MS ?? 2000);
const CONNECTIONS = Number(process.env.BENCH_HTTP_CONNECTIONS ?? 32);

const here = (file) => fileURLToPath(new URL(file, import.meta.url));

/** A forked child with a tiny request/answer protocol over IPC. */
function child(file, args) {
  const proc = fork(here(file), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = [];
  proc.on('message', (message) => {
    const i = waiting.findIndex((w) => w.type === message.type);
    if (i >= 0) waiting.splice(i, 1)[0].resolve(message);
  });
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.once('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`${file} exited (${code}) while we waited for "${w.type}"`));
  });
  const next = (type) => new Promise((resolve, reject) => waiting.push({ type, resolve, reject }));
  return {
    next,
    ask: (message, answer) => {
      const answered = next(answer);
      proc.send(message);
      return answered;
    },
    exit: () => {
      proc.send({ type: 'exit' });
      return exited;
    },
  };
}

async function startServer(mode) {
  const proc = child('./http-server.mjs', [mode]);
  const ready = await proc.next('ready');
  return { mode, proc, ...ready };
}

export async function runHttpBench() {
  const started = Date.now();
  console.log(
    `\n== 2. GET /v1/servers through @mcp-fleet/hono on @hono/node-server (separate server processes; load from a child process: undici Pool, ${CONNECTIONS} keep-alive connections; ${ROUNDS} rounds × ${DURATION_MS / 1000} s per variant, ON/OFF alternated; ratio = median of per-round ON/OFF ratios)`,
  );
  const load = child('./http-load.mjs', []);
  const [, on, off] = await Promise.all([load.next('ready'), startServer('on'), startServer('off')]);
  for (const s of [on, off]) {
    const { status, servers, bytes, rateLimitHeaders } = s.sample;
    console.log(`  limits ${s.mode.toUpperCase().padEnd(3)}: sample answer ${status}, ${servers} servers, ${bytes} bytes of JSON, X-RateLimit-* headers: ${rateLimitHeaders ? 'yes' : 'no'}`);
    if (status !== 200 || servers === null || rateLimitHeaders !== (s.mode === 'on')) throw new Error(`unexpected sample answer from the ${s.mode} server`);
  }

  const measure = async (s, durationMs) => {
    await s.proc.ask({ type: 'mark' }, 'marked');
    const result = await load.ask(
      { type: 'run', origin: `http://127.0.0.1:${s.port}`, path: '/v1/servers', headers: { authorization: `Bearer ${s.secret}` }, connections: CONNECTIONS, durationMs },
      'done',
    );
    const { cpuMs, wallMs } = await s.proc.ask({ type: 'stop' }, 'cpu');
    return {
      rps: (result.requests * 1000) / result.elapsedMs,
      cpuUsPerReq: (cpuMs * 1000) / Math.max(1, result.requests),
      busy: cpuMs / wallMs,
      ...result,
    };
  };

  // Warm-up: JIT, connection set-up, Keyv and limiter state. Not counted.
  await measure(off, WARMUP_MS);
  await measure(on, WARMUP_MS);

  const results = { on: [], off: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [on, off] : [off, on];
    for (const s of order) results[s.mode].push(await measure(s, DURATION_MS));
  }
  await Promise.all([load.exit(), on.proc.exit(), off.proc.exit()]);

  const bad = [...results.on, ...results.off].reduce((n, r) => n + r.non2xx + r.errors, 0);
  if (bad > 0) throw new Error(`${bad} requests failed or were not 2xx during the HTTP benchmark`);

  console.log(`  ${pad('variant', 12)} ${padLeft('median req/s', 13)} ${padLeft('min..max req/s', 18)} ${padLeft('server CPU µs/req', 18)} ${padLeft('server busy', 12)} ${padLeft('p50 ms', 7)} ${padLeft('p99 ms', 7)}`);
  for (const mode of ['off', 'on']) {
    const rs = results[mode];
    const rps = rs.map((r) => r.rps);
    console.log(
      `  ${pad(`limits ${mode.toUpperCase()}`, 12)} ${padLeft(fmtInt(median(rps)), 13)} ${padLeft(`${fmtInt(min(rps))}..${fmtInt(max(rps))}`, 18)} ${padLeft(median(rs.map((r) => r.cpuUsPerReq)).toFixed(1), 18)} ${padLeft(`${(median(rs.map((r) => r.busy)) * 100).toFixed(0)}%`, 12)} ${padLeft(median(rs.map((r) => r.p50Ms)).toFixed(2), 7)} ${padLeft(median(rs.map((r) => r.p99Ms)).toFixed(2), 7)}`,
    );
  }
  const ratios = results.on.map((r, i) => r.rps / results.off[i].rps);
  const cpuRatios = results.on.map((r, i) => results.off[i].cpuUsPerReq / r.cpuUsPerReq);
  const ratio = median(ratios);
  const cpuRatio = median(cpuRatios);
  console.log(`  ratio ON/OFF req/s:                    ${padLeft(fmtRatio(ratio), 7)}  (rounds ${fmtRatio(min(ratios))}..${fmtRatio(max(ratios))})  ${verdict(ratio, 0.9)}`);
  console.log(`  ratio OFF/ON server CPU per request:   ${padLeft(fmtRatio(cpuRatio), 7)}  (rounds ${fmtRatio(min(cpuRatios))}..${fmtRatio(max(cpuRatios))})  (information: 1× = limits cost no CPU)`);
  const seconds = (Date.now() - started) / 1000;
  console.log(`\n  HTTP section: ${seconds.toFixed(1)} s`);
  return { ratio, cpuRatio, seconds };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runHttpBench();
  if (process.send) process.send({ type: 'result', result });
}
