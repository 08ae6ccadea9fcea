import { createHash } from 'node:crypto';
import type { Pool, PoolClient, QueryConfig, QueryResultRow } from 'pg';
import { parseStoreUrl, redact } from '@mcp-fleet/core';
import { FairQueue } from './fair-queue.js';
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

/** A row is live while it has no expiry or its expiry is ahead on the database's clock. */
export const LIVE = '(r.expires_at IS NULL OR r.expires_at > clock_timestamp())';

/** The read of one live record's stored text, its key the parameter `key` (`$1`). */
export function readOneSql(s: string, key: string): string {
  return `SELECT r.value FROM ${s}.records r WHERE r.key = ${key} AND ${LIVE}`;
}

/** `consume`'s arguments: the counters' keys, limits and costs (bigint text), and the window's end in Unix ms. */
export type ConsumeArgs = [keys: string[], limits: string[], costs: string[], expiresMs: string];

interface Read {
  key: string;
  resolve: (value: string | undefined) => void;
  reject: (error: unknown) => void;
}

/** A rate-limit decision waiting to be sent, with the record read asked for in its turn (the handler's key read), if any. */
interface Decision {
  args: ConsumeArgs;
  read?: Read;
  resolve: (answer: string[]) => void;
  reject: (error: unknown) => void;
}

/**
 * The queue a waiting decision joins: its last counter's key. The limiter puts an account's tier counter last (after
 * the operation's, when it has one), so that is one queue per account and window; an address's budget and a lease are
 * a counter alone, a queue of their own. Decisions of one queue keep the order they were asked in.
 */
const queueOf = (decision: Decision): string => decision.args[0][decision.args[0].length - 1] as string;

/** The record reads and rate-limit decisions asked for in one turn, in the order asked. */
interface Turn {
  reads: Read[];
  decisions: Decision[];
}

/** `consume_batch`'s answer cut into each decision's: 1 or 0 (allowed), then one count per counter. */
function split(flat: string[], sizes: number[]): string[][] {
  const answers: string[][] = [];
  let at = 0;
  for (const size of sizes) {
    answers.push(flat.slice(at, at + 1 + size));
    at += 1 + size;
  }
  if (at !== flat.length) throw new Error(`consume_batch answered ${flat.length} numbers for ${sizes.length} decisions of ${at - sizes.length} counters`);
  return answers;
}

/** The SQLSTATE of an error the server raised (five characters, digits among them, unlike EPIPE); `undefined` for any other. */
export function sqlStateOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(?=.*\d)[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * A grouped call (decisions, commits) failed with an error of the server that sending its parts one by one can
 * isolate (one part's data refused, a deadlock the server broke): an SQLSTATE, but not a cancel or a timeout (57014:
 * the parts waited `statementTimeoutMs` already), a server going away (57P01..57P03: the statement was already tried
 * again) nor a connection's failure (class 08).
 */
export function refusedByServer(error: unknown): boolean {
  const code = sqlStateOf(error);
  return code !== undefined && code !== '57014' && !code.startsWith('57P0') && !code.startsWith('08');
}

/** The most decisions one `consume_batch` statement carries; more wait for the next. */
export const MAX_DECISIONS = 256;

/** How much later than `statementTimeoutMs` the client stops waiting: the server's cancel comes first, so a statement the client gave up on is one the server stopped. */
export const CLIENT_GRACE_MS = 1000;

/** Why a call failed, and what fixes it, for the message `onError` sees. */
function remedy(error: unknown, limits: Limits): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof AcquireTimeout) {
    return limits.owned
      ? `no connection of the pool came free within connectTimeoutMs (${limits.connectTimeoutMs} ms; all ${limits.maxConnections} busy, or the database slow to accept one): raise maxConnections or connectTimeoutMs`
      : `no connection of the given pool came free within connectTimeoutMs (${limits.connectTimeoutMs} ms; all busy, or the database slow to accept one): raise the pool's max or connectTimeoutMs`;
  }
  if (code === '57014' || error instanceof StatementTimeout) {
    return `the statement ran longer than statementTimeoutMs (${limits.statementTimeoutMs} ms) and was cancelled: look for a lock held on the schema's tables (pg_locks), or raise statementTimeoutMs`;
  }
  if (code === '57P01' || code === '57P02' || code === '57P03') return 'the database is shutting down or restarting: the store reconnects by itself once it accepts connections';
  return 'check that the database runs and can be reached from here (connectionString or pool)';
}

