// Section 8: the fleet over PostgreSQL (@mcp-fleet/postgres), issue 27. Needs DATABASE_URL (a database where the bench
// may create and drop schemas `bench_<pid>_…`); without it the section prints one line saying so and is skipped.
//   8a round trips of an authenticated, rate-limited GET /v1/servers/{id} (fleet.handle in this process), counted
//      from the driver: every statement a pg client of the store's pool sends, and the round trips among them (a
//      statement sent while none of the request's is in flight starts one). POST /v1/servers and GET /v1/servers too.
//   8b page 1 of GET /v1/servers at 100k servers in one account against page 1 at 1k, seeded through the store's
//      own write path (section 6's bulk seed: records with Keyv's setMany, listings and name claims in index
//      commits), timed as section 6 does.
//   8c GET and POST /v1/servers through Hono over PostgreSQL against a bare Hono route doing the same with one
//      statement through a pool of the same size: section 2's machinery (a server process per variant, the load
//      generator in another, interleaved rounds in mirrored parts), each process in a schema of its own. In the same
//      rounds, as information: the fleet over Redis (@mcp-fleet/redis), and the fleet over PostgreSQL with every
//      statement named (prepared once per connection) — the experiment of whether naming them would matter.
// Can run alone after a build: `DATABASE_URL=… node --expose-gc bench/postgres.mjs`.
import { existsSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { BASELINE_DIR, BUILD_IDS, describeBuild } from './builds.mjs';
import { cpuFor, forkChild } from './child.mjs';
import { profileUnderLoad, runComparison, startServer } from './frameworks.mjs';
import { bulkSeed, limits, pageComparison, requestFor, seeded } from './storage.mjs';
import { figure, fmtRatioFigure, interleavedRounds, median, printFigures, rangeVerdict, verdictAtMost } from './stats.mjs';

const DATABASE_URL = process.env.DATABASE_URL;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const POOL = Number(process.env.BENCH_PG_POOL ?? 10);
const ROUNDS = Number(process.env.BENCH_PG_ROUNDS ?? 8);
const RERUNS = Number(process.env.BENCH_PG_RERUNS ?? 2);
const SEED_CHUNK = Number(process.env.BENCH_PG_SEED_CHUNK ?? 5000);
const PROFILE_MS = Number(process.env.BENCH_PROFILE_MS ?? 2000);
// Experiments, in 8c's rotation when asked for (each adds a quarter to its time): every statement named; commits
// that do not wait for their WAL flush.
const NAMED = process.env.BENCH_PG_NAMED === '1';
const ASYNC = process.env.BENCH_PG_ASYNC_COMMIT === '1';
const NAMED_ROUNDS = Number(process.env.BENCH_PG_NAMED_ROUNDS ?? 8);
const NAMED_BATCH = Number(process.env.BENCH_PG_NAMED_BATCH ?? 30);
const prefix = `bench_${process.pid}`;

/**
 * A pool of the section's size whose clients count what they send: `statements`, and `trips` (a statement sent while
 * none is in flight starts a round trip; statements sent together go out at once on connections of their own). Every
 * statement of the store goes through a client's `query`, whether it came through `pool.query` or `pool.connect`.
 */
function countingPool() {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: POOL });
  const counter = { statements: 0, trips: 0, inFlight: 0, log: [] };
  pool.on('connect', (client) => {
    const query = client.query.bind(client);
    client.query = (config, values, callback) => {
      counter.statements++;
      if (counter.inFlight++ === 0) counter.trips++;
      // Which round trip of the count it went out in (statements sent together share one).
      const entry = { text: typeof config === 'string' ? config : config.text, values: typeof config === 'string' || typeof values === 'function' ? values : config.values, trip: counter.trips, ms: 0 };
      counter.log.push(entry);
      const start = performance.now();
      const done = () => {
        counter.inFlight--;
        entry.ms = performance.now() - start;
      };
      const cb = typeof values === 'function' ? values : callback;
      if (typeof cb === 'function') {
        const wrapped = (error, result) => {
          done();
          cb(error, result);
        };
        return typeof values === 'function' ? query(config, wrapped) : query(config, values, wrapped);
      }
      const answer = query(config, values);
      answer.then(done, done);
      return answer;
    };
  });
  return { pool, counter };
}

/** The statement's gist for a report line: `consume()`, `SELECT records`, `INSERT records`… */
function gist(text) {
  const call = /"\.(\w+)\(/.exec(text);
  if (call !== null && /^\s*SELECT\s+"/i.test(text)) return `${call[1]}()`;
  const verb = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? '?';
  const table = /(?:FROM|INTO|UPDATE|JOIN)\s+"[^"]+"\.(\w+)/i.exec(text)?.[1] ?? '';
  return `${verb} ${table}`.trim();
}

