// Webhook deliveries per second through the delivery worker, against plain undici requests to the same local
// receiver in the same run, and the delivery lag (change → receiver) p50. Memory store, one process.
//   plain    N undici POSTs of the same size, `CONCURRENCY` at a time (what sending costs with nothing around it)
//   worker   N deliveries staged beforehand (a fleet with the worker off), then a fleet with the worker on, over the
//            same storage, timed from its start until the receiver has all N (leases, records, signing, index)
// Run by bench/run.mjs; can also run alone: `node bench/webhooks.mjs`.
import { createServer } from 'node:http';
import Keyv from 'keyv';
import { Agent, request } from 'undici';
import { createFleet, createMemoryStore } from '@mcp-fleet/core';
import { fmtInt, fmtMs, fmtRatio, max, median, min, pad, padLeft } from './stats.mjs';

const ROUNDS = Number(process.env.BENCH_WEBHOOK_ROUNDS ?? 8);
const N = Number(process.env.BENCH_WEBHOOK_DELIVERIES ?? 500);
const CONCURRENCY = 8;
const LAG_EVENTS = Number(process.env.BENCH_WEBHOOK_LAG_EVENTS ?? 100);

function startReceiver() {
  let count = 0;
  let waiting;
  const lags = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const arrived = Date.now();
      if (req.headers['x-service-event'] === 'server.created') {
        lags.push(arrived - Date.parse(JSON.parse(Buffer.concat(chunks).toString()).created_at));
      }
      res.writeHead(204).end();
      count += 1;
      if (waiting && count >= waiting.n) waiting.resolve();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}/hook`,
        lags,
        reset: () => {
          count = 0;
          lags.length = 0;
        },
        until: (n) => new Promise((r) => (count >= n ? r() : (waiting = { n, resolve: r }))),
        close: () => new Promise((r) => server.close(r)),
      }),
    ),
  );
}

async function plain(receiver, body) {
  const agent = new Agent();
  receiver.reset();
  const start = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < N) {
      next += 1;
      const res = await request(receiver.url, { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json' }, body });
      await res.body.dump();
      if (res.statusCode !== 204) throw new Error(`receiver answered ${res.statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  const seconds = (performance.now() - start) / 1000;
  await agent.close();
  return N / seconds;
}

async function throughWorker(receiver) {
  // One store for both fleets (a plain Keyv for records, as before), so the worker finds what the stager wrote.
  const store = createMemoryStore({ records: new Keyv({ throwOnErrors: true }) });
  const common = { store, rateLimit: false, allowPrivateNetworks: true };
  const stager = createFleet({ ...common, webhooks: { worker: false } });
  (await stager.webhooks.create('bench', { url: receiver.url, events: ['server.created'] }))._unsafeUnwrap();
  for (let i = 0; i < N; i++) {
    (await stager.servers.create('bench', { name: `s${i}`, type: 'http', endpoint: 'https://mcp.example.com/mcp' }))._unsafeUnwrap();
  }
  await stager.close();
  receiver.reset();
  const start = performance.now();
  const worker = createFleet({ ...common, webhooks: { concurrency: CONCURRENCY } });
  await receiver.until(N);
  const seconds = (performance.now() - start) / 1000;
  await worker.close();
  return N / seconds;
}

async function lag(receiver) {
  const fleet = createFleet({ rateLimit: false, allowPrivateNetworks: true, webhooks: { concurrency: CONCURRENCY } });
  (await fleet.webhooks.create('bench', { url: receiver.url, events: ['server.created'] }))._unsafeUnwrap();
  receiver.reset();
  for (let i = 0; i < LAG_EVENTS; i++) {
    (await fleet.servers.create('bench', { name: `lag${i}`, type: 'http', endpoint: 'https://mcp.example.com/mcp' }))._unsafeUnwrap();
    await new Promise((r) => setTimeout(r, 10));
  }
  await receiver.until(LAG_EVENTS);
  const lags = [...receiver.lags];
  await fleet.close();
  return { p50: median(lags), p90: [...lags].sort((a, b) => a - b)[Math.floor(lags.length * 0.9)] };
}

export async function runWebhookBench() {
  const started = Date.now();
  const receiver = await startReceiver();
  // A body of the size a server.created delivery has.
  const body = JSON.stringify({ id: 'evt_x'.padEnd(28, '0'), type: 'server.created', created_at: new Date().toISOString(), data: { server: { id: 'srv_'.padEnd(28, '0'), name: 's0', type: 'http', endpoint: 'https://mcp.example.com/mcp', status: 'active', health: 'unknown', created_at: '', updated_at: '', timeout: 30000, retry: null, heartbeat: null, command: null, args: null, working_directory: null, authentication: null, env_keys: null } } });
  await plain(receiver, body);
  await throughWorker(receiver);
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['plain', 'worker'] : ['worker', 'plain'];
    const r = {};
    for (const v of order) r[v] = v === 'plain' ? await plain(receiver, body) : await throughWorker(receiver);
    rounds.push(r);
  }
  const ratios = rounds.map((r) => r.worker / r.plain);
  const ratio = median(ratios);
  const lagResult = await lag(receiver);
  await receiver.close();
  console.log(`\n== 5. Webhook deliveries: worker vs plain undici POSTs to one local receiver (memory store, ${N} per round, ${CONCURRENCY} at a time)`);
  console.log(`  ${pad('variant', 40)} ${padLeft('median/s', 10)} ${padLeft('min..max/s', 16)}`);
  for (const v of ['plain', 'worker']) {
    const xs = rounds.map((r) => r[v]);
    console.log(`  ${pad(v === 'plain' ? 'plain undici request' : 'delivery worker (staged, then drained)', 40)} ${padLeft(fmtInt(median(xs)), 10)} ${padLeft(`${fmtInt(min(xs))}..${fmtInt(max(xs))}`, 16)}`);
  }
  console.log(`  ratio worker / plain: ${fmtRatio(ratio)}  (rounds ${fmtRatio(min(ratios))}..${fmtRatio(max(ratios))})  (information)`);
  console.log(`  delivery lag, server created → receiver (${LAG_EVENTS} events, 10 ms apart): p50 ${fmtMs(lagResult.p50)} ms, p90 ${fmtMs(lagResult.p90)} ms`);
  console.log(`\n  webhooks section: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { ratio, workerPerSecond: median(rounds.map((r) => r.worker)), plainPerSecond: median(rounds.map((r) => r.plain)), lagP50: lagResult.p50, lagP90: lagResult.p90 };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runWebhookBench();
  if (process.send) process.send({ type: 'result', result });
}
