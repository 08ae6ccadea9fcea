import type { Claim, CommitResult, IndexStore, IndexTransaction, JointPage, RangeOptions, RecordWrite } from '@mcp-fleet/core';
import { transactionParts } from '@mcp-fleet/core';
import type Keyv from 'keyv';
import type { Connection } from './connection.js';
import { LIVE } from './connection.js';

/** A score as the commit function reads it: text, so that ±Infinity survive JSON. */
function scoreText(score: number): string {
  if (Number.isNaN(score)) throw new TypeError('an index score must be a number, not NaN');
  return String(score);
}

type Answer = { ok: true } | { ok: false; conflict: number; owner: string; since: string | number } | { ok: false; full: number };

/**
 * The IndexStore in PostgreSQL: claims in `claims`, ordered sets in `set_members` with their sizes in `sets`. A commit
 * is one call of `commit_index` (docs/postgres.md): it locks what it touches in one fixed order, checks every claim
 * and every limit, and writes only if all pass. Reads are single statements and take no lock.
 */
export class PostgresIndexStore implements IndexStore {
  constructor(
    private readonly connection: Connection,
    /** Clock of the `since` of claims; `undefined`: the database's, which every process shares. */
    private readonly now?: () => number,
    /**
     * The store's records Keyv (over the table `records`): `commitWithRecords` writes its records as it would, and
     * `readPage` decodes them as it would. Absent: neither is offered.
     */
    readonly jointRecords?: Keyv,
  ) {}

  async commit(tx: IndexTransaction): Promise<CommitResult> {
    return this.commitWithRecords(tx, []);
  }

  /**
   * `commit(tx)` and, only if it goes through, `records` written in the same transaction: one call of
   * `commit_with_records` (docs/postgres.md). Without records, one call of `commit_index`.
   */
  async commitWithRecords(tx: IndexTransaction, records: readonly RecordWrite[]): Promise<CommitResult> {
    // A limit of Infinity is none (`transactionParts` leaves it out).
    const { claims, releases, remove: removals, add: additions, limits, empty } = transactionParts(tx);
    if (empty && records.length === 0) return { ok: true };
    for (const { max } of limits) if (Number.isNaN(max)) throw new TypeError('a limit must be a number, not NaN');
    const body = {
      claims: claims.map(({ key, owner, replacing }) => ({ key, owner, replacing })),
      releases: releases.map(({ key, owner }) => ({ key, owner })),
      add: additions.map(({ set, member, score }) => ({ set, member, score: scoreText(score) })),
      remove: removals.map(({ set, member }) => ({ set, member })),
      limits: limits.map(({ set, max }) => ({ set, max: max === -Infinity ? -1 : max })),
    };
    const since = this.now === undefined ? null : String(Math.trunc(this.now()));
    const { s } = this.connection;
    let answer: Answer | undefined;
    if (records.length === 0) {
      const [row] = await this.connection.query<{ answer: Answer }>('a commit', `SELECT ${s}.commit_index($1::jsonb, $2::bigint) AS answer`, [JSON.stringify(body), since], false);
      answer = row?.answer;
    } else {
      const keyv = this.jointRecords;
      if (keyv === undefined) throw new Error('this PostgresIndexStore has no records to write');
      // Each value as Keyv would store it (`keyv.set`): its serialised `{ value }`, no expiry.
      const values = await Promise.all(records.map(async ({ value }) => text(await keyv.serializeData({ value, expires: undefined }))));
      const [row] = await this.connection.query<{ answer: Answer }>(
        'a commit',
        `SELECT ${s}.commit_with_records($1::jsonb, $2::bigint, $3::text[], $4::text[]) AS answer`,
        [JSON.stringify(body), since, records.map(({ key }) => key), values],
        false,
      );
      answer = row?.answer;
    }
    if (answer === undefined) throw new Error('commit_index gave no answer');
    if (answer.ok) return { ok: true };
    if ('full' in answer) {
      const limit = limits[answer.full - 1];
      if (limit === undefined) throw new Error('commit_index named a limit that was not in the transaction');
      return { ok: false, full: { set: limit.set, max: limit.max } };
    }
    const claim = claims[answer.conflict - 1];
    if (claim === undefined) throw new Error('commit_index named a claim that was not in the transaction');
    return { ok: false, conflict: { key: claim.key, owner: answer.owner, since: Number(answer.since) } };
  }