async function postgresKit(schema, pool) {
  const { createPostgresStore } = await import('@mcp-fleet/postgres');
  const store = await createPostgresStore({ pool, schema, sweepIntervalMs: 0 });
  return { fleetOptions: { store }, records: store.records, index: store.index, keyPrefix: store.keyPrefix, close: () => store.close() };
}

/** 8a: statements and round trips of one request, the most over `samples` requests after a warm-up. */
async function roundTrips() {
  const { pool, counter } = countingPool();
  const kit = await postgresKit(`${prefix}_rt`, pool);
  const { fleet: fleet0, secret, first } = await seeded(1, kit);
  // The same store with webhooks on (8c's servers run so), the account listing none: how many a create sends then.
  const core = await import('@mcp-fleet/core');
  const hooked = core.createFleet({ ...kit.fleetOptions, rateLimit: limits, webhooks: { worker: false }, monitor: false });
  let created = 0;
  const post = (f) => ({
    make: () =>
      new Request('http://bench.local/v1/servers', {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `rt-${created++}`, type: 'http', endpoint: 'https://mcp.example.com/mcp' }),
      }),
    status: 201,
    fleet: f,
  });
  const requests = [
    { label: 'GET /v1/servers/{id}', make: () => requestFor(secret, `/servers/${first.id}`), status: 200 },
    { label: 'GET /v1/servers', make: () => requestFor(secret, '/servers'), status: 200 },
    { label: 'POST /v1/servers', ...post(fleet0) },
    { label: 'POST, webhooks on', ...post(hooked), replay: false },
  ];
  const out = {};
  for (const r of requests) {
    const fleet = r.fleet ?? fleet0;
    for (let i = 0; i < 5; i++) await (await fleet.handle(r.make())).text();
    const samples = [];
    for (let i = 0; i < 20; i++) {
      const before = { statements: counter.statements, trips: counter.trips };
      counter.log.length = 0;
      const response = await fleet.handle(r.make());
      await response.text();
      if (response.status !== r.status || response.headers.get('x-ratelimit-limit') === null) throw new Error(`8a ${r.label} answered ${response.status}`);
      samples.push({
        trips: counter.trips - before.trips,
        statements: counter.statements - before.statements,
        what: counter.log.map((e) => gist(e.text)),
        trip: counter.log.map((e) => e.trip),
        ms: counter.log.map((e) => e.ms),
        sent: [...counter.log],
      });
    }
    const worst = samples.reduce((a, b) => (b.trips > a.trips || (b.trips === a.trips && b.statements > a.statements) ? b : a));
    // Each statement's time from send to answer (median over the samples that sent the same statements), for where the time goes.
    const alike = samples.filter((x) => x.what.join() === worst.what.join());
    const ms = worst.what.map((_, i) => median(alike.map((x) => x.ms[i])));
    out[r.label] = { trips: worst.trips, statements: worst.statements, what: worst.what, trip: worst.trip, ms, sent: worst.sent.map(({ text, values }) => ({ text, values })) };
  }
  const named = await namedOrNot(pool, Object.fromEntries(Object.entries(out).filter(([label]) => requests.find((r) => r.label === label)?.replay !== false)));
  await fleet0.close();
  await hooked.close();
  await kit.close();
  await pool.end();
  const get = out['GET /v1/servers/{id}'];
  console.log(`  8a round trips, counted from the driver (the most of 20 requests each; limits on, webhooks off but where said):`);
  for (const [label, r] of Object.entries(out)) {
    const mark = label === 'GET /v1/servers/{id}' ? `  ${verdictAtMost(r.trips, 2)}` : '  (information)';
    // Statements of one round trip joined by ' + ', round trips by ' → '.
    const shown = r.what.map((w, i) => `${i === 0 ? '' : r.trip[i] === r.trip[i - 1] ? ' + ' : ' → '}${w} ${r.ms[i].toFixed(2)} ms`).join('');
    console.log(`    ${label.padEnd(22)} ${r.trips} round trips, ${r.statements} statements: ${shown}${mark}`);
  }
  for (const [label, f] of Object.entries(named)) console.log(`    ${label.padEnd(22)} the same statements named / unnamed, one connection, time: ${fmtRatioFigure(f)}  (information; below 1×: naming is faster)`);
  return { get, all: out, named };
}

