import type { Pool, QueryConfig, QueryResultRow } from 'pg';
import { parseStoreUrl, redact } from '@mcp-fleet/core';
import { quoteIdentifier } from './schema.js';

/** @default for `statementTimeoutMs` and `connectTimeoutMs`. */
export const DEFAULT_TIMEOUT_MS = 5000;

export function checkTimeout(name: string, value: number): number {
  if (!Number.isInteger(value) || value <= 0) throw new TypeError(`createPostgresStore: ${name} must be a positive integer of ms, got ${value}`);
  return value;
}

/** Where a store's database is (`host:port/database`, enough to find it) and the password's spellings to keep out of messages. */
export interface Whereabouts {
  host: string;
  port: string;
  database: string;
  secrets: string[];
}

export function inspectConnectionString(connectionString: string): Whereabouts {
  const { url, secrets } = parseStoreUrl(connectionString, 'createPostgresStore: connectionString', ['postgres:', 'postgresql:'], 'postgres://user@host:port/database');
  return {
    host: decodeURIComponent(url.hostname) || 'localhost',
    port: url.port || '5432',
    database: decodeURIComponent(url.pathname.replace(/^\//, '')) || decodeURIComponent(url.username) || 'postgres',
    secrets,
  };
}

/** The same of a pool the embedder made: pg keeps its options. */
export function inspectPool(pool: Pool): Whereabouts {
  const options = pool.options as { host?: string; port?: number | string; database?: string; password?: unknown; connectionString?: string; user?: string };
  if (typeof options.connectionString === 'string' && options.connectionString !== '') {
    try {
      return inspectConnectionString(options.connectionString);
    } catch {
      // Not a URL (a key=value string): fall back on the separate options and the environment, as pg does.
    }
  }
  return {
    host: options.host ?? process.env.PGHOST ?? 'localhost',
    port: String(options.port ?? process.env.PGPORT ?? '5432'),
    database: options.database ?? process.env.PGDATABASE ?? options.user ?? 'postgres',
    secrets: [typeof options.password === 'string' ? options.password : '', process.env.PGPASSWORD ?? ''].filter((secret) => secret !== ''),
  };
}

export function scrub(message: string, secrets: readonly string[]): string {
  return redact(message, secrets);
}

/**
 * The store's one way to the database: every call is one statement (one round trip), with a deadline, and an error
 * that carries no password. Shared by the records, the index and the counters.
 */
export class Connection {
  closed = false;
  /** The schema, quoted, to put before every table and function. */
  readonly s: string;

  constructor(
    readonly pool: Pool,
    readonly schema: string,
    readonly where: Whereabouts,
    /** Client-side deadline of each statement, in ms; the server's `statement_timeout` on our own pool's connections too. */
    readonly timeoutMs: number,
  ) {
    this.s = quoteIdentifier(schema);
  }

  async query<R extends QueryResultRow>(what: string, text: string, values: unknown[] = []): Promise<R[]> {
    if (this.closed) throw new Error(`the PostgreSQL store is closed (${what})`);
    try {
      const result = await this.pool.query<R>({ text, values, query_timeout: this.timeoutMs } as QueryConfig);
      return result.rows;
    } catch (error) {
      throw this.failure(what, error);
    }
  }

  /** An error for `what`, without the password, keeping PostgreSQL's SQLSTATE `code` for whoever tells errors apart. */
  failure(what: string, error: unknown): Error {
    const message = scrub(error instanceof Error ? error.message : String(error), this.where.secrets);
    const failure = new Error(`PostgreSQL ${this.where.host}:${this.where.port}/${this.where.database}: ${what} failed: ${message}`);
    // The driver's own message, scrubbed, for a caller that names the database itself (the start's message).
    Object.assign(failure, { reason: message });
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === 'string') Object.assign(failure, { code });
    return failure;
  }
}
