// One server process of section 2 (bench/frameworks.mjs): a fleet behind an adapter, or the bare framework doing the
// same visible work without mcp-fleet. `node bench/frameworks-server.mjs <variant> [this|base]`, variants:
//   fleet-hono       createFleetApp(fleet) on @hono/node-server; rate limits on (too high to refuse), webhooks on
//   fleet-hono-off   the same with rateLimit: false
//   fleet-express    fleetMiddleware(fleet) in an Express app
//   fleet-hono-otel  fleet-hono with @mcp-fleet/otel subscribed (batched spans, periodic metrics; bench/telemetry-setup.mjs)
//   fleet-hono-prom  fleet-hono with @mcp-fleet/prometheus subscribed (its metrics in a prom-client registry)
//   bare-hono        Hono: GET answers the fleet's GET /v1/servers envelope (same JSON bytes, c.json); POST does
//                    JSON.parse, a strict zod schema as demanding as the fleet's, a name-uniqueness Map, a 201 envelope
//   bare-hono-contract  bare-hono's POST with what the contract makes every answer carry and every request do, as
//                    cheaply as a bare server can: the bearer key's SHA-256 looked up (401 otherwise), the request counted
//                    in its account's minute, the fleet's seven answer headers (charset, no-store, nosniff, the three
//                    x-ratelimit-*, x-request-id) as a plain object into @hono/node-server's Response (Hono's c.json
//                    would build a Headers for them, a cost the fleet does not pay)
//   bare-express     Express: GET answers the same envelope (res.json)
// Section 8 (bench/postgres.mjs), each with the schema (or Redis key prefix) given as the third argument:
//   fleet-hono-pg        fleet-hono over @mcp-fleet/postgres, on a pg.Pool of BENCH_PG_POOL connections
//   fleet-hono-pg-named  the same with the store's preparedStatements (every statement named, prepared once per
//                        connection): an experiment
//   fleet-hono-pg-async  the same on connections with synchronous_commit off (a commit does not wait for its WAL
//                        flush): an experiment
//   fleet-hono-redis     fleet-hono over @mcp-fleet/redis
//   bare-hono-pg         Hono on the same kind of pool, in a schema the store migrated: GET reads the page with one
//                        SELECT (from the rows copied from fleet-hono-pg's schema, `copy`) and answers the same JSON
//                        bytes as the fleet; POST does bare-hono's parse and zod, then one INSERT … ON CONFLICT of the
//                        record the fleet would store, 409 on a name taken
// The second argument picks the build of the fleet variants (bench/builds.mjs): `this` (default) or `base`, the
// checkout named by BENCH_BASELINE.
// IPC: ready → { port, secret, sample }; mark → marked and stop → cpu (CPU of
// the slice, and the time it waited for a core); profile-start /
// profile-stop → a CPU profile summary; { type: 'envelope', body } gives a bare server the JSON it answers;
// reset → reset-done removes what the POST load created (section 2 and 8 variants over memory: the fleet's `load-…`
// servers through its API, bare-hono's names), so that every POST round creates into the same small fleet.
import { serve } from '@hono/node-server';
import { createServer } from 'node:http';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Session } from 'node:inspector/promises';
import { Hono } from 'hono';
import pg from 'pg';
import { z } from 'zod';
import { createBenchFleet, importPackage, removeLoadServers } from './builds.mjs';
import { byPackage, topFunctions } from './cpu-profile.mjs';
import { runQueueWaitMs } from './stats.mjs';
// If the process that forked this one dies (a section that threw, a bench stopped), do not linger.
process.on('disconnect', () => process.exit(0));

const variant = process.argv[2];
const build = process.argv[3] ?? 'this';
const SERVERS = Number(process.env.BENCH_SERVERS ?? 20);
const HIGH = 1e9;

/** bare-hono-contract's key: its secret, kept as its SHA-256 (what a key store keeps) with the account it names. */
const keyHashes = new Map();
const sha256 = (text) => createHash('sha256').update(text).digest('base64url');
function contractKey() {
  const made = `mcp_${randomBytes(24).toString('base64url')}`;
  keyHashes.set(sha256(made), 'bench-acct');
  return made;
}
const BEARER = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;
function keyChecked(c) {
  const header = c.req.header('authorization');
  const secretOf = header === undefined ? null : BEARER.exec(header);
  return secretOf !== null && keyHashes.has(sha256(secretOf[1]));
}
/** The request counted in its account's minute, and the headers the fleet's answer carries. */
const counted = new Map();
function contractHeaders(requestId) {
  const window = Math.floor(Date.now() / 60_000);
  const key = `bench-acct:${window}`;
  const count = (counted.get(key) ?? 0) + 1;
  counted.set(key, count);
  return {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'x-ratelimit-limit': String(HIGH),
    'x-ratelimit-remaining': String(HIGH - count),
    'x-ratelimit-reset': String((window + 1) * 60),
    'x-request-id': requestId,
  };
}