class AcquireTimeout extends Error {}
class StatementTimeout extends Error {}

/** What the store's deadlines and pool are, for its messages. */
export interface Limits {
  statementTimeoutMs: number;
  connectTimeoutMs: number;
  /** The store made the pool (it sets `statement_timeout` on its connections), or the embedder gave it. */
  owned: boolean;
  maxConnections: number;
  /** Every statement named (prepared once per connection, then only bound and run): `preparedStatements`. */
  prepared?: boolean;
}

/**
 * The store's one way to the database: every call is one statement (one round trip) on a connection taken within
 * `connectTimeoutMs`, with a deadline, and an error that carries no password and says what fixes it. Shared by the
 * records, the index and the counters.
 *
 * Deadlines. On the store's own pool the server cancels a statement at `statementTimeoutMs` (`statement_timeout`)
 * and the client stops waiting `CLIENT_GRACE_MS` later (a server that stopped answering). On a given pool, whose
 * connections the store does not configure, the store asks the server to cancel the statement at `statementTimeoutMs`
 * itself (`pg_cancel_backend` over a connection of its own), with the same backstop: either way a statement the store
 * answered as failed is not left running to write after the answer. A connection that failed is not handed back.
 */
export class Connection {
  closed = false;
  /** The schema, quoted, to put before every table and function. */
  readonly s: string;
  /** Client-side deadline of each statement, in ms. */
  readonly timeoutMs: number;
  /** Statement names by text (`preparedStatements`). */
  private readonly names = new Map<string, string>();
  /** The record read and the rate-limit decisions asked for in this turn, still to be sent (`readRecord`, `decide`). */
  private turn: Turn | undefined;
  /**
   * A statement of decisions is in flight: the decisions asked for meanwhile wait in `waiting` and go out together
   * after it, taken from each account's queue in turn (`FairQueue`).
   */
  private deciding = false;
  private readonly waiting = new FairQueue<Decision>();

  constructor(
    readonly pool: Pool,
    readonly schema: string,
    readonly where: Whereabouts,
    readonly limits: Limits,
    /** Given pools: asks the server to cancel the statement of a backend (`pg_cancel_backend`), over a connection of its own. */
    private readonly canceller?: (processId: number) => Promise<void>,
  ) {
    this.s = quoteIdentifier(schema);
    this.timeoutMs = limits.statementTimeoutMs;
  }

