/**
 * The fleet on PostgreSQL when the database fails under it, through real HTTP (Hono) on a real PostgreSQL: the
 * database going away under load (a TCP relay of the test's own, cut and restored; never the system server) and
 * its connections terminated as a restart does (57P01, only this file's own), an exhausted pool, a statement held by
 * a lock. Every answer is a 2xx or `503 STORAGE_UNAVAILABLE` in the envelope, in bounded time; a create that
 * answered 503 left nothing in the tables; the fleet recovers by itself; the process never crashes.
 */
import { randomBytes } from 'node:crypto';
import type { FleetError } from '@mcp-fleet/core';
import { createPostgresStore, type PostgresStore, type PostgresStoreOptions } from '@mcp-fleet/postgres';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADAPTERS, type Served, serveFleet } from './support/adapters.js';
import { DATABASE_URL, dropSchemas, sql, uniqueSchema, withoutPostgres } from './support/postgres.js';
import { type Relay, startRelay } from './support/relay.js';

const skip = withoutPostgres('PostgreSQL faults');
const hono = ADAPTERS.find((adapter) => adapter.name === 'hono') as (typeof ADAPTERS)[number];
const PASSWORD = `pw-${randomBytes(8).toString('hex')}`;
const schemas: string[] = [];

/** Whatever would have crashed the process. */
const crashes: unknown[] = [];
const crashed = (error: unknown) => crashes.push(error);

beforeAll(() => {
  process.on('unhandledRejection', crashed);
  process.on('uncaughtException', crashed);
});

afterAll(async () => {
  process.off('unhandledRejection', crashed);
  process.off('uncaughtException', crashed);
  if (!skip) await dropSchemas(...schemas);
  expect(crashes).toEqual([]);
});

/** `url` with a password the trusting test server ignores, and `application_name` set to the schema (to find our connections). */
function withPassword(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.password = PASSWORD;
  parsed.searchParams.set('application_name', schema);
  return parsed.toString();
}

interface Opened {
  schema: string;
  store: PostgresStore;
  served: Served;
  account: string;
  key: string;
  /** What the fleet told its onError (causes included), and what the store told its own. */
  fleetErrors: FleetError[];
  storeErrors: Error[];
  close(): Promise<void>;
}

async function open(label: string, optionsOf: (schema: string) => Partial<PostgresStoreOptions>): Promise<Opened> {
  const schema = uniqueSchema(label);
  schemas.push(schema);
  const storeErrors: Error[] = [];
  const store = await createPostgresStore({ schema, onError: (error) => storeErrors.push(error), ...optionsOf(schema) });
  const fleetErrors: FleetError[] = [];
  const served = await serveFleet(hono, { store, onError: (error) => void fleetErrors.push(error), webhooks: { worker: false } });
  const account = `acct${randomBytes(3).toString('hex')}`;
  const key = (await served.fleet.keys.create({ account, tier: 'pro' }))._unsafeUnwrap().secret;
  return {
    schema,
    store,
    served,
    account,
    key,
    fleetErrors,
    storeErrors,
    close: async () => {
      await served.close();
      await store.close();
    },
  };
}

interface Answer {
  method: string;
  name?: string;
  status: number | 'hang';
  body: { success: boolean; data?: { id?: string }; error?: { code: string; message: string; details: unknown }; meta?: unknown } | undefined;
  text: string;
  ms: number;
  started: number;
  ended: number;
}