  /**
   * The set's size, a range of its members and the live record of each (`keyPrefix + member`), in one statement;
   * each record decoded by the records' Keyv (its decode cache included).
   */
  async readPage<T>(set: string, { offset, limit, order = 'asc' }: RangeOptions, keyPrefix: string): Promise<JointPage<T>> {
    const keyv = this.jointRecords;
    if (keyv === undefined) throw new Error('this PostgresIndexStore has no records to read');
    const { s } = this.connection;
    const direction = order === 'desc' ? 'DESC' : 'ASC';
    const rows = await this.connection.query<{ total: string | null; member: string | null; value: string | null }>(
      'a page read',
      `SELECT t.size AS total, p.member, r.value
         FROM (SELECT (SELECT size FROM ${s}.sets WHERE name = $1) AS size) t
         LEFT JOIN LATERAL (SELECT member, score FROM ${s}.set_members WHERE set_name = $1 ORDER BY score ${direction}, member ${direction} LIMIT $2 OFFSET $3) p ON true
         LEFT JOIN ${s}.records r ON r.key = $4 || p.member AND ${LIVE}
        ORDER BY p.score ${direction}, p.member ${direction}`,
      [set, String(limit >= 1 ? bound(limit) : 0), String(bound(offset)), keyPrefix],
    );
    const total = Number(rows[0]?.total ?? 0);
    const ids: string[] = [];
    const found: (T | undefined)[] = [];
    for (const row of rows) {
      if (row.member === null) continue;
      ids.push(row.member);
      found.push(row.value === null ? undefined : await decoded<T>(keyv, row.value));
    }
    return { total, ids, found };
  }

  async claimOf(key: string): Promise<Claim | undefined> {
    const rows = await this.connection.query<{ owner: string; since: string }>('a claim read', `SELECT owner, since FROM ${this.connection.s}.claims WHERE key = $1`, [key]);
    const row = rows[0];
    return row === undefined ? undefined : { owner: row.owner, since: Number(row.since) };
  }

  async range(set: string, { offset, limit, order = 'asc' }: RangeOptions): Promise<string[]> {
    if (!(limit >= 1)) return [];
    const direction = order === 'desc' ? 'DESC' : 'ASC';
    const rows = await this.connection.query<{ member: string }>(
      'a range read',
      `SELECT member FROM ${this.connection.s}.set_members WHERE set_name = $1 ORDER BY score ${direction}, member ${direction} LIMIT $2 OFFSET $3`,
      [set, String(bound(limit)), String(bound(offset))],
    );
    return rows.map((row) => row.member);
  }

  async count(set: string): Promise<number> {
    const rows = await this.connection.query<{ size: string }>('a count', `SELECT size FROM ${this.connection.s}.sets WHERE name = $1`, [set]);
    return Number(rows[0]?.size ?? 0);
  }

  /** Stops this store's calls; the pool belongs to the store that made it. Idempotent. */
  async close(): Promise<void> {}
}

/** A LIMIT or OFFSET: a non-negative integer PostgreSQL's bigint holds. */
function bound(value: number): number {
  return Math.min(Math.max(0, Math.floor(value)), Number.MAX_SAFE_INTEGER);
}

function text(serialised: unknown): string {
  if (typeof serialised !== 'string') throw new TypeError('the PostgreSQL record store keeps Keyv-serialised text; create its Keyv with the default serialize');
  return serialised;
}

/** A stored text as the records' Keyv reads it (`keyv.get`): its `value`, `undefined` when Keyv finds it expired. */
async function decoded<T>(keyv: Keyv, stored: string): Promise<T | undefined> {
  const data = await keyv.deserializeData<T>(stored);
  if (data === undefined || data === null) return undefined;
  if (typeof data.expires === 'number' && Date.now() > data.expires) return undefined;
  return data.value;
}