/**
 * The experiment of whether naming the statements would matter (the store does not: a named statement is prepared
 * on a connection once, which PgBouncer in transaction mode cannot follow). Replays each request's statements as 8a
 * recorded them, one after the other on one connection, unnamed and named (pg then parses and plans a statement once
 * per connection and only binds and executes it after), alternated in interleaved rounds: the time of a request's
 * statements named / unnamed. The replays are idempotent (the same reads, the same claim by the same owner, counters
 * far from their limits).
 */
async function namedOrNot(pool, requests) {
  const client = await pool.connect();
  try {
    const variants = Object.entries(requests).flatMap(([label, r], k) => [
      {
        id: `${label} unnamed`,
        run: async () => {
          for (const s of r.sent) await client.query({ text: s.text, values: s.values });
        },
      },
      {
        id: `${label} named`,
        run: async () => {
          for (const [i, s] of r.sent.entries()) await client.query({ name: `bench_${k}_${i}`, text: s.text, values: s.values });
        },
      },
    ]);
    for (const v of variants) for (let i = 0; i < 20; i++) await v.run();
    const per = await interleavedRounds(variants, NAMED_ROUNDS, NAMED_BATCH);
    return Object.fromEntries(Object.keys(requests).map((label) => [label, figure(per[`${label} named`].map((t, i) => t / per[`${label} unnamed`][i]))]));
  } finally {
    client.release();
  }
}

/**
 * 8b's index writes: what `commit_index` writes for a transaction of fresh name claims and listing additions (schema.ts:
 * a `claims` row per claim, `since` on the database's clock in Unix ms; a `set_members` row per addition; each set's
 * `size` grown by its new members), as one bulk INSERT per chunk instead of a call that takes an advisory lock per
 * claim (200 calls of 500 locks each took 36 s of a 3-minute section on a loaded machine). A claim already there
 * fails the INSERT, where `commit_index` would answer a conflict: the seed's keys are all fresh.
 */
export function bulkCommit(pool, schema) {
  const s = `"${schema}"`;
  const sql = `WITH claimed AS (
      INSERT INTO ${s}.claims (key, owner, since)
      SELECT k, o, (extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM unnest($1::text[], $2::text[]) u(k, o)
    ), added AS (
      INSERT INTO ${s}.set_members (set_name, member, score) SELECT * FROM unnest($3::text[], $4::text[], $5::float8[])
      RETURNING set_name
    )
    INSERT INTO ${s}.sets AS st (name, size) SELECT set_name, count(*) FROM added GROUP BY set_name
    ON CONFLICT (name) DO UPDATE SET size = st.size + excluded.size`;
  return async ({ add, claims }) => {
    await pool.query(sql, [claims.map((c) => c.key), claims.map((c) => c.owner), add.map((a) => a.set), add.map((a) => a.member), add.map((a) => a.score)]);
    return { ok: true };
  };
}