const DATABASE_URL = process.env.DATABASE_URL;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const POOL = Number(process.env.BENCH_PG_POOL ?? 10);
/** Section 8: the schema (PostgreSQL variants) or key prefix (Redis) of this process. */
const where = process.argv[4];

let fleet;
let secret = '';
let listen;
/** What `reset` runs: removes what the POST load created (the load names every server it creates `load-…`). */
let resetCreated = async () => {
  if (fleet !== undefined) await removeLoadServers(fleet);
};
/** What `exit` closes after the fleet, in order. */
const closers = [];

/** A pg.Pool of the section's size; with `asyncCommit`, its connections run with synchronous_commit off. */
function benchPool({ asyncCommit = false } = {}) {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: POOL, ...(asyncCommit && { options: '-c synchronous_commit=off' }) });
  pool.on('error', () => {});
  closers.push(() => pool.end());
  return pool;
}

/** The store of a section 8 fleet variant, `{ store }` for createFleet; undefined for section 2's memory store. */
async function sectionEightStore() {
  if (variant === 'fleet-hono-redis') {
    const { createRedisStore } = await importPackage(build, 'redis');
    const store = await createRedisStore({ url: REDIS_URL, keyPrefix: where });
    closers.push(async () => {
      await store.close();
      // Leave nothing behind: every key of this process carries its prefix.
      const { createClient } = await import('@redis/client');
      const client = createClient({ url: REDIS_URL });
      await client.connect();
      for await (const keys of client.scanIterator({ MATCH: `${where}*`, COUNT: 1000 })) if (keys.length > 0) await client.unlink(keys);
      await client.quit();
    });
    return { store };
  }
  if (!variant.startsWith('fleet-hono-pg')) return undefined;
  const { createPostgresStore } = await importPackage(build, 'postgres');
  // The named variant: the store's own option (a wrapper of pool.query named nothing: the store runs its statements
  // on clients it takes from the pool).
  const named = variant === 'fleet-hono-pg-named' && { preparedStatements: true };
  const store = await createPostgresStore({ pool: benchPool({ asyncCommit: variant === 'fleet-hono-pg-async' }), schema: where, ...named });
  closers.unshift(() => store.close());
  return { store };
}

