import type { Claim, CommitResult, IndexStore, IndexTransaction, JointPage, RangeOptions, RecordWrite } from '@mcp-fleet/core';
import { transactionParts } from '@mcp-fleet/core';
import type Keyv from 'keyv';
import type { Connection } from './connection.js';
import { LIVE, refusedByServer } from './connection.js';

/** A score as the commit function reads it: text, so that ±Infinity survive JSON. */
function scoreText(score: number): string {
  if (Number.isNaN(score)) throw new TypeError('an index score must be a number, not NaN');
  return String(score);
}

type Answer = { ok: true } | { ok: false; conflict: number; owner: string; since: string | number } | { ok: false; full: number };

/**
 * The most commits with records one `commit_batch` call carries, and the most bytes of their JSON, keys and values
 * (an item larger than that goes alone). On a loaded 2-core machine a call of 32 creates took about 9 ms, its flush
 * included (docs/performance.md): far within any sensible `statementTimeoutMs`, and few enough advisory locks for the
 * shared lock table (`max_locks_per_transaction`).
 */
export const BATCH_MAX_ITEMS = 32;
export const BATCH_MAX_BYTES = 256 * 1024;

/**
 * The longest a commit is held for the rest of a group that has just been answered (`sendOrHold`), in ms, whatever
 * the last call took: a slow database makes long calls, and a create must not wait that long for others.
 */
export const HOLD_MAX_MS = 10;

/** A commit with records waiting for its call: its arguments as the functions take them, and who waits for the answer. */
interface Pending {
  /** `{"tx":…,"claimed_at":…}`: the item as `commit_batch` takes it. */
  item: string;
  tx: string;
  since: string | null;
  keys: string[];
  values: string[];
  bytes: number;
  resolve: (answer: Answer) => void;
  reject: (error: unknown) => void;
}

/**
 * The IndexStore in PostgreSQL: claims in `claims`, ordered sets in `set_members` with their sizes in `sets`. A commit
 * is one call of `commit_index` (docs/postgres.md): it locks what it touches in one fixed order, checks every claim
 * and every limit, and writes only if all pass. Reads are single statements and take no lock.
 *
 * Commits with records (a server's create) are committed in groups: one call in flight per store; the commits asked
 * for meanwhile wait and then go together as one call of `commit_batch`, one transaction and one WAL flush for all of
 * them, and those asked for just after a group was answered are held a moment for the rest of it (`sendOrHold`;
 * docs/postgres.md, "Creates are committed in groups").
 */