/** 8b: page 1 at 100k against 1k servers; records through the store's Keyv, index rows by bulk INSERT. */
async function paging() {
  const pools = [];
  const kits = [];
  const seedTimes = [];
  const compared = await pageComparison('8b PostgreSQL', async (n, tag) => {
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: POOL });
    pools.push(pool);
    const kit = await postgresKit(`${prefix}_${tag}`, pool);
    kits.push(kit);
    const s = await seeded(n, kit);
    const t = performance.now();
    await bulkSeed(n, kit.records, kit.index, kit.keyPrefix, s.first, { chunk: SEED_CHUNK, commit: bulkCommit(pool, `${prefix}_${tag}`) });
    seedTimes.push(`${n.toLocaleString('en')} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    return { ...s, n };
  });
  console.log(`    seeded with the records through the store's Keyv (setMany) and the index rows commit_index would write by bulk INSERT, ${SEED_CHUNK} servers a chunk: ${seedTimes.join(', ')}`);
  await Promise.all([compared.small.fleet.close(), compared.big.fleet.close()]);
  for (const kit of kits) await kit.close();
  for (const pool of pools) await pool.end();
  return compared.result;
}

async function redisAvailable() {
  try {
    const { createClient } = await import('@redis/client');
    const client = createClient({ url: REDIS_URL, socket: { connectTimeout: 1000, reconnectStrategy: false } });
    client.on('error', () => {});
    await client.connect();
    await client.quit();
    return true;
  } catch {
    return false;
  }
}

/** 8c: GET and POST /v1/servers through Hono, fleet over PostgreSQL against the bare route, server processes. */
async function http(haveRedis) {
  // The baseline build runs too when it has the PostgreSQL package built (issue 27 on).
  const builds = BUILD_IDS.filter((b) => b === 'this' || existsSync(path.join(BASELINE_DIR, 'packages', 'postgres', 'dist', 'index.js')));
  if (builds.length < BUILD_IDS.length) console.log(`  build base: ${await describeBuild('base')} has no @mcp-fleet/postgres: this section runs this build only`);
  const load = forkChild('./http-load.mjs', [], { execArgv: ['--expose-gc'], cpu: cpuFor('load') });
  const wanted = [
    ...builds.map((b) => ['fleet-hono-pg', b, `${prefix}_fleet_${b}`]),
    ...(NAMED ? [['fleet-hono-pg-named', 'this', `${prefix}_named`]] : []),
    ...(ASYNC ? [['fleet-hono-pg-async', 'this', `${prefix}_async`]] : []),
    ...(haveRedis ? [['fleet-hono-redis', 'this', `bench-${process.pid}-http:`]] : []),
    ['bare-hono-pg', 'this', `${prefix}_bare`],
  ];
  const [, ...servers] = await Promise.all([load.next('ready'), ...wanted.map(([v, b, where]) => startServer(v, b, [where]))]);
  const s = Object.fromEntries(servers.map((server) => [server.key, server]));
  const fleet = s['fleet-hono-pg@this'];
  if (fleet.sample.status !== 200 || !fleet.sample.rateLimitHeaders) throw new Error('8c: unexpected sample answer from the fleet over PostgreSQL');
  // The bare route reads the fleet's own rows, copied into its schema, and must answer the same bytes.
  const bare = s['bare-hono-pg'];
  await bare.proc.ask({ type: 'copy', schema: `${prefix}_fleet_this` }, 'copied');
  const fleetText = JSON.stringify(fleet.sample.body);
  const bareText = await (await fetch(`http://127.0.0.1:${bare.port}/v1/servers`)).text();
  const withoutMeta = (text) => JSON.stringify({ ...JSON.parse(text), meta: undefined });
  if (withoutMeta(bareText) !== withoutMeta(fleetText) || bareText.length !== fleetText.length) {
    throw new Error(`8c: the bare route's answer differs from the fleet's:\n  fleet ${fleetText.slice(0, 400)}\n  bare  ${bareText.slice(0, 400)}`);
  }
  console.log(`  8c the fleet answers ${fleet.sample.servers} servers, ${fleetText.length} bytes of JSON; the bare route answers the same bytes (but for meta's time and id) from one SELECT; pools of ${POOL} connections`);

  const perBuild = (variant) => builds.map((b) => `${variant}@${b}`);
  const variants = [
    ...perBuild('fleet-hono-pg'),
    'bare-hono-pg',
    ...(NAMED ? ['fleet-hono-pg-named@this'] : []),
    ...(ASYNC ? ['fleet-hono-pg-async@this'] : []),
    ...(haveRedis ? ['fleet-hono-redis@this'] : []),
  ];
  const information = (what) => [
    ...(haveRedis
      ? [
          { id: `${what}Redis`, info: true, label: `${what}: fleet over Redis / bare Hono + one statement on PostgreSQL`, ours: 'fleet-hono-redis', theirs: () => 'bare-hono-pg' },
          { id: `${what}PgRedis`, info: true, label: `${what}: fleet over PostgreSQL / fleet over Redis`, ours: 'fleet-hono-pg', theirs: () => 'fleet-hono-redis@this' },
        ]
      : []),
    ...(NAMED ? [{ id: `${what}Named`, info: true, label: `${what}: statements named / unnamed (fleet over PostgreSQL)`, ours: 'fleet-hono-pg-named', theirs: () => 'fleet-hono-pg@this' }] : []),
    ...(ASYNC ? [{ id: `${what}Async`, info: true, label: `${what}: synchronous_commit off / on (fleet over PostgreSQL)`, ours: 'fleet-hono-pg-async', theirs: () => 'fleet-hono-pg@this' }] : []),
  ];
  const comparisons = [
    {
      id: 'pgGet',
      label: 'GET /v1/servers via Hono over PostgreSQL',
      method: 'GET',
      variants,
      figures: [{ id: 'pgGet', section: 8, label: 'GET /v1/servers via Hono over PostgreSQL, fleet / bare Hono + one SELECT, req/s', ours: 'fleet-hono-pg', theirs: () => 'bare-hono-pg', target: 0.7 }, ...information('GET')],
    },
    {
      id: 'pgPost',
      label: 'POST /v1/servers via Hono over PostgreSQL (every request a new name)',
      method: 'POST',
      variants,
      figures: [{ id: 'pgPost', section: 8, label: 'POST /v1/servers via Hono over PostgreSQL, fleet / bare Hono + one INSERT … ON CONFLICT, req/s', ours: 'fleet-hono-pg', theirs: () => 'bare-hono-pg', target: 0.5 }, ...information('POST')],
    },
  ];
  console.log(`  8c ${variants.join(', ')}: 1 warm-up + ${ROUNDS} rounds (at most ${RERUNS} run again), section 2's slices and load`);
  const out = { figures: [], info: [], waited: 0, profiles: {} };
  for (const c of comparisons) {
    const measured = await runComparison(c, { servers: s, load, builds, rounds: ROUNDS, maxReruns: RERUNS });
    out.waited = Math.max(out.waited, measured.waited);
    for (const entry of measured.figures) (entry.info ? out.info : out.figures).push(entry);
    // A missed target: where the fleet's time goes under that load.
    const target = measured.figures.find((e) => !e.info);
    if (PROFILE_MS > 0 && target.builds.this.median < target.target) {
      out.profiles[c.id] = await profileUnderLoad(fleet, load, { method: c.method, ms: PROFILE_MS, label: `fleet-hono-pg (this build, ${c.id} missed)` });
    }
  }
  await Promise.all([load.exit(), ...servers.map((server) => server.proc.exit())]);
  return out;
}

export async function runPostgresBench() {
  const started = Date.now();
  if (DATABASE_URL === undefined || DATABASE_URL === '') {
    console.log('\n== 8. PostgreSQL: skipped (DATABASE_URL is not set; set it to a database where the bench may create and drop schemas bench_<pid>_*)');
    return { skipped: true };
  }
  const where = (() => {
    const url = new URL(DATABASE_URL);
    return `${url.hostname}:${url.port || 5432}${url.pathname}`;
  })();
  console.log(`\n== 8. PostgreSQL (${where}, schemas ${prefix}_*, pools of ${POOL} connections)`);
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  const out = {};
  try {
    const { rows } = await admin.query('SHOW server_version');
    console.log(`  PostgreSQL ${rows[0].server_version}`);
    out.roundTrips = await roundTrips();
    out.paging = await paging();
    const haveRedis = await redisAvailable();
    if (!haveRedis) console.log(`  no Redis at ${REDIS_URL}: the Redis figures of 8c are left out (set REDIS_URL)`);
    out.http = await http(haveRedis);
  } finally {
    // Leave nothing behind: every schema of this run carries its prefix.
    const { rows } = await admin.query(`SELECT nspname FROM pg_namespace WHERE nspname LIKE $1`, [`${prefix}\\_%`]);
    for (const { nspname } of rows) await admin.query(`DROP SCHEMA "${nspname}" CASCADE`);
    await admin.end();
  }
  out.seconds = (Date.now() - started) / 1000;
  console.log(`\n  section 8: ${out.seconds.toFixed(1)} s`);
  return out;
}

/** The summary's lines of section 8 (bench/run.mjs): targets with verdicts from all rounds, then the information. */
export function summarisePostgres(pgResult) {
  if (pgResult.skipped) {
    console.log('\n  Targets of issue 27 (PostgreSQL): skipped, DATABASE_URL is not set');
    return [];
  }
  console.log('\n  Targets of issue 27 (PostgreSQL)');
  const { get, all } = pgResult.roundTrips;
  console.log(`  ${'8a round trips, authenticated rate-limited GET /v1/servers/{id}'.padEnd(66)} ${`${get.trips} (${get.statements} statements)`.padEnd(44)} ${get.trips <= 2 ? 'met on all of 20 requests' : 'missed'} (≤ 2)`);
  const p = pgResult.paging.figure;
  const sizes = `${pgResult.paging.big.toLocaleString('en')} / at ${pgResult.paging.small.toLocaleString('en')}`;
  console.log(`  ${`8b page 1 at ${sizes} servers, PostgreSQL (time)`.padEnd(66)} ${fmtRatioFigure(p).padEnd(44)} ${rangeVerdict(p, 1.5, { atMost: true })}`);
  printFigures(pgResult.http.figures, '  ');
  for (const label of ['GET /v1/servers', 'POST /v1/servers']) console.log(`  ${`    (information) round trips of ${label}`.padEnd(66)} ${all[label].trips} (${all[label].statements} statements)`);
  for (const e of pgResult.http.info) console.log(`  ${`    (information) ${e.label}`.padEnd(66)} ${fmtRatioFigure(e.builds.this)}`);
  return [...pgResult.http.figures.flatMap((e) => Object.values(e.builds).map((f) => f.spreadPct)), p.spreadPct];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runPostgresBench();
  if (process.send) process.send({ type: 'result', result });
  process.exit(0);
}