if (variant.startsWith('fleet-')) {
  const core = await importPackage(build, 'core');
  const store = await sectionEightStore();
  const options = {
    rateLimit:
      variant === 'fleet-hono-off'
        ? false
        : { tiers: { pro: HIGH }, operations: { 'servers.list': HIGH, 'servers.create': HIGH, 'servers.get': HIGH } },
    onError: (error) => console.error('[bench server]', error.code, error.cause ?? ''),
    // The POST comparison creates thousands of servers in one account: the default quota (1000) would refuse them.
    quotas: { serversPerAccount: 1_000_000_000 },
  };
  fleet = store === undefined ? createBenchFleet(core, options) : core.createFleet({ ...store, ...options });
  // Section 9: telemetry subscribed for the process's life (this build only: the packages are this checkout's).
  if (variant === 'fleet-hono-otel' || variant === 'fleet-hono-prom') {
    const { otelOn, prometheusOn } = await import('./telemetry-setup.mjs');
    const telemetry = variant === 'fleet-hono-otel' ? await otelOn(fleet) : await prometheusOn(fleet);
    closers.unshift(() => telemetry.close());
  }
  ({ secret } = (await fleet.keys.create({ account: 'bench-acct', tier: 'pro' }))._unsafeUnwrap());
  for (let i = 0; i < SERVERS; i++) {
    const made = await fleet.servers.create('bench-acct', { name: `server-${i}`, type: 'http', endpoint: `https://mcp-${i}.example.com/mcp` });
    if (made.isErr()) throw made.error;
  }
  if (variant === 'fleet-express') {
    const express = (await import('express')).default;
    const { fleetMiddleware } = await importPackage(build, 'express');
    const app = express();
    app.use(fleetMiddleware(fleet));
    listen = () => app.listen(0, '127.0.0.1');
  } else {
    const { createFleetApp } = await importPackage(build, 'hono');
    listen = () => serve({ fetch: createFleetApp(fleet).fetch, port: 0, hostname: '127.0.0.1', createServer });
  }
} else {
  // The bare baselines answer a body the orchestrator hands over: the fleet's own answer, parsed.
  let envelope = null;
  process.on('message', (message) => {
    if (message.type === 'envelope') {
      envelope = message.body;
      process.send({ type: 'envelope-set' });
    }
  });
  if (variant === 'bare-express') {
    const express = (await import('express')).default;
    const app = express();
    app.get('/v1/servers', (_req, res) => res.json(envelope));
    listen = () => app.listen(0, '127.0.0.1');
  } else {
    const app = new Hono();
    if (variant !== 'bare-hono-pg') app.get('/v1/servers', (c) => c.json(envelope));
    // As demanding as the fleet's create schema for an http server: strict object, the same field rules.
    const CONTROL = /[\u0000-\u001f\u007f]/;
    const text = (max) => z.string().min(1).max(max).refine((v) => !CONTROL.test(v), 'must not contain control characters');
    const url = (schemes) =>
      z.string().superRefine((value, ctx) => {
        let parsed;
        try {
          parsed = new URL(value);
        } catch {
          ctx.addIssue({ code: 'custom', message: 'must be a valid absolute URL' });
          return;
        }
        if (!schemes.includes(parsed.protocol)) ctx.addIssue({ code: 'custom', message: 'bad scheme' });
        if (parsed.username !== '' || parsed.password !== '') ctx.addIssue({ code: 'custom', message: 'no credentials' });
      });
    const schema = z.strictObject({
      name: text(100),
      type: z.literal('http'),
      endpoint: url(['http:', 'https:']),
      timeout: z.number().int().min(1).max(300_000).default(30_000),
      retry: z.strictObject({ enabled: z.boolean(), max_attempts: z.number().int().min(1).max(10).default(3), backoff: z.literal('exponential').default('exponential') }).optional(),
      authentication: z
        .discriminatedUnion('type', [
          z.strictObject({ type: z.literal('bearer'), token: z.string().min(1).max(8192) }),
          z.strictObject({ type: z.literal('oauth2'), client_id: text(1024), client_secret: z.string().min(1).max(8192), token_url: url(['http:', 'https:']).optional(), scope: text(1024).optional() }),
        ])
        .optional(),
    });
    if (variant === 'bare-hono-pg') await bareOverPostgres(app, schema);
    else {
      const names = new Map();
      resetCreated = async () => names.clear();
      if (variant === 'bare-hono-contract') secret = contractKey();
      app.post('/v1/servers', async (c) => {
        if (variant === 'bare-hono-contract' && !keyChecked(c)) return c.json({ success: false, error: { code: 'UNAUTHORIZED' } }, 401);
        const { config, answer } = await readCreate(c, schema);
        if (answer !== undefined) return answer;
        const { name, type, endpoint } = config;
        if (names.has(name)) return c.json({ success: false, error: { code: 'SERVER_NAME_EXISTS' } }, 409);
        const now = new Date().toISOString();
        const server = { id: `srv_${randomUUID()}`, name, type, endpoint, status: 'active', health: 'unknown', created_at: now, updated_at: now };
        names.set(name, server);
        const body = { success: true, data: server, meta: { timestamp: now, request_id: `req_${randomUUID()}` } };
        if (variant !== 'bare-hono-contract') return c.json(body, 201);
        return new Response(JSON.stringify(body), { status: 201, headers: contractHeaders(body.meta.request_id) });
      });
    }
    listen = () => serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', createServer });
  }
}

/** A bare route's reading of a create: JSON.parse and the strict schema, `{ config }`, or `{ answer }` (400) when either fails. */
async function readCreate(c, schema) {
  let body;
  try {
    body = JSON.parse(await c.req.text());
  } catch {
    return { answer: c.json({ success: false, error: { code: 'INVALID_JSON' } }, 400) };
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) return { answer: c.json({ success: false, error: { code: 'VALIDATION_ERROR', details: parsed.error.issues } }, 400) };
  return { config: parsed.data };
}

/**
 * bare-hono-pg's routes, on a pool of the section's size, in a schema of its own that the store's migration made (so
 * that its tables are the store's). GET /v1/servers reads page 1 of `bench-acct`'s listing with one SELECT (its size,
 * and the records of the page in listing order) from rows copied from fleet-hono-pg's schema (`copy`), and answers the
 * fleet's envelope: the same summary fields, the same JSON bytes but for meta's time and id. POST /v1/servers parses
 * and validates as bare-hono, then writes the record the fleet would store with one INSERT … ON CONFLICT on
 * (account, name): 409 when the name is taken.
 */