export class PostgresIndexStore implements IndexStore {
  /** Commits with records waiting for the call in flight to return. */
  private readonly waiting: Pending[] = [];
  /** A call of commits with records is in flight (or its items are being sent again one by one). */
  private sending = false;
  /**
   * The last call that returned: how many commits are expected to wait soon (those it answered, whose creators are
   * on their way back, and those that waited for it), when it returned and how long it took (ms, `performance.now()`).
   */
  private last: { expected: number; end: number; took: number } | undefined;
  /** The timer of a hold: what waits is held for the rest of the last call's group until it fires (`sendOrHold`). */
  private holding: ReturnType<typeof setTimeout> | undefined;

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
   * `commit_with_records`, or one item of a `commit_batch` (docs/postgres.md). Without records, one call of
   * `commit_index`.
   */
  async commitWithRecords(tx: IndexTransaction, records: readonly RecordWrite[]): Promise<CommitResult> {
    // A limit of Infinity is none (`transactionParts` leaves it out).
    const { claims, releases, remove: removals, add: additions, limits, empty } = transactionParts(tx);
    if (empty && records.length === 0) return { ok: true };
    for (const { max } of limits) if (Number.isNaN(max)) throw new TypeError('a limit must be a number, not NaN');
    const body = JSON.stringify({
      claims: claims.map(({ key, owner, replacing }) => ({ key, owner, replacing })),
      releases: releases.map(({ key, owner }) => ({ key, owner })),
      add: additions.map(({ set, member, score }) => ({ set, member, score: scoreText(score) })),
      remove: removals.map(({ set, member }) => ({ set, member })),
      limits: limits.map(({ set, max }) => ({ set, max: max === -Infinity ? -1 : max })),
    });
    const since = this.now === undefined ? null : String(Math.trunc(this.now()));
    let answer: Answer;
    if (records.length === 0) {
      const [row] = await this.connection.query<{ answer: Answer }>('a commit', `SELECT ${this.connection.s}.commit_index($1::jsonb, $2::bigint) AS answer`, [body, since], false);
      if (row === undefined) throw new Error('commit_index gave no answer');
      answer = row.answer;
    } else {
      const keyv = this.jointRecords;
      if (keyv === undefined) throw new Error('this PostgresIndexStore has no records to write');
      // Each value as Keyv would store it (`keyv.set`): its serialised `{ value }`, no expiry.
      const values = await Promise.all(records.map(async ({ value }) => text(await keyv.serializeData({ value, expires: undefined }))));
      const keys = records.map(({ key }) => key);
      const item = `{"tx":${body},"claimed_at":${since === null ? 'null' : since}}`;
      const bytes = keys.concat(values).reduce((sum, part) => sum + Buffer.byteLength(part), Buffer.byteLength(item));
      answer = await new Promise<Answer>((resolve, reject) => {
        this.waiting.push({ item, tx: body, since, keys, values, bytes, resolve, reject });
        if (!this.sending) this.sendOrHold();
      });
    }
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
   * With no call in flight: sends what waits, unless the last call answered a group of commits a moment ago and fewer
   * wait than it carried plus those that waited for it. The creators it answered are then likely on their way back (a
   * group answered together asks again together), and what waits is held for them: sent when that many wait, or when
   * as long has passed since the call returned as it took (at most `HOLD_MAX_MS`), whichever comes first. So the
   * creates of a busy store stay one group, one call and one flush, instead of splitting into a commit alone and the
   * rest behind it, each paying a flush (docs/postgres.md, "Creates are committed in groups"). A commit asked for when
   * the last call carried one and none waited, or when it returned longer ago than it took, goes at once.
   */
  private sendOrHold(): void {
    const { last } = this;
    if (this.waiting.length === 0) return;
    const wanted = last === undefined ? 1 : last.expected;
    const until = last === undefined ? 0 : last.end + Math.min(last.took, HOLD_MAX_MS);
    const now = performance.now();
    if (this.waiting.length >= wanted || now >= until) {
      if (this.holding !== undefined) clearTimeout(this.holding);
      this.holding = undefined;
      this.sendWaiting();
      return;
    }
    this.holding ??= setTimeout(() => {
      this.holding = undefined;
      if (!this.sending) this.sendWaiting();
    }, until - now);
  }

  /**
   * Sends what waits, up to `BATCH_MAX_ITEMS` and `BATCH_MAX_BYTES` (at least one), as one call; when it has returned,
   * what came meanwhile goes, or is held for the rest of the group (`sendOrHold`).
   */
  private sendWaiting(): void {
    let count = 0;
    let bytes = 0;
    for (const { bytes: size } of this.waiting) {
      if (count === BATCH_MAX_ITEMS || (count > 0 && bytes + size > BATCH_MAX_BYTES)) break;
      count++;
      bytes += size;
    }
    if (count === 0) return;
    this.sending = true;
    const batch = this.waiting.splice(0, count);
    const start = performance.now();
    void (batch.length === 1 ? this.sendAlone(batch[0] as Pending) : this.sendBatch(batch)).finally(() => {
      const end = performance.now();
      this.last = { expected: Math.min(batch.length + this.waiting.length, BATCH_MAX_ITEMS), end, took: end - start };
      this.sending = false;
      this.sendOrHold();
    });
  }

  /** One commit with records, one call of `commit_with_records`; settles the item, never rejects. */
  private async sendAlone({ tx, since, keys, values, resolve, reject }: Pending): Promise<void> {
    try {
      const [row] = await this.connection.query<{ answer: Answer }>(
        'a commit',
        `SELECT ${this.connection.s}.commit_with_records($1::jsonb, $2::bigint, $3::text[], $4::text[]) AS answer`,
        [tx, since, keys, values],
        false,
      );
      if (row === undefined) throw new Error('commit_with_records gave no answer');
      resolve(row.answer);
    } catch (error) {
      reject(error);
    }
  }

  /**
   * Several, one call of `commit_batch`; settles every item, never rejects. Refused by the server (an SQLSTATE: one
   * item it cannot take, a deadlock it broke), the transaction wrote nothing and the items are sent again one by one,
   * so that a bad item fails only itself. A lost connection, a timeout or a server going away fails every item, as it
   * would have failed each alone: the call is not sent again (it may have committed), and being one transaction it
   * committed all of its items or none.
   */
  private async sendBatch(batch: Pending[]): Promise<void> {
    const itemOf: number[] = [];
    const keys: string[] = [];
    const values: string[] = [];
    batch.forEach((pending, i) => {
      keys.push(...pending.keys);
      values.push(...pending.values);
      itemOf.push(...pending.keys.map(() => i + 1));
    });
    let answers: Answer[] | undefined;
    try {
      const [row] = await this.connection.query<{ answers: Answer[] }>(
        'a commit',
        `SELECT ${this.connection.s}.commit_batch($1::jsonb, $2::integer[], $3::text[], $4::text[]) AS answers`,
        [`[${batch.map(({ item }) => item).join(',')}]`, itemOf, keys, values],
        false,
      );
      answers = row?.answers;
      if (answers?.length !== batch.length) throw new Error('commit_batch gave no answer for every commit');
    } catch (error) {
      if (!refusedByServer(error)) {
        for (const { reject } of batch) reject(error);
        return;
      }
    }
    if (answers === undefined) {
      await Promise.all(batch.map((pending) => this.sendAlone(pending)));
      return;
    }
    batch.forEach(({ resolve }, i) => resolve(answers[i] as Answer));
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
