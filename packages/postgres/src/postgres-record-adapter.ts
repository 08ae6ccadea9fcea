import { EventEmitter } from 'node:events';
import type { KeyvEntry, KeyvStoreAdapter } from 'keyv';
import { type Connection, LIVE } from './connection.js';

/** Keyv's ttl (ms) as the row's expiry on the database's clock; NULL for none. */
const EXPIRY = (param: string) => `CASE WHEN ${param} IS NULL THEN NULL ELSE clock_timestamp() + ${param} * interval '1 millisecond' END`;

/**
 * The Keyv store over the table `records`, each call one statement. Keys are stored as Keyv hands them (the store's
 * table is its own, so no prefix is needed); values are Keyv's serialised text. An expired row is never returned, and
 * `sweep` deletes it later.
 */
export class PostgresRecordAdapter extends EventEmitter implements KeyvStoreAdapter {
  opts: Record<string, unknown> = {};
  namespace?: string | undefined;

  constructor(private readonly connection: Connection) {
    super();
  }

  /** One statement, or half of one: a rate-limit decision asked for in the same turn goes with it (`Connection.readRecord`). */
  async get<Value>(key: string): Promise<Value | undefined> {
    return (await this.connection.readRecord(key)) as Value | undefined;
  }

  async getMany<Value>(keys: string[]): Promise<Array<Value | undefined>> {
    if (keys.length === 0) return [];
    const { s } = this.connection;
    const rows = await this.connection.query<{ value: string | null }>(
      'a records read',
      `SELECT r.value FROM unnest($1::text[]) WITH ORDINALITY k(key, i) LEFT JOIN ${s}.records r ON r.key = k.key AND ${LIVE} ORDER BY k.i`,
      [keys],
    );
    return rows.map((row) => (row.value ?? undefined) as Value | undefined);
  }

  async set(key: string, value: unknown, ttl?: number): Promise<void> {
    const { s } = this.connection;
    await this.connection.query(
      'a record write',
      `INSERT INTO ${s}.records (key, value, expires_at) VALUES ($1, $2, ${EXPIRY('$3::bigint')})
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`,
      [key, text(value), ttlOf(ttl)],
    );
  }

  async setMany(entries: KeyvEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const { s } = this.connection;
    // A key given twice takes its last value, as writing them one by one would.
    await this.connection.query(
      'a records write',
      `INSERT INTO ${s}.records (key, value, expires_at)
       SELECT DISTINCT ON (key) key, value, ${EXPIRY('ttl')} FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY e(key, value, ttl, i) ORDER BY key, i DESC
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`,
      [entries.map((e) => e.key), entries.map((e) => text(e.value)), entries.map((e) => ttlOf(e.ttl))],
    );
  }

  async has(key: string): Promise<boolean> {
    const { s } = this.connection;
    const rows = await this.connection.query('a record read', `SELECT 1 FROM ${s}.records r WHERE r.key = $1 AND ${LIVE}`, [key]);
    return rows.length > 0;
  }

  async hasMany(keys: string[]): Promise<boolean[]> {
    if (keys.length === 0) return [];
    const { s } = this.connection;
    const rows = await this.connection.query<{ live: boolean }>(
      'a records read',
      `SELECT r.key IS NOT NULL AS live FROM unnest($1::text[]) WITH ORDINALITY k(key, i) LEFT JOIN ${s}.records r ON r.key = k.key AND ${LIVE} ORDER BY k.i`,
      [keys],
    );
    return rows.map((row) => row.live);
  }

  async delete(key: string): Promise<boolean> {
    const { s } = this.connection;
    const rows = await this.connection.query<{ live: boolean }>('a record delete', `DELETE FROM ${s}.records r WHERE r.key = $1 RETURNING ${LIVE} AS live`, [key]);
    return rows[0]?.live === true;
  }

  async deleteMany(keys: string[]): Promise<boolean> {
    if (keys.length === 0) return false;
    const { s } = this.connection;
    const rows = await this.connection.query<{ live: boolean }>('a records delete', `DELETE FROM ${s}.records r WHERE r.key = ANY($1::text[]) RETURNING ${LIVE} AS live`, [keys]);
    return rows.some((row) => row.live);
  }

  /** Empties the store's own table (it holds only the fleet's records). */
  async clear(): Promise<void> {
    const { s } = this.connection;
    await this.connection.query('a records clear', `DELETE FROM ${s}.records`);
  }

  /** The pool is closed by the store (or left to the embedder who gave it). */
  async disconnect(): Promise<void> {}
}

function text(value: unknown): string {
  // Keyv serialises before it calls the store; a Keyv made with `serialize: undefined` would hand objects.
  if (typeof value !== 'string') throw new TypeError('the PostgreSQL record store keeps Keyv-serialised text; create its Keyv with the default serialize');
  return value;
}

function ttlOf(ttl: number | undefined): string | null {
  return typeof ttl === 'number' && Number.isFinite(ttl) && ttl > 0 ? String(Math.ceil(ttl)) : null;
}
