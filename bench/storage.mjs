// Section 6: storage on the request path.
//   6a Redis round trips of one authenticated, rate-limited GET /v1/servers/{id} (fleet.handle in this process over
//      @mcp-fleet/redis): every flush of commands to the Redis socket is counted. node-redis sends what was asked in
//      one turn of the event loop as one write, and the handler waits for its answers before it asks again, so a
//      flush is a round trip. Commands are counted from the RESP written.
//   6b page 1 of GET /v1/servers at 100k servers in one account against page 1 at 1k, memory and Redis: time per
//      request, interleaved rounds, ratio = median of per-round ratios. The 100k accounts are seeded in bulk through
//      the fleet's own stores (records through the Keyv, listings and name claims in index commits), exactly as
//      creates write them, since 100k creates would take minutes.
//   6c RSS of the process holding 100k servers in the memory store.
// Needs Redis at REDIS_URL (default redis://127.0.0.1:6379) for 6a and the Redis half of 6b; skipped without it.
import net from 'node:net';
import * as core from '@mcp-fleet/core';
import { figure, fmtRatioFigure, max, median, rangeVerdict, verdictAtMost } from './stats.mjs';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const BIG = Number(process.env.BENCH_PAGE_BIG ?? 100_000);
const SMALL = Number(process.env.BENCH_PAGE_SMALL ?? 1_000);
const ROUNDS = Number(process.env.BENCH_PAGE_ROUNDS ?? 7);
const BATCH = Number(process.env.BENCH_PAGE_BATCH ?? 40);
const HIGH = 1e9;
export const limits = { tiers: { pro: HIGH }, operations: { 'servers.list': HIGH, 'servers.get': HIGH, 'servers.create': HIGH } };

// Every flush to a Redis socket, and the commands in it.
const flushes = { count: 0, commands: 0 };
const isRedis = (socket) => socket.remotePort === Number(new URL(REDIS_URL).port || 6379);
const countCommands = (chunk) => {
  const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk.buffer ?? chunk, chunk.byteOffset ?? 0, chunk.byteLength ?? chunk.length).toString('latin1');
  return text.startsWith('*') ? 1 : 0;
};
const { _writev, _write } = net.Socket.prototype;
net.Socket.prototype._writev = function (chunks, cb) {
  if (isRedis(this)) {
    flushes.count++;
    for (const { chunk } of chunks) flushes.commands += countCommands(chunk);
  }
  return _writev.call(this, chunks, cb);
};
net.Socket.prototype._write = function (chunk, encoding, cb) {
  if (isRedis(this)) {
    flushes.count++;
    flushes.commands += countCommands(chunk);
  }
  return _write.call(this, chunk, encoding, cb);
};

/**
 * The stores of one fleet, whichever storage API the build has: `{ fleetOptions, records, index, keyPrefix, close }`.
 * Since issue 26 a fleet takes one `store` (`createMemoryStore()`, `createRedisStore(…)`) carrying `records`, `index`,
 * `rateLimits` and `keyPrefix`; before it, `storage` + `index` + `rateLimit.store` (`createMemoryStorage()`,
 * `new MemoryIndexStore()`, `createRedisStorage(…)`). The bulk seed writes through `records` and `index` either way.
 */
async function redisKit(tag) {
  const redis = await import('@mcp-fleet/redis');
  const options = { url: REDIS_URL, keyPrefix: `bench-${process.pid}-${tag}:` };
  if (typeof redis.createRedisStore === 'function') {
    const store = await redis.createRedisStore(options);
    return { fleetOptions: { store }, records: store.records, index: store.index, keyPrefix: store.keyPrefix ?? '', close: () => store.close() };
  }
  const stores = await redis.createRedisStorage(options);
  return { fleetOptions: { storage: stores.storage, index: stores.index }, rateLimitStore: stores.rateLimits, records: stores.storage, index: stores.index, keyPrefix: '', close: () => stores.close() };
}

function memoryKit() {
  if (typeof core.createMemoryStore === 'function') {
    const store = core.createMemoryStore();
    return { fleetOptions: { store }, records: store.records, index: store.index, keyPrefix: store.keyPrefix ?? 'mcp-fleet:', close: () => store.close() };
  }
  const storage = core.createMemoryStorage();
  const index = new core.MemoryIndexStore();
  return { fleetOptions: { storage, index }, records: storage, index, keyPrefix: 'mcp-fleet:', close: async () => {} };
}

