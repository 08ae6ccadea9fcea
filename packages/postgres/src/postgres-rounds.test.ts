import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropSchemas, sql, uniqueSchema, withoutPostgres } from '../../../test/support/postgres.js';
import { createPostgresStore } from './index.js';

/**
 * A group of index commits is checked and written statement by statement over all of them (`commit_items_locked`,
 * migration 6), in rounds of commits that touch no claim key or set member in common: every answer and every row must
 * be what checking and writing them one after another gives.
 */
const skip = withoutPostgres('index commits checked and written in rounds');
const schemas: string[] = [];

afterAll(async () => {
  if (!skip) await dropSchemas(...schemas);
});

/** A migrated schema of its own. */
async function migrated(label: string): Promise<string> {
  const schema = uniqueSchema(label);
  schemas.push(schema);
  await (await createPostgresStore({ connectionString: DATABASE_URL as string, schema, sweepIntervalMs: 0 })).close();
  return schema;
}

/** Every claim (its owner and since) and every set (its size and members in order) of a schema, to compare two. */
async function contents(client: pg.Client, schema: string): Promise<unknown> {
  const rows = async (text: string) => (await client.query(text)).rows;
  return {
    claims: await rows(`SELECT key, owner, since::text FROM "${schema}".claims ORDER BY key`),
    sets: await rows(`SELECT name, size::int FROM "${schema}".sets ORDER BY name`),
    members: await rows(`SELECT set_name, member, score FROM "${schema}".set_members ORDER BY set_name, score, member`),
  };
}

/** A small random generator (mulberry32), so that a failing seed can be run again. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A commit as `commit_index` takes it, drawn from few keys, owners, sets and members so that commits of one group
 * collide often: claims (some replacing an owner), releases, additions (a member twice, some re-scored), removals and
 * limits near the sets' sizes.
 */
function drawCommit(next: () => number): object {
  const pick = <T>(of: readonly T[]) => of[Math.floor(next() * of.length)] as T;
  const some = <T>(most: number, make: () => T) => Array.from({ length: Math.floor(next() * (most + 1)) }, make);
  const keys = ['k0', 'k1', 'k2', 'k3'];
  const owners = ['o0', 'o1', 'o2'];
  const sets = ['s0', 's1', 's2'];
  const members = ['m0', 'm1', 'm2', 'm3', 'm4'];
  return {
    claims: some(2, () => ({ key: pick(keys), owner: pick(owners), ...(next() < 0.3 && { replacing: pick(owners) }) })),
    releases: some(1, () => ({ key: pick(keys), owner: pick(owners) })),
    add: some(3, () => ({ set: pick(sets), member: pick(members), score: String(Math.floor(next() * 4)) })),
    remove: some(2, () => ({ set: pick(sets), member: pick(members) })),
    limits: some(2, () => ({ set: pick(sets), max: Math.floor(next() * 6) })),
  };
}

describe.skipIf(skip)('index commits checked and written in rounds', () => {
  it('a group answers and writes what its commits give one after another (random groups over few keys and members)', async () => {
    const grouped = await migrated('rounds_grouped');
    const alone = await migrated('rounds_alone');
    const client = new pg.Client({ connectionString: DATABASE_URL as string });
    await client.connect();
    const next = random(27);
    const seen: unknown[] = [];
    for (let group = 0; group < 40; group++) {
      const commits = Array.from({ length: 1 + Math.floor(next() * 12) }, () => drawCommit(next));
      // claimed_at given, so that the claims' since compare across the two schemas.
      const items = commits.map((tx, i) => ({ tx, claimed_at: 1000 * group + i }));
      const [row] = (await client.query<{ answers: unknown[] }>(`SELECT "${grouped}".commit_batch($1::jsonb, '{}', '{}', '{}') AS answers`, [JSON.stringify(items)])).rows;
      const oneByOne: unknown[] = [];
      for (const { tx, claimed_at } of items) {
        const [answer] = (await client.query<{ answer: unknown }>(`SELECT "${alone}".commit_index($1::jsonb, $2::bigint) AS answer`, [JSON.stringify(tx), claimed_at])).rows;
        oneByOne.push(answer?.answer);
      }
      expect(row?.answers, `group ${group}: ${JSON.stringify(commits)}`).toEqual(oneByOne);
      seen.push(...oneByOne);
      expect(await contents(client, grouped), `group ${group}`).toEqual(await contents(client, alone));
    }
    await client.end();
    // The draws reached every kind of answer.
    expect(seen).toContainEqual({ ok: true });
    expect(seen).toContainEqual(expect.objectContaining({ ok: false, conflict: expect.any(Number) }));
    expect(seen).toContainEqual(expect.objectContaining({ ok: false, full: expect.any(Number) }));
  });

  it('a group of creates touching nothing in common is checked and written by one call, not one call per create', async () => {
    const schema = await migrated('rounds_one_call');
    const items = Array.from({ length: 16 }, (_, i) => ({
      tx: {
        claims: [{ key: `name:acme:s${i}`, owner: `srv_${i}` }],
        add: ['servers:acme', 'servers:acme:type:http', 'servers-all'].map((set) => ({ set, member: `srv_${i}`, score: String(i) })),
        limits: [
          { set: 'servers:acme', max: 10 },
          { set: 'webhooks:acme', max: 1 },
        ],
      },
      claimed_at: null,
    }));
    const client = new pg.Client({ connectionString: DATABASE_URL as string });
    await client.connect();
    try {
      await client.query(`SET track_functions = 'all'`);
      await client.query('BEGIN');
      const { rows } = await client.query<{ answers: unknown[] }>(`SELECT "${schema}".commit_batch($1::jsonb, '{}', '{}', '{}') AS answers`, [JSON.stringify(items)]);
      const calls = await client.query<{ funcname: string; calls: string }>(`SELECT funcname, calls FROM pg_stat_xact_user_functions WHERE schemaname = $1 ORDER BY funcname`, [schema]);
      await client.query('COMMIT');
      // The quota of 10 counts the group's own additions: the eleventh and after are refused, each naming its limit.
      expect(rows[0]?.answers).toEqual([...Array(10).fill({ ok: true }), ...Array(6).fill({ ok: false, full: 1 })]);
      const called = Object.fromEntries(calls.rows.map((r) => [r.funcname, Number(r.calls)]));
      expect(called.commit_index_locked).toBeUndefined();
      // Checked and written together (in rounds inside the one call), not by a call per create.
      expect(called.commit_items_locked).toBe(1);
    } finally {
      await client.end();
    }
    expect(await sql(`SELECT name, size::int FROM "${schema}".sets ORDER BY name`)).toEqual([
      { name: 'servers-all', size: 10 },
      { name: 'servers:acme', size: 10 },
      { name: 'servers:acme:type:http', size: 10 },
    ]);
  });
});