  /**
   * A connection of the pool within `connectTimeoutMs`; one that comes later is handed straight back, unused. The
   * store's own pool keeps that bound itself (`connectionTimeoutMillis`, which also drops a waiter it gave up on), so
   * only a given pool, whose own bound may be none, gets a timer of the store's per call.
   */
  acquire(what: string): Promise<PoolClient> {
    if (this.limits.owned) return this.pool.connect().catch((error: unknown) => Promise.reject(this.acquireFailure(what, error)));
    return new Promise((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        reject(this.failure(what, new AcquireTimeout('timed out waiting for a connection')));
      }, this.limits.connectTimeoutMs);
      this.pool.connect().then(
        (client) => {
          if (settled) return client.release();
          settled = true;
          clearTimeout(timer);
          resolve(client);
        },
        (error: unknown) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          reject(this.acquireFailure(what, error));
        },
      );
    });
  }

  /** Why no connection came: pg-pool's own `connectionTimeoutMillis` is the same wait as ours, said the same way. */
  private acquireFailure(what: string, error: unknown): Error {
    return this.failure(what, error instanceof Error && /timeout exceeded when trying to connect/.test(error.message) ? new AcquireTimeout(error.message) : error);
  }

  /**
   * One statement. Tried again on another connection (up to the pool's size, within the statement's deadline) when
   * its connection turns out to be gone: always after the server said it was terminating (57P01, 57P02, 57P03: the
   * statement did not commit; a restart leaves every idle connection of the pool so), and after a connection lost
   * mid-statement only when `replayable` (running it twice is running it once: reads, upserts, deletes). The index
   * commit and the rate-limit decision are not replayable: a lost answer fails them.
   */
  async query<R extends QueryResultRow>(what: string, text: string, values: unknown[] = [], replayable = true): Promise<R[]> {
    const deadline = Date.now() + this.timeoutMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once<R>(what, text, values);
      } catch (error) {
        const lost = (error as { lost?: unknown }).lost;
        const again = lost === 'terminating' || (lost === 'connection' && replayable);
        if (!again || attempt > this.limits.maxConnections || Date.now() >= deadline) throw error;
      }
    }
  }

  private async once<R extends QueryResultRow>(what: string, text: string, values: unknown[]): Promise<R[]> {
    if (this.closed) throw new Error(`the PostgreSQL store is closed (${what})`);
    const client = await this.acquire(what);
    // A connection lost while checked out emits 'error' on the client, which would crash the process unheard: the
    // query fails with the same error, so this listener only keeps the process up.
    const lost = () => {};
    client.on('error', lost);
    let broken: Error | undefined;
    const processId = (client as unknown as { processID?: number | null }).processID;
    const cancel =
      this.canceller === undefined || typeof processId !== 'number'
        ? undefined
        : setTimeout(() => {
            // Not handed back even if it finishes meanwhile: the cancel must not reach the next user's statement.
            broken = new StatementTimeout('cancelled at statementTimeoutMs');
            void this.cancelRunning(processId);
          }, this.timeoutMs);
    try {
      const name = this.limits.prepared === true ? this.nameOf(text) : undefined;
      const result = await client.query<R>({ ...(name !== undefined && { name }), text, values, query_timeout: this.timeoutMs + CLIENT_GRACE_MS } as QueryConfig);
      return result.rows;
    } catch (error) {
      const code = sqlStateOf(error);
      const timedOut = error instanceof Error && /Query read timeout/.test(error.message);
      // An error of the server (an SQLSTATE) leaves the connection usable; anything else (lost, timed out) does not.
      if (code === undefined) broken ??= error instanceof Error ? error : new Error(String(error));
      const failure = this.failure(what, timedOut ? new StatementTimeout(error instanceof Error ? error.message : '') : error);
      if (code !== undefined && /^57P0[123]$/.test(code)) Object.assign(failure, { lost: 'terminating' });
      else if (code === undefined && !timedOut && broken === error) Object.assign(failure, { lost: 'connection' });
      throw failure;
    } finally {
      if (cancel !== undefined) clearTimeout(cancel);
      client.removeListener('error', lost);
      client.release(broken ?? undefined);
    }
  }

  /**
   * A live record's stored text by key, `undefined` for none. A read asked for in the same turn of the event loop as a
   * rate-limit decision (the handler's key read and its admission, `admitEarly`) goes out in the decision's statement:
   * one connection, one socket write, one backend's work instead of two (docs/postgres.md, "One statement per request
   * step"). Several reads and decisions of one turn go as as many pairs (`send`).
   */
  readRecord(key: string): Promise<string | undefined> {
    const { reads } = this.thisTurn();
    return new Promise((resolve, reject) => reads.push({ key, resolve, reject }));
  }

  /**
   * One rate-limit decision (`consume(keys, limits, costs, expires_ms)`, its arguments as text). Decisions are grouped:
   * one statement of decisions is in flight at a time; those asked for while it runs wait, and when it returns they go
   * out together as one call of `consume_batch`, which decides them in the order they were asked for, with their key
   * reads (docs/postgres.md, "Decisions grouped while one is in flight"). No timer: a decision asked for while none is
   * in flight goes out at once.
   */
  decide(args: ConsumeArgs): Promise<string[]> {
    const turn = this.thisTurn();
    return new Promise((resolve, reject) => turn.decisions.push({ args, resolve, reject }));
  }

  private thisTurn(): Turn {
    let turn = this.turn;
    if (turn === undefined) {
      const current: Turn = (turn = this.turn = { reads: [], decisions: [] });
      queueMicrotask(() => {
        this.turn = undefined;
        this.send(current);
      });
    }
    return turn;
  }

  /**
   * The n-th read of the turn goes with its n-th decision (requests answered together, as a group commit of creates
   * answers them, ask for their next key reads and decisions in one turn); a read left over goes alone.
   */
  private send({ reads, decisions }: Turn): void {
    const pairs = Math.min(reads.length, decisions.length);
    for (let i = 0; i < pairs; i++) (decisions[i] as Decision).read = reads[i];
    for (const read of reads.slice(pairs)) this.readAlone(read.key).then(read.resolve, read.reject);
    if (decisions.length === 0) return;
    for (const decision of decisions) this.waiting.push(queueOf(decision), decision);
    if (!this.deciding) this.decideWaiting();
  }

  /**
   * Sends the waiting decisions (up to `MAX_DECISIONS`) in one statement; when it returns, the decisions that came
   * meanwhile, and so on. The cap keeps a flood's statement far within `statementTimeoutMs`. They are taken from
   * each account's queue in turn (`queueOf`): an account flooding the store with requests waits behind its own
   * decisions, and another account's next decision goes out in the next statement.
   */
  private decideWaiting(): void {
    const batch = this.waiting.take(MAX_DECISIONS);
    this.deciding = true;
    void this.decideTogether(batch).finally(() => {
      this.deciding = false;
      if (this.waiting.size > 0) this.decideWaiting();
    });
  }

  /**
   * One statement: `consume_batch` over the decisions, and the records of their reads (`key = ANY(…)`, at the
   * statement's snapshot, as reads sent at the same moment would be). Not sent again after a lost answer (a decision is
   * not replayable). When it fails, every decision of it fails, as a decision alone would, and each read is sent again
   * alone, so that a failed decision fails only the decisions (a limiter that fails open, `failOpen`, still admits on
   * a good key); when the server refused the data of one decision, each is sent again alone instead.
   */
  private async decideTogether(batch: Decision[]): Promise<void> {
    const { s } = this;
    const keys = [...new Set(batch.flatMap((d) => (d.read === undefined ? [] : [d.read.key])))];
    const sizes = batch.map((d) => d.args[0].length);
    const what =
      batch.length === 1
        ? `${keys.length === 0 ? '' : 'a key read and '}a rate-limit decision`
        : `${batch.length} rate-limit decisions${keys.length === 0 ? '' : ' and their key reads'}`;
    let answers: string[][];
    let values: Record<string, string>;
    try {
      const [row] = await this.query<{ answers: string[]; records: Record<string, string> | null }>(
        what,
        `SELECT ${s}.consume_batch($1::text[], $2::bigint[], $3::bigint[], $4::integer[], $5::bigint[]) AS answers` +
          (keys.length === 0 ? '' : `, (SELECT json_object_agg(r.key, r.value) FROM ${s}.records r WHERE r.key = ANY($6::text[]) AND ${LIVE}) AS records`),
        [batch.flatMap((d) => d.args[0]), batch.flatMap((d) => d.args[1]), batch.flatMap((d) => d.args[2]), sizes, batch.map((d) => d.args[3]), ...(keys.length === 0 ? [] : [keys])],
        false,
      );
      if (row === undefined) throw new Error('consume_batch gave no answer');
      answers = split(row.answers, sizes);
      values = row.records ?? {};
    } catch (error) {
      // The server refused one of them (a number out of bigint's range, a key it cannot store): each is decided again
      // alone, in order, so that one bad decision fails only itself.
      if (batch.length > 1 && refusedByServer(error)) {
        for (const decision of batch) await this.decideTogether([decision]);
        return;
      }
      for (const decision of batch) {
        decision.reject(error);
        const { read } = decision;
        if (read !== undefined) this.readAlone(read.key).then(read.resolve, read.reject);
      }
      return;
    }
    for (const [i, decision] of batch.entries()) {
      decision.read?.resolve(Object.hasOwn(values, decision.read.key) ? values[decision.read.key] : undefined);
      decision.resolve(answers[i] as string[]);
    }
  }

  private async readAlone(key: string): Promise<string | undefined> {
    const rows = await this.query<{ value: string }>('a record read', readOneSql(this.s, '$1'), [key]);
    return rows[0]?.value;
  }

  /** A statement's name, from its text (which carries the schema): the same text, the same name, on every connection. */
  private nameOf(text: string): string {
    let name = this.names.get(text);
    if (name === undefined) this.names.set(text, (name = `mcp_fleet_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`));
    return name;
  }

  private async cancelRunning(processId: number): Promise<void> {
    try {
      await this.canceller?.(processId);
    } catch {
      // The backstop (the client's deadline) still ends the wait; the connection is then not handed back.
    }
  }

  /** An error for `what`, without the password, saying what fixes it, keeping PostgreSQL's SQLSTATE `code` for whoever tells errors apart. */
  failure(what: string, error: unknown): Error {
    const message = scrub(error instanceof Error ? error.message : String(error), this.where.secrets);
    const failure = new Error(`PostgreSQL ${this.where.host}:${this.where.port}/${this.where.database}: ${what} failed: ${message}; ${remedy(error, this.limits)}`);
    // The driver's own message, scrubbed, for a caller that names the database itself (the start's message).
    Object.assign(failure, { reason: message });
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === 'string') Object.assign(failure, { code });
    return failure;
  }
}