async function redisAvailable() {
  try {
    const kit = await redisKit('probe');
    await kit.close();
    return true;
  } catch {
    return false;
  }
}

/** A fleet with one account of `n` servers: a few made by creates, the rest copies of those written in bulk. */
export async function seeded(n, kit) {
  const rateLimit = { ...limits, ...(kit.rateLimitStore && { store: kit.rateLimitStore }) };
  const fleet = core.createFleet({ ...kit.fleetOptions, rateLimit, webhooks: false, monitor: false });
  const { secret } = (await fleet.keys.create({ account: 'pages', tier: 'pro' }))._unsafeUnwrap();
  const first = (await fleet.servers.create('pages', { name: 'server-0', type: 'http', endpoint: 'https://mcp-0.example.com/mcp' }))._unsafeUnwrap();
  return { fleet, secret, first };
}

/**
 * Writes servers 1..n-1 of the account of `first`: copies of its stored record, with their listings and name claims.
 * `commit` writes each chunk's index transaction (`{ add, claims }`, every key fresh); the store's own `commit` by
 * default, or a writer that puts the same rows in place by other means (section 8's bulk INSERT).
 */
export async function bulkSeed(n, keyv, index, keyPrefix, first, { chunk = 2000, commit = (tx) => index.commit(tx) } = {}) {
  // The stored record of the server made by a create (not its detail view), copied with other ids and names.
  const template = await keyv.get(`${keyPrefix}server:${first.id}`);
  if (template?.account !== 'pages') throw new Error('bulk seed: the template record was not found');
  const base = Date.parse(template.created_at);
  for (let start = 1; start < n; start += chunk) {
    const entries = [];
    const add = [];
    const claims = [];
    for (let i = start; i < Math.min(n, start + chunk); i++) {
      const id = `srv_${String(i).padStart(24, '0')}`;
      const at = new Date(base + i).toISOString();
      const record = { ...template, id, config: { ...template.config, name: `server-${i}` }, created_at: at, updated_at: at };
      entries.push({ key: `${keyPrefix}server:${id}`, value: record });
      const score = base + i;
      for (const set of ['servers:pages', 'servers:pages:type:http', 'servers:pages:health:unknown', 'servers:pages:type:http:health:unknown', 'servers-all']) add.push({ set, member: id, score });
      claims.push({ key: `name:pages:server-${i}`, owner: id });
    }
    if (typeof keyv.setMany === 'function') await keyv.setMany(entries);
    else await Promise.all(entries.map((e) => keyv.set(e.key, e.value)));
    const done = await commit({ add, claims });
    if (!done.ok) throw new Error('bulk seed: a name claim conflicted');
  }
}

export const requestFor = (secret, path) => new Request(`http://bench.local/v1${path}`, { headers: { authorization: `Bearer ${secret}` } });

async function timePages(variants) {
  const per = Object.fromEntries(variants.map((v) => [v.id, []]));
  for (const v of variants) for (let i = 0; i < 30; i++) await v.run();
  for (let round = 0; round < ROUNDS; round++) {
    const times = Object.fromEntries(variants.map((v) => [v.id, []]));
    for (let pass = 0; pass < BATCH; pass++) {
      const order = pass % 2 === 0 ? variants : [...variants].reverse();
      for (const v of order) {
        const t = performance.now();
        await v.run();
        times[v.id].push(performance.now() - t);
      }
    }
    for (const v of variants) per[v.id].push(median(times[v.id]));
  }
  return per;
}

export async function pageComparison(label, make) {
  const small = await make(SMALL, 'small');
  const big = await make(BIG, 'big');
  const run = (s) => async () => {
    const response = await s.fleet.handle(requestFor(s.secret, '/servers?page=1&limit=20'));
    if (response.status !== 200) throw new Error(`${label}: page 1 answered ${response.status}`);
    const body = await response.json();
    if (body.pagination.total !== s.n) throw new Error(`${label}: expected ${s.n} servers, the page says ${body.pagination.total}`);
  };
  const per = await timePages([
    { id: 'small', run: run(small) },
    { id: 'big', run: run(big) },
  ]);
  const ratios = figure(per.big.map((t, i) => t / per.small[i]));
  const result = { ratio: ratios.median, low: ratios.low, high: ratios.high, figure: ratios, big: BIG, small: SMALL, smallMs: median(per.small), bigMs: median(per.big) };
  console.log(
    `  ${label}: page 1 at ${BIG.toLocaleString('en')} servers / at ${SMALL.toLocaleString('en')} (time): ${fmtRatioFigure(ratios)}; ${result.bigMs.toFixed(3)} vs ${result.smallMs.toFixed(3)} ms  ${rangeVerdict(ratios, 1.5, { atMost: true })}`,
  );
  return { result, small, big };
}

