import { createFleet } from '@mcp-fleet/core';
import { rateLimitStoreContract } from '@mcp-fleet/core/testing';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropSchemas, notingPool, sql, uniqueSchema, withoutPostgres } from '../../../test/support/postgres.js';
import { MAX_DECISIONS } from './connection.js';
import { createPostgresStore } from './index.js';

const skip = withoutPostgres('PostgresRateLimitStore');
const connectionString = DATABASE_URL as string;
const schema = uniqueSchema('ratelimit');

afterAll(async () => {
  if (!skip) await dropSchemas(schema);
});

describe.skipIf(skip)('PostgresRateLimitStore on a real PostgreSQL', () => {
  // Counter keys are unique to each case; every store of the file shares the schema, as processes would.
  rateLimitStoreContract('PostgresRateLimitStore', async () => {
    const store = await createPostgresStore({ connectionString, schema, sweepIntervalMs: 0 });
    return { consume: (counters, expiresAt, cost) => store.rateLimits.consume(counters, expiresAt, cost), close: store.close };
  });

  it('two stores (two pools) admit exactly the limit between them; a refusal writes no row', async () => {
    const stores = [await createPostgresStore({ connectionString, schema, sweepIntervalMs: 0 }), await createPostgresStore({ connectionString, schema, sweepIntervalMs: 0 })];
    const expiresAt = Date.now() + 60_000;
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => (stores[i % 2] as (typeof stores)[number]).rateLimits.consume([{ key: 'two:op', limit: 20 }, { key: 'two:tier', limit: 1000 }], expiresAt)),
    );
    expect(results.filter((r) => r.allowed)).toHaveLength(20);
    expect(await stores[0]?.rateLimits.consume([{ key: 'two:absent', limit: 0 }, { key: 'two:fresh', limit: 5 }], expiresAt)).toEqual({ allowed: false, counts: [0, 0] });
    expect(await sql(`SELECT key, count FROM "${schema}".counters WHERE key LIKE 'two:%' ORDER BY key`)).toEqual([
      { key: 'two:op', count: '20' },
      { key: 'two:tier', count: '20' },
    ]);
    for (const store of stores) await store.close();
  });

  it('sweep deletes expired counters only', async () => {
    const store = await createPostgresStore({ connectionString, schema, sweepIntervalMs: 0 });
    await store.rateLimits.consume([{ key: 'sweep:short', limit: 5 }], Date.now() + 50);
    await store.rateLimits.consume([{ key: 'sweep:long', limit: 5 }], Date.now() + 60_000);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await store.sweep()).toBeGreaterThanOrEqual(1);
    expect((await sql<{ key: string }>(`SELECT key FROM "${schema}".counters WHERE key LIKE 'sweep:%'`)).map((r) => r.key)).toEqual(['sweep:long']);
    await store.close();
  });

  it('a record read and a decision asked for in the same turn are one statement, each answered as if alone; a failed decision fails only itself', async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const store = await createPostgresStore({ pool, schema, sweepIntervalMs: 0 });
    await store.records.set('pair:one', { n: 1 });
    const expiresAt = Date.now() + 60_000;
    sent.length = 0;
    const [read, admitted] = await Promise.all([store.records.get('pair:one'), store.rateLimits.consume([{ key: 'pair:op', limit: 1 }], expiresAt)]);
    expect(read).toEqual({ n: 1 });
    expect(admitted).toEqual({ allowed: true, counts: [1] });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/\.consume_batch\(.*FROM .*\.records r/s);
    // A refusal still answers the read; an absent record reads as undefined.
    sent.length = 0;
    const [absent, refused] = await Promise.all([store.records.get('pair:absent'), store.rateLimits.consume([{ key: 'pair:op', limit: 1 }], expiresAt)]);
    expect(absent).toBeUndefined();
    expect(refused).toEqual({ allowed: false, counts: [1] });
    expect(sent).toHaveLength(1);
    // Three reads and two decisions of one turn (requests answered together): both decisions in one statement with
    // the first two reads (the n-th read with the n-th decision), the read left over alone; every answer its own.
    sent.length = 0;
    await store.records.set('pair:two', 'two');
    sent.length = 0;
    const five = await Promise.all([
      store.records.get('pair:one'),
      store.records.get('pair:two'),
      store.records.get('pair:absent'),
      store.rateLimits.consume([{ key: 'pair:a', limit: 5 }], expiresAt),
      store.rateLimits.consume([{ key: 'pair:b', limit: 5 }], expiresAt, 2),
    ]);
    expect(five).toEqual([{ n: 1 }, 'two', undefined, { allowed: true, counts: [1] }, { allowed: true, counts: [2] }]);
    expect(sent).toHaveLength(2);
    expect(sent.filter((text) => /\.consume_batch\(.*= ANY\(/s.test(text))).toHaveLength(1);
    // A decision that fails (a cost PostgreSQL's bigint cannot hold, refused by the server) fails only itself: the
    // read is sent again alone and answered (a limiter that fails open then admits the request).
    sent.length = 0;
    const failed = await Promise.allSettled([store.records.get('pair:one'), store.rateLimits.consume([{ key: 'pair:c', limit: 5 }], expiresAt, Number.MAX_VALUE)]);
    expect(failed[0]).toEqual({ status: 'fulfilled', value: { n: 1 } });
    expect(String((failed[1] as PromiseRejectedResult).reason)).toMatch(/a key read and a rate-limit decision failed/);
    expect(sent).toHaveLength(2);
    await store.close();
    await pool.end();
  });

  it("the handler's key read and its admission go out as one statement: an authenticated, limited GET of a server is 2", async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const store = await createPostgresStore({ pool, schema, sweepIntervalMs: 0 });
    const fleet = createFleet({ store, webhooks: false, monitor: false, rateLimit: { tiers: { pro: 1000 }, operations: { 'servers.get': 1000 } } });
    await fleet.ready();
    const { secret } = (await fleet.keys.create({ account: 'pair-acct', tier: 'pro' }))._unsafeUnwrap();
    const made = (await fleet.servers.create('pair-acct', { name: 'pair', type: 'http', endpoint: 'https://mcp.example.com/mcp' }))._unsafeUnwrap();
    const get = () => fleet.handle(new Request(`http://fleet.test/v1/servers/${made.id}`, { headers: { authorization: `Bearer ${secret}` } }));
    // The first request verifies the key (the principal is not known yet); from the second on, both go together.
    expect((await get()).status).toBe(200);
    sent.length = 0;
    const response = await get();
    expect(response.status).toBe(200);
    expect(response.headers.get('x-ratelimit-remaining')).toBe('998');
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatch(/\.consume_batch\(.*FROM .*\.records r/s);
    await fleet.close();
    await store.close();
    await pool.end();
  });

  /** Holds the lock of a counter (as `consume_batch` takes it) in an open transaction of a connection of its own, until `release`. */
  async function holdCounter(key: string): Promise<{ release: () => Promise<void> }> {
    const client = new pg.Client({ connectionString });
    await client.connect();
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtextextended($1 || $2, 0))`, [`${schema}:counter:`, key]);
    return {
      release: async () => {
        await client.query('COMMIT');
        await client.end();
      },
    };
  }

  /** Waits until some backend waits on an advisory lock (the decision in flight is held). */
  async function untilWaiting(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const [row] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event = 'advisory' AND query LIKE '%consume_batch%'`);
      if ((row?.n ?? 0) > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('no decision came to wait on the held counter');
  }

  it('decisions asked for while one is in flight go out together as one statement, decided in order, each with its key read', async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const store = await createPostgresStore({ pool, schema, sweepIntervalMs: 0 });
    const other = await createPostgresStore({ connectionString, schema, sweepIntervalMs: 0 });
    await store.records.set('group:key', { k: 1 });
    const expiresAt = Date.now() + 60_000;
    const counters = [
      { key: 'group:op', limit: 4 },
      { key: 'group:tier', limit: 100 },
    ];
    sent.length = 0;
    const held = await holdCounter('group:op');
    // One pair in flight (waiting on the held lock), then five more pairs, each in a turn of its own.
    const first = Promise.all([store.records.get('group:key'), store.rateLimits.consume(counters, expiresAt)]);
    await untilWaiting();
    const later: Promise<[unknown, Awaited<ReturnType<typeof store.rateLimits.consume>>]>[] = [];
    for (let i = 0; i < 5; i++) {
      later.push(Promise.all([store.records.get(i === 4 ? 'group:absent' : 'group:key'), store.rateLimits.consume(counters, expiresAt, i === 2 ? 0 : 1)]));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await held.release();
    const answers = await Promise.all([first, ...later]);
    expect(answers.map(([read]) => read)).toEqual([{ k: 1 }, { k: 1 }, { k: 1 }, { k: 1 }, { k: 1 }, undefined]);
    // Decided in the order asked for, each seeing the counts the earlier ones left: the one of cost 0 always has room,
    // the last finds the operation's counter full and writes nothing.
    expect(answers.map(([, d]) => d)).toEqual([
      { allowed: true, counts: [1, 1] },
      { allowed: true, counts: [2, 2] },
      { allowed: true, counts: [3, 3] },
      { allowed: true, counts: [3, 3] },
      { allowed: true, counts: [4, 4] },
      { allowed: false, counts: [4, 4] },
    ]);
    expect(sent).toHaveLength(2);
    expect(sent[1]).toMatch(/\.consume_batch\(.*= ANY\(/s);
    expect(await sql(`SELECT key, count FROM "${schema}".counters WHERE key LIKE 'group:%' ORDER BY key`)).toEqual([
      { key: 'group:op', count: '4' },
      { key: 'group:tier', count: '4' },
    ]);
    // Another process (another pool) then counts on from there.
    expect(await other.rateLimits.consume(counters, expiresAt)).toEqual({ allowed: false, counts: [4, 4] });
    await other.close();
    await store.close();
    await pool.end();
  });

  it('a failed statement of decisions fails each of its decisions and writes nothing; their key reads are sent again alone', async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    // Decisions that wait on a held counter past the statement's deadline fail: the server cancels them (57014).
    const store = await createPostgresStore({ pool, schema, sweepIntervalMs: 0, statementTimeoutMs: 300 });
    await store.records.set('fail:key', 'key');
    const expiresAt = Date.now() + 60_000;
    const held = await holdCounter('fail:op');
    const first = Promise.allSettled([store.rateLimits.consume([{ key: 'fail:op', limit: 5 }], expiresAt)]);
    await untilWaiting();
    sent.length = 0;
    const together = Promise.allSettled([store.records.get('fail:key'), store.rateLimits.consume([{ key: 'fail:op', limit: 5 }], expiresAt)]);
    await new Promise((resolve) => setImmediate(resolve));
    const other = Promise.allSettled([store.rateLimits.consume([{ key: 'fail:op', limit: 5 }], expiresAt)]);
    const [[firstDecision], [read, decision], [otherDecision]] = await Promise.all([first, together, other]);
    await held.release();
    expect(firstDecision?.status).toBe('rejected');
    expect(read).toEqual({ status: 'fulfilled', value: 'key' });
    expect(String((decision as PromiseRejectedResult).reason)).toMatch(/2 rate-limit decisions and their key reads failed: .*statementTimeoutMs/);
    expect(otherDecision?.status).toBe('rejected');
    // The two together in one statement, not sent again; then the read alone.
    expect(sent.filter((text) => /consume_batch/.test(text))).toHaveLength(1);
    expect(sent.filter((text) => /^SELECT r\.value/.test(text))).toHaveLength(1);
    expect(await sql(`SELECT count FROM "${schema}".counters WHERE key = 'fail:op'`)).toEqual([]);
    // The next decision goes out at once, alone, and finds the counter as the failed ones left it: untouched.
    expect(await store.rateLimits.consume([{ key: 'fail:op', limit: 5 }], expiresAt)).toEqual({ allowed: true, counts: [1] });
    await store.close();
    await pool.end();
  });

  it('a decision whose data the server refuses fails alone: the others of its statement are decided again, one by one, in order', async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const store = await createPostgresStore({ pool, schema, sweepIntervalMs: 0 });
    await store.records.set('data:key', 'key');
    const expiresAt = Date.now() + 60_000;
    const held = await holdCounter('data:op');
    const first = store.rateLimits.consume([{ key: 'data:op', limit: 5 }], expiresAt);
    await untilWaiting();
    sent.length = 0;
    // Three decisions wait together; the second has a cost PostgreSQL's bigint cannot hold (22P02).
    const good = Promise.allSettled([store.records.get('data:key'), store.rateLimits.consume([{ key: 'data:op', limit: 5 }], expiresAt)]);
    await new Promise((resolve) => setImmediate(resolve));
    const bad = Promise.allSettled([store.rateLimits.consume([{ key: 'data:op', limit: 5 }], expiresAt, Number.MAX_VALUE)]);
    await new Promise((resolve) => setImmediate(resolve));
    const last = store.rateLimits.consume([{ key: 'data:op', limit: 5 }, { key: 'data:tier', limit: 1e30 }], expiresAt);
    await held.release();
    expect(await first).toEqual({ allowed: true, counts: [1] });
    const [[read, decision], [badDecision]] = await Promise.all([good, bad]);
    expect(read).toEqual({ status: 'fulfilled', value: 'key' });
    expect(decision).toEqual({ status: 'fulfilled', value: { allowed: true, counts: [2] } });
    expect(String((badDecision as PromiseRejectedResult).reason)).toMatch(/a rate-limit decision failed: .*bigint/);
    // A limit beyond bigint's range is no limit, not an error.
    expect(await last).toEqual({ allowed: true, counts: [3, 1] });
    // The three together, then each alone (the first with the read), in the order asked for.
    expect(sent.filter((text) => /consume_batch/.test(text))).toHaveLength(4);
    expect(await sql(`SELECT count FROM "${schema}".counters WHERE key = 'data:op'`)).toEqual([{ count: '3' }]);
    await store.close();
    await pool.end();
  });

  it('one statement carries at most MAX_DECISIONS decisions; more go in the next', async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const store = await createPostgresStore({ pool, schema, sweepIntervalMs: 0 });
    const expiresAt = Date.now() + 60_000;
    const held = await holdCounter('cap:op');
    const first = store.rateLimits.consume([{ key: 'cap:op', limit: 1000 }], expiresAt);
    await untilWaiting();
    sent.length = 0;
    const rest = Array.from({ length: MAX_DECISIONS + 10 }, () => store.rateLimits.consume([{ key: 'cap:op', limit: 1000 }], expiresAt));
    await held.release();
    await first;
    const counts = (await Promise.all(rest)).map((d) => d.counts[0]);
    expect(counts).toEqual(Array.from({ length: MAX_DECISIONS + 10 }, (_, i) => i + 2));
    expect(sent.filter((text) => /consume_batch/.test(text))).toHaveLength(2);
    await store.close();
    await pool.end();
  });

  it('an account flooding the store waits behind its own decisions: another account\'s goes out in the next statement', async () => {
    const sent: string[] = [];
    const pool = notingPool(sent);
    const store = await createPostgresStore({ pool, schema, sweepIntervalMs: 0 });
    const expiresAt = Date.now() + 60_000;
    const held = await holdCounter('fair:held');
    const first = store.rateLimits.consume([{ key: 'fair:held', limit: 1000 }], expiresAt);
    await untilWaiting();
    sent.length = 0;
    // Three statements' worth of one account's decisions (its operation's counter, then its tier's, as the limiter
    // orders them), then one decision of another account.
    let floodDecided = 0;
    const flood = Array.from({ length: 3 * MAX_DECISIONS }, () =>
      store.rateLimits.consume([{ key: 'fair:flood:op', limit: 10_000 }, { key: 'fair:flood:tier', limit: 10_000 }], expiresAt).then((result) => {
        floodDecided++;
        return result;
      }),
    );
    const quiet = store.rateLimits.consume([{ key: 'fair:quiet:tier', limit: 10 }], expiresAt).then((result) => ({ result, floodDecidedBefore: floodDecided }));
    await held.release();
    await first;
    const [decided, { result, floodDecidedBefore }] = await Promise.all([Promise.all(flood), quiet]);
    expect(result).toEqual({ allowed: true, counts: [1] });
    // The quiet account's decision went in the first statement after the one in flight, beside the flood's first
    // MAX_DECISIONS - 1 (on main it waited for all three of the flood's statements).
    expect(floodDecidedBefore).toBeLessThan(MAX_DECISIONS);
    // The flood's own decisions kept the order they were asked in, and no statement carried more than the cap.
    expect(decided.map((d) => d.counts)).toEqual(Array.from({ length: 3 * MAX_DECISIONS }, (_, i) => [i + 1, i + 1]));
    expect(sent.filter((text) => /consume_batch/.test(text))).toHaveLength(4);
    await store.close();
    await pool.end();
  });
});