/** One request, given up as a hang after `bound` ms. */
async function call(o: Opened, method: 'GET' | 'POST', path: string, body?: unknown, bound = 15_000): Promise<Answer> {
  const started = Date.now();
  const name = (body as { name?: string } | undefined)?.name;
  try {
    const res = await fetch(`${o.served.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${o.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(bound),
    });
    const text = await res.text();
    const ended = Date.now();
    return { method, ...(name && { name }), status: res.status, body: JSON.parse(text), text, ms: ended - started, started, ended };
  } catch {
    const ended = Date.now();
    return { method, ...(name && { name }), status: 'hang', body: undefined, text: '', ms: ended - started, started, ended };
  }
}

const server = (name: string) => ({ name, type: 'http', endpoint: 'https://mcp.example.com/mcp' });

/** A 503 as the contract has it: its code, generic message, empty details, the envelope's meta; never the password. */
function expectUnavailable(answer: Answer): void {
  expect(answer.status, answer.text).toBe(503);
  expect(answer.body).toEqual({
    success: false,
    error: { code: 'STORAGE_UNAVAILABLE', message: 'The storage backend is unavailable; nothing was changed.', details: {} },
    meta: { timestamp: expect.any(String), request_id: expect.any(String) },
  });
  expect(answer.text).not.toContain(PASSWORD);
}

/** What the tables hold of the account: servers' records by name, name claims, the quota set's size and members. */
async function tables(o: Opened): Promise<{ recordNames: string[]; claims: string[]; quotaSize: number; listed: string[] }> {
  const s = `"${o.schema}"`;
  const records = await sql<{ value: string }>(`SELECT value FROM ${s}.records WHERE key LIKE '%server:srv_%'`);
  const recordNames = records.map((r) => (JSON.parse(r.value) as { value: { config: { name: string }; account: string } }).value).filter((v) => v.account === o.account).map((v) => v.config.name);
  const claims = (await sql<{ key: string }>(`SELECT key FROM ${s}.claims WHERE key LIKE $1`, [`%name:${o.account}:%`])).map((r) => r.key.slice(r.key.lastIndexOf(`${o.account}:`) + o.account.length + 1));
  const quota = `servers:${o.account}`;
  const [size] = await sql<{ size: string }>(`SELECT size FROM ${s}.sets WHERE name LIKE $1`, [`%${quota}`]);
  const listed = (await sql<{ member: string }>(`SELECT member FROM ${s}.set_members WHERE set_name LIKE $1`, [`%${quota}`])).map((r) => r.member);
  return { recordNames: recordNames.sort(), claims: claims.sort(), quotaSize: Number(size?.size ?? 0), listed: listed.sort() };
}

/**
 * Checks that what answered 201 is in the tables, and what answered 503 is not: no claim, no listing, no quota count.
 * `orphans`: the record rows a 503 create may leave (its record written, then its commit and the undo both cut off:
 * the fleet writes a record before it lists it); each must be invisible: unlisted, its name unclaimed. Returns them.
 */
async function expectNothingHalfWritten(o: Opened, answers: Answer[], orphans: 'none' | 'unreachable undo' = 'none'): Promise<string[]> {
  const created = answers.filter((a) => a.method === 'POST' && a.status === 201);
  const refused = answers.filter((a) => a.method === 'POST' && a.status === 503);
  const t = await tables(o);
  const refusedNames = refused.map((a) => a.name as string);
  // A connection cut after PostgreSQL committed but before its reply came back: the create answered 503 although its
  // commit landed, and its undo could not reach the database (docs/postgres.md, "Faults"). Such a server must be
  // whole, never half-written: its name claimed, counted, listed, and its record stored.
  const landed = orphans === 'unreachable undo' ? t.claims.filter((name) => refusedNames.includes(name)) : [];
  const names = [...created.map((a) => a.name as string), ...landed].sort();
  expect(t.claims).toEqual(names);
  expect(t.quotaSize).toBe(names.length);
  const listed = created.map((a) => a.body?.data?.id as string);
  expect(t.listed.filter((id) => listed.includes(id))).toEqual([...listed].sort());
  expect(t.listed).toHaveLength(names.length);
  const left = t.recordNames.filter((name) => !names.includes(name));
  if (orphans === 'none') expect(t.recordNames).toEqual(names);
  else {
    expect(t.recordNames.filter((name) => names.includes(name))).toEqual(names);
    for (const name of left) expect(refusedNames).toContain(name);
  }
  return left;
}

/** Workers creating and listing until `stop()`; each answer kept. */
function load(o: Opened, workers: number, bound: number): { answers: Answer[]; stop(): Promise<void> } {
  const answers: Answer[] = [];
  let running = true;
  let n = 0;
  const loops = Array.from({ length: workers }, async () => {
    while (running) {
      answers.push(await call(o, 'POST', '/servers', server(`load-${n++}`), bound));
      answers.push(await call(o, 'GET', '/servers?limit=100', undefined, bound));
    }
  });
  return {
    answers,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** An ACCESS EXCLUSIVE lock on one of the schema's tables, held in a transaction of the test's own until `release()`. */
async function lockTable(schema: string, table: string): Promise<{ release(): Promise<void> }> {
  const locker = new pg.Client({ connectionString: DATABASE_URL as string });
  locker.on('error', () => {});
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query(`LOCK TABLE "${schema}".${table} IN ACCESS EXCLUSIVE MODE`);
  let released: Promise<void> | undefined;
  return { release: () => (released ??= locker.query('COMMIT').then(() => locker.end())) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every answer a 2xx or the contract's 503, none a hang or a 500; each within `bound` ms. */
function expectOnly2xxOr503(answers: Answer[], bound: number): void {
  for (const a of answers) {
    if (a.status === 503) expectUnavailable(a);
    else expect([200, 201], a.text).toContain(a.status);
    expect(a.ms).toBeLessThan(bound);
  }
}

/** The fleet's onError saw the causes: what failed, where, what fixes it; never the password. */
function expectCausesSay(o: Opened, fix: RegExp): void {
  const causes = o.fleetErrors.filter((e) => e.code === 'STORAGE_UNAVAILABLE').map((e) => String((e.cause as Error | undefined)?.message));
  expect(causes.length).toBeGreaterThan(0);
  expect(causes.some((m) => fix.test(m)), causes.join('\n')).toBe(true);
  for (const message of [...causes, ...o.storeErrors.map((e) => e.message)]) expect(message).not.toContain(PASSWORD);
}

describe.skipIf(skip)('PostgreSQL faults through HTTP', () => {
  let relay: Relay;
  beforeAll(async () => {
    relay = await startRelay(DATABASE_URL as string, 5432);
  });
  afterAll(() => relay?.close());

  it('the database gone under load: 503 STORAGE_UNAVAILABLE in bounded time, nothing half-written, and back by itself', async () => {
    const timeouts = { statementTimeoutMs: 1000, connectTimeoutMs: 1000 };
    const o = await open('outage', (schema) => ({ connectionString: withPassword(relay.url, schema), maxConnections: 4, ...timeouts }));
    // Per request: a record write, the commit and the undo may each wait a connection and a statement.
    const bound = 3 * (timeouts.connectTimeoutMs + timeouts.statementTimeoutMs + 1000) + 1000;
    try {
      const running = load(o, 4, bound);
      await sleep(800);
      // A restart: new connections refused, every backend of ours ended by the server (57P01, its transaction rolled
      // back), their connections gone; then, after a while, connections accepted again.
      relay.refuse();
      await sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [o.schema]);
      relay.cut();
      // The outage begins once the relay is cut: until then the pool's open connections still answer (the
      // terminate statement above can take a while on a loaded machine, and one CI run had a 201 in that gap).
      const cutAt = Date.now();
      await sleep(2500);
      relay.restore();
      const restoredAt = Date.now();
      // Back by itself, the same fleet: a create answers 201 again.
      await expect.poll(async () => (await call(o, 'POST', '/servers', server(`probe-${Date.now()}`), bound)).status, { timeout: 10_000, interval: 100 }).toBe(201);
      await sleep(500);
      await running.stop();

      const answers = running.answers;
      expectOnly2xxOr503(answers, bound);
      const during = answers.filter((a) => a.started > cutAt + 50 && a.ended < restoredAt);
      expect(during.length).toBeGreaterThan(0);
      for (const a of during) expectUnavailable(a);
      expect(answers.some((a) => a.status === 201 && a.started < cutAt)).toBe(true);
      expect(answers.some((a) => a.status === 201 && a.started > restoredAt)).toBe(true);
      expectCausesSay(o, new RegExp(`PostgreSQL 127\\.0\\.0\\.1:\\d+/\\w+: .* failed: .*check that the database runs`));

      // Every server listed, page by page: a quiet machine makes more than a page of creates.
      const probes: { data: { name: string; id: string }[] } = { data: [] };
      for (let page = 1; ; page++) {
        const { data } = (await call(o, 'GET', `/servers?limit=100&page=${page}`)).body as unknown as { data: { name: string; id: string }[] };
        probes.data.push(...data);
        if (data.length < 100) break;
      }
      const creates = [...answers, ...probes.data.filter((s) => s.name.startsWith('probe-')).map((s) => ({ method: 'POST', name: s.name, status: 201, body: { success: true, data: { id: s.id } } }) as Answer)];
      const orphans = await expectNothingHalfWritten(o, creates, 'unreachable undo');
      // Their names are free: a create of each answers 201.
      for (const name of orphans) expect((await call(o, 'POST', '/servers', server(name))).status).toBe(201);
      // Listing agrees with the tables.
      expect(probes.data.map((s) => s.name).sort()).toEqual(creates.filter((a) => a.method === 'POST' && a.status === 201).map((a) => a.name).sort());
    } finally {
      await o.close();
    }
  });

  it('its connections terminated as a restart does (57P01): statements are tried again on new connections, every answer a 2xx or a 503, nothing half-written', async () => {
    const o = await open('terminate', (schema) => ({ connectionString: withPassword(DATABASE_URL as string, schema), maxConnections: 4, statementTimeoutMs: 1000, connectTimeoutMs: 1000 }));
    const bound = 10_000;
    try {
      const running = load(o, 4, bound);
      let terminated = 0;
      for (let round = 0; round < 5; round++) {
        await sleep(300);
        // Only this test's own connections: application_name is its schema.
        const rows = await sql<{ ok: boolean }>(`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`, [o.schema]);
        terminated += rows.length;
      }
      await sleep(500);
      await running.stop();
      const answers = running.answers;
      expect(terminated).toBeGreaterThan(0);
      expectOnly2xxOr503(answers, bound);
      // After the last termination the pool made new connections by itself.
      const last = answers.slice(-8);
      expect(last.some((a) => a.status === 201 || a.status === 200)).toBe(true);
      const after = await call(o, 'POST', '/servers', server('after-terminate'));
      expect(after.status).toBe(201);
      await expectNothingHalfWritten(o, [...answers, after]);
    } finally {
      await o.close();
    }
  });

  it("an exhausted pool (the embedder's, max 1, no wait limit of its own): 503 after connectTimeoutMs, naming the option; never a hang", async () => {
    const pool = new pg.Pool({ connectionString: withPassword(DATABASE_URL as string, 'exhausted'), max: 1 });
    pool.on('error', () => {});
    const o = await open('exhausted', () => ({ pool, connectTimeoutMs: 700, statementTimeoutMs: 1000 }));
    try {
      const held = await pool.connect();
      const answer = await call(o, 'GET', '/servers', undefined, 10_000);
      expectUnavailable(answer);
      expect(answer.ms).toBeGreaterThanOrEqual(650);
      expect(answer.ms).toBeLessThan(5000);
      expectCausesSay(o, /no connection of the given pool came free within connectTimeoutMs \(700 ms.*raise the pool's max or connectTimeoutMs/);
      const refused = await call(o, 'POST', '/servers', server('while-exhausted'), 10_000);
      expectUnavailable(refused);
      held.release();
      // The waits given up on ran nothing when the connection came free: the create that answered 503 wrote nothing.
      await sleep(300);
      const created = await call(o, 'POST', '/servers', server('after-release'));
      expect(created.status, created.text).toBe(201);
      await expectNothingHalfWritten(o, [refused, created]);
    } finally {
      await o.close();
      await pool.end();
    }
  });

  it("the store's own pool exhausted by statements a lock holds: 503 after connectTimeoutMs naming maxConnections, 503 after statementTimeoutMs naming the lock; the lock's release lets things continue", async () => {
    const o = await open('locked', (schema) => ({ connectionString: withPassword(DATABASE_URL as string, schema), maxConnections: 1, connectTimeoutMs: 500, statementTimeoutMs: 1500 }));
    let lock: { release(): Promise<void> } | undefined;
    try {
      expect((await call(o, 'GET', '/servers')).status).toBe(200);
      lock = await lockTable(o.schema, 'records');
      // The first holds the pool's one connection, blocked by the lock until the statement timeout; the second waits
      // for a connection and gives up first.
      const [blocked, waiting] = await Promise.all([call(o, 'POST', '/servers', server('blocked'), 15_000), sleep(100).then(() => call(o, 'GET', '/servers', undefined, 15_000))]);
      expectUnavailable(blocked);
      expectUnavailable(waiting);
      expect(waiting.ms).toBeLessThan(blocked.ms);
      expect(blocked.ms).toBeGreaterThanOrEqual(1400);
      expect(blocked.ms).toBeLessThan(10_000);
      expectCausesSay(o, /no connection of the pool came free within connectTimeoutMs \(500 ms; all 1 busy.*raise maxConnections or connectTimeoutMs/);
      expectCausesSay(o, /ran longer than statementTimeoutMs \(1500 ms\) and was cancelled: look for a lock/);
      await lock.release();
      const created = await call(o, 'POST', '/servers', server('after-lock'));
      expect(created.status, created.text).toBe(201);
      await expectNothingHalfWritten(o, [blocked, created]);
    } finally {
      await lock?.release();
      await o.close();
    }
  });

  it("a statement on the embedder's pool (no statement_timeout of its own) held by a lock: 503 at statementTimeoutMs, cancelled on the server, so the lock's release writes nothing late", async () => {
    const pool = new pg.Pool({ connectionString: withPassword(DATABASE_URL as string, 'given'), max: 4 });
    pool.on('error', () => {});
    const o = await open('given', () => ({ pool, connectTimeoutMs: 1000, statementTimeoutMs: 1000 }));
    let lock: { release(): Promise<void> } | undefined;
    try {
      lock = await lockTable(o.schema, 'claims');
      const blocked = await call(o, 'POST', '/servers', server('blocked'), 15_000);
      expectUnavailable(blocked);
      expect(blocked.ms).toBeLessThan(8000);
      expectCausesSay(o, /ran longer than statementTimeoutMs \(1000 ms\)/);
      await lock.release();
      await sleep(500);
      await expectNothingHalfWritten(o, [blocked]);
      const created = await call(o, 'POST', '/servers', server('after-lock'));
      expect(created.status, created.text).toBe(201);
    } finally {
      await lock?.release();
      await o.close();
      await pool.end();
    }
  });
});

describe.skipIf(skip)('pool errors never crash the process', () => {
  it.each([
    ['a pool the store made', undefined],
    ["the embedder's pool without a listener of its own", 'none'],
    ["the embedder's pool with its own listener, which still hears every error", 'own'],
  ] as const)('%s: idle connections terminated', async (_, given) => {
    const schema = uniqueSchema('idle');
    schemas.push(schema);
    const url = withPassword(DATABASE_URL as string, schema);
    const pool = given === undefined ? undefined : new pg.Pool({ connectionString: url, max: 3 });
    const embedderHeard: Error[] = [];
    if (given === 'own') pool?.on('error', (error) => embedderHeard.push(error));
    const storeErrors: Error[] = [];
    const store = await createPostgresStore({ schema, ...(pool ? { pool } : { connectionString: url }), onError: (error) => storeErrors.push(error) });
    try {
      // Three idle connections in the pool.
      await Promise.all([1, 2, 3].map((i) => store.records.set(`k${i}`, i)));
      const [{ n }] = (await sql<{ n: number }>(`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1`, [schema])) as [{ n: number }];
      expect(n).toBeGreaterThan(0);
      await expect.poll(() => storeErrors.length).toBeGreaterThan(0);
      for (const error of storeErrors) expect(error.message).not.toContain(PASSWORD);
      expect(storeErrors[0]?.message).toMatch(/^PostgreSQL 127\.0\.0\.1:5432\/test: a pooled connection failed: /);
      if (given === 'own') expect(embedderHeard.length).toBe(storeErrors.length);
      // And the store goes on, on new connections.
      expect(await store.records.get('k1')).toBe(1);
    } finally {
      await store.close();
      // Closed, the store no longer listens on a given pool: the embedder's listeners are as they were.
      if (pool !== undefined) {
        expect(pool.listenerCount('error')).toBe(given === 'own' ? 1 : 0);
        pool.on('error', () => {});
        await pool.end();
      }
    }
  });
});