export async function runStorageBench() {
  const started = Date.now();
  console.log(`\n== 6. Storage on the request path (fleet.handle in this process; page timings: ${ROUNDS} rounds × ${BATCH} requests per variant, alternated)`);
  const out = {};
  const haveRedis = await redisAvailable();

  if (haveRedis) {
    const kit = await redisKit('rt');
    const { fleet, secret, first } = await seeded(1, kit);
    const path = `/servers/${first.id}`;
    for (let i = 0; i < 5; i++) await (await fleet.handle(requestFor(secret, path))).text();
    const samples = [];
    for (let i = 0; i < 20; i++) {
      const before = { ...flushes };
      const response = await fleet.handle(requestFor(secret, path));
      await response.text();
      if (response.status !== 200 || response.headers.get('x-ratelimit-limit') === null) throw new Error(`GET ${path} answered ${response.status}`);
      samples.push({ trips: flushes.count - before.count, commands: flushes.commands - before.commands });
    }
    await fleet.close();
    await kit.close();
    out.roundTrips = max(samples.map((s) => s.trips));
    out.commands = max(samples.map((s) => s.commands));
    console.log(`  6a Redis: authenticated, rate-limited GET /v1/servers/{id}: ${out.roundTrips} round trips, ${out.commands} commands (most of 20 requests)  ${verdictAtMost(out.roundTrips, 2)}`);
  } else {
    console.log(`  6a Redis: skipped (no Redis at ${REDIS_URL}; set REDIS_URL)`);
  }

  // 6b memory, and 6c RSS of the 100k account.
  const rssBefore = process.memoryUsage().rss;
  const memory = await pageComparison('6b memory', async (n) => {
    const kit = memoryKit();
    const s = await seeded(n, kit);
    await bulkSeed(n, kit.records, kit.index, kit.keyPrefix, s.first);
    return { ...s, n, kit };
  });
  out.memory = memory.result;
  globalThis.gc?.();
  out.rssMb = (process.memoryUsage().rss - rssBefore) / 1024 / 1024;
  console.log(`  6c memory store: RSS grew ${out.rssMb.toFixed(0)} MB for ${(BIG + SMALL).toLocaleString('en')} servers (${((out.rssMb * 1024 * 1024) / (BIG + SMALL)).toFixed(0)} bytes a server, records, listings and name claims); process RSS ${(process.memoryUsage().rss / 1024 / 1024).toFixed(0)} MB  (information)`);
  await Promise.all([memory.small.fleet.close(), memory.big.fleet.close()]);
  await Promise.all([memory.small.kit.close(), memory.big.kit.close()]);

  if (haveRedis) {
    const opened = [];
    const redis = await pageComparison('6b Redis', async (n, tag) => {
      const kit = await redisKit(`page-${tag}`);
      opened.push(kit);
      const s = await seeded(n, kit);
      await bulkSeed(n, kit.records, kit.index, kit.keyPrefix, s.first);
      return { ...s, n };
    });
    out.redis = redis.result;
    await Promise.all([redis.small.fleet.close(), redis.big.fleet.close()]);
    // Leave nothing behind: every key of this run carries the run's prefix.
    const { createClient } = await import('@redis/client');
    const client = createClient({ url: REDIS_URL });
    await client.connect();
    for (const kit of opened) await kit.close();
    for await (const keys of client.scanIterator({ MATCH: `bench-${process.pid}-*`, COUNT: 1000 })) if (keys.length > 0) await client.unlink(keys);
    await client.quit();
  }
  out.seconds = (Date.now() - started) / 1000;
  console.log(`\n  section 6: ${out.seconds.toFixed(1)} s`);
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runStorageBench();
  if (process.send) process.send({ type: 'result', result });
  process.exit(0);
}