async function bareOverPostgres(app, createSchema) {
  const pool = benchPool();
  const { createPostgresStore } = await importPackage('this', 'postgres');
  await (await createPostgresStore({ pool, schema: where, sweepIntervalMs: 0 })).close(); // migrates; leaves the pool open
  const s = `"${where}"`;
  await pool.query(`CREATE TABLE ${s}.bare_servers (account text COLLATE "C", name text COLLATE "C", id text NOT NULL, value text NOT NULL, PRIMARY KEY (account, name))`);
  process.on('message', async (message) => {
    if (message.type !== 'copy') return;
    const from = `"${message.schema}"`;
    for (const table of ['records', 'claims', 'set_members', 'sets']) await pool.query(`INSERT INTO ${s}.${table} SELECT * FROM ${from}.${table}`);
    process.send({ type: 'copied' });
  });
  const requestId = () => `req_${randomBytes(18).toString('base64url')}`;
  const page = `SELECT (SELECT size FROM ${s}.sets WHERE name = $1) AS total,
    coalesce((SELECT array_agg(r.value ORDER BY m.score, m.member)
                FROM (SELECT member, score FROM ${s}.set_members WHERE set_name = $1 ORDER BY score, member LIMIT $2 OFFSET $3) m
                JOIN ${s}.records r ON r.key = 'server:' || m.member), '{}') AS "values"`;
  app.get('/v1/servers', async (c) => {
    const limit = 50;
    const { rows } = await pool.query(page, ['servers:bench-acct', limit, 0]);
    const total = Number(rows[0].total ?? 0);
    const data = rows[0].values.map((text) => {
      const { id, config, status, health, created_at, updated_at } = JSON.parse(text).value;
      return { id, name: config.name, type: config.type, endpoint: config.endpoint ?? null, status, health, created_at, updated_at };
    });
    return c.json({ success: true, data, pagination: { page: 1, limit, total, pages: Math.ceil(total / limit) }, meta: { timestamp: new Date().toISOString(), request_id: requestId() } });
  });
  const insert = `INSERT INTO ${s}.bare_servers (account, name, id, value) VALUES ($1, $2, $3, $4) ON CONFLICT (account, name) DO NOTHING RETURNING id`;
  app.post('/v1/servers', async (c) => {
    const { config, answer } = await readCreate(c, createSchema);
    if (answer !== undefined) return answer;
    const now = new Date().toISOString();
    const id = `srv_${randomBytes(18).toString('base64url')}`;
    const record = { id, account: 'bench-acct', config, status: 'active', health: 'unknown', created_at: now, updated_at: now };
    const { rows } = await pool.query(insert, ['bench-acct', config.name, id, JSON.stringify({ value: record })]);
    if (rows.length === 0) return c.json({ success: false, error: { code: 'SERVER_NAME_EXISTS' } }, 409);
    const server = { id, name: config.name, type: config.type, endpoint: config.endpoint, status: 'active', health: 'unknown', created_at: now, updated_at: now };
    return c.json({ success: true, data: server, meta: { timestamp: now, request_id: requestId() } }, 201);
  });
}

const server = listen();
await new Promise((resolve) => (server.listening ? resolve() : server.once('listening', resolve)));
const { port } = server.address();

let sample = null;
if (fleet !== undefined) {
  const response = await fetch(`http://127.0.0.1:${port}/v1/servers`, { headers: { authorization: `Bearer ${secret}` } });
  const body = await response.json();
  sample = { status: response.status, body, servers: Array.isArray(body.data) ? body.data.length : null, rateLimitHeaders: response.headers.get('x-ratelimit-limit') !== null };
}

let cpuMark = process.cpuUsage();
let waitMark = runQueueWaitMs();
let wallMark = performance.now();
let session;
process.on('message', async (message) => {
  if (message.type === 'mark') {
    // No gc() here. Each variant is a process of its own, so the garbage a slice finds is its own variant's: part of
    // its steady cost, as in production. A forced full gc before every part instead shrank the young generation and
    // charged the concurrent sweep to the part that followed, which costs the process with the larger heap most: the
    // same fleet and bare Hono measured 0.53–0.62× with it and 0.88–0.89× without, in one run (docs/performance.md).
    cpuMark = process.cpuUsage();
    waitMark = runQueueWaitMs();
    wallMark = performance.now();
    process.send({ type: 'marked' });
  } else if (message.type === 'stop') {
    const used = process.cpuUsage(cpuMark);
    process.send({ type: 'cpu', cpuMs: (used.user + used.system) / 1000, wallMs: performance.now() - wallMark, waitMs: runQueueWaitMs() - waitMark });
  } else if (message.type === 'reset') {
    await resetCreated();
    process.send({ type: 'reset-done' });
  } else if (message.type === 'profile-start') {
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
    process.send({ type: 'profiling' });
  } else if (message.type === 'profile-stop') {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    process.send({ type: 'profile', top: topFunctions(profile, 15), packages: byPackage(profile).slice(0, 10) });
  } else if (message.type === 'exit') {
    server.closeAllConnections?.();
    server.close(async () => {
      if (fleet) await fleet.close();
      for (const close of closers) await close();
      process.exit(0);
    });
  }
});
process.send({ type: 'ready', port, secret, sample });
