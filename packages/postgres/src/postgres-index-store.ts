import type { Claim, CommitResult, IndexStore, IndexTransaction, RangeOptions } from '@mcp-fleet/core';
import { transactionParts } from '@mcp-fleet/core';
import type { Connection } from './connection.js';

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
  ) {}

  async commit(tx: IndexTransaction): Promise<CommitResult> {
    // A limit of Infinity is none (`transactionParts` leaves it out).
    const { claims, releases, remove: removals, add: additions, limits, empty } = transactionParts(tx);
    if (empty) return { ok: true };
    for (const { max } of limits) if (Number.isNaN(max)) throw new TypeError('a limit must be a number, not NaN');
    const body = {
      claims: claims.map(({ key, owner, replacing }) => ({ key, owner, replacing })),
      releases: releases.map(({ key, owner }) => ({ key, owner })),
      add: additions.map(({ set, member, score }) => ({ set, member, score: scoreText(score) })),
      remove: removals.map(({ set, member }) => ({ set, member })),
      limits: limits.map(({ set, max }) => ({ set, max: max === -Infinity ? -1 : max })),
    };
    const since = this.now === undefined ? null : String(Math.trunc(this.now()));
    const [row] = await this.connection.query<{ answer: Answer }>('a commit', `SELECT ${this.connection.s}.commit_index($1::jsonb, $2::bigint) AS answer`, [JSON.stringify(body), since], false);
    const answer = row?.answer;
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
