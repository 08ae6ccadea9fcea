import type { Claim, CommitResult, IndexStore, IndexTransaction, RangeOptions } from '@mcp-fleet/core';
import sqlite3 from 'sqlite3';

/** The few sqlite3 calls we need, as promises. */
class Connection {
  constructor(private readonly db: sqlite3.Database) {}

  static open(path: string): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const db = new sqlite3.Database(path, (error) => (error ? reject(error) : resolve(new Connection(db))));
    });
  }

  run(sql: string, ...params: unknown[]): Promise<void> {
    return new Promise((resolve, reject) => this.db.run(sql, params, (error) => (error ? reject(error) : resolve())));
  }

  all<T>(sql: string, ...params: unknown[]): Promise<T[]> {
    return new Promise((resolve, reject) => this.db.all<T>(sql, params, (error, rows) => (error ? reject(error) : resolve(rows))));
  }

  exec(sql: string): Promise<void> {
    return new Promise((resolve, reject) => this.db.exec(sql, (error) => (error ? reject(error) : resolve())));
  }

  configureBusyTimeout(ms: number): void {
    this.db.configure('busyTimeout', ms);
  }

  close(): Promise<void> {
    return new Promise((resolve, reject) => this.db.close((error) => (error ? reject(error) : resolve())));
  }
}

export interface SqliteIndexStoreOptions {
  /** Database file (`:memory:` for a throwaway one). */
  path: string;
  /** Prefix of the two tables. @default 'mcp_fleet' */
  tablePrefix?: string;
  /** How long a write waits for another connection's lock, in ms. @default 5000 */
  busyTimeout?: number;
  /** Clock for claim times. @default Date.now */
  now?: () => number;
}

/**
 * IndexStore on SQLite: each commit is one `BEGIN IMMEDIATE` transaction, so it is atomic against other
 * connections and other processes on the same file, and durable once it returns.
 */
export class SqliteIndexStore implements IndexStore {
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly conn: Connection,
    private readonly claims: string,
    private readonly sets: string,
    private readonly now: () => number,
  ) {}

  static async open(options: SqliteIndexStoreOptions): Promise<SqliteIndexStore> {
    const prefix = options.tablePrefix ?? 'mcp_fleet';
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,40}$/.test(prefix)) throw new TypeError('tablePrefix must be letters, digits and "_"');
    const conn = await Connection.open(options.path);
    conn.configureBusyTimeout(options.busyTimeout ?? 5000);
    const claims = `${prefix}_claims`;
    const sets = `${prefix}_sets`;
    await conn.exec(`
      PRAGMA journal_mode = WAL;
      PRAGMA synchronous = FULL;
      CREATE TABLE IF NOT EXISTS ${claims} (key TEXT PRIMARY KEY, owner TEXT NOT NULL, since INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS ${sets} (set_key TEXT NOT NULL, member TEXT NOT NULL, score REAL NOT NULL, PRIMARY KEY (set_key, member)) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS ${sets}_order ON ${sets} (set_key, score, member);
    `);
    return new SqliteIndexStore(conn, claims, sets, options.now ?? Date.now);
  }

  commit(tx: IndexTransaction): Promise<CommitResult> {
    return this.serial(async () => {
      await this.conn.run('BEGIN IMMEDIATE');
      try {
        for (const { key, owner, replacing } of tx.claims ?? []) {
          const [held] = await this.conn.all<Claim>(`SELECT owner, since FROM ${this.claims} WHERE key = ?`, key);
          if (held !== undefined && held.owner !== owner && held.owner !== replacing) {
            await this.conn.run('ROLLBACK');
            return { ok: false, conflict: { key, owner: held.owner, since: held.since } };
          }
        }
        for (const { set, max } of tx.limits ?? []) {
          const [row] = await this.conn.all<{ n: number }>(`SELECT COUNT(*) AS n FROM ${this.sets} WHERE set_key = ?`, set);
          if ((row?.n ?? 0) >= max) {
            await this.conn.run('ROLLBACK');
            return { ok: false, full: { set, max } };
          }
        }
        for (const { key, owner } of tx.releases ?? []) {
          await this.conn.run(`DELETE FROM ${this.claims} WHERE key = ? AND owner = ?`, key, owner);
        }
        const since = this.now();
        for (const { key, owner } of tx.claims ?? []) {
          await this.conn.run(
            `INSERT INTO ${this.claims} (key, owner, since) VALUES (?, ?, ?)
             ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, since = excluded.since WHERE owner <> excluded.owner`,
            key,
            owner,
            since,
          );
        }
        for (const { set, member } of tx.remove ?? []) {
          await this.conn.run(`DELETE FROM ${this.sets} WHERE set_key = ? AND member = ?`, set, member);
        }
        for (const { set, member, score } of tx.add ?? []) {
          await this.conn.run(
            `INSERT INTO ${this.sets} (set_key, member, score) VALUES (?, ?, ?)
             ON CONFLICT (set_key, member) DO UPDATE SET score = excluded.score`,
            set,
            member,
            score,
          );
        }
        await this.conn.run('COMMIT');
        return { ok: true };
      } catch (error) {
        await this.conn.run('ROLLBACK').catch(() => {});
        throw error;
      }
    });
  }

  async claimOf(key: string): Promise<Claim | undefined> {
    const [row] = await this.conn.all<Claim>(`SELECT owner, since FROM ${this.claims} WHERE key = ?`, key);
    return row && { owner: row.owner, since: row.since };
  }

  async range(set: string, { offset, limit, order = 'asc' }: RangeOptions): Promise<string[]> {
    const direction = order === 'desc' ? 'DESC' : 'ASC';
    const rows = await this.conn.all<{ member: string }>(
      `SELECT member FROM ${this.sets} WHERE set_key = ? ORDER BY score ${direction}, member ${direction} LIMIT ? OFFSET ?`,
      set,
      Math.min(limit, Number.MAX_SAFE_INTEGER),
      offset,
    );
    return rows.map((row) => row.member);
  }

  async count(set: string): Promise<number> {
    const [row] = await this.conn.all<{ n: number }>(`SELECT COUNT(*) AS n FROM ${this.sets} WHERE set_key = ?`, set);
    return row?.n ?? 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue.catch(() => {});
    await this.conn.close();
  }

  /** One transaction at a time on this connection: sqlite3 would interleave two callers' statements. */
  private serial<T>(task: () => Promise<T>): Promise<T> {
    const result = this.queue.then(task, task);
    this.queue = result.catch(() => {});
    return result;
  }
}
