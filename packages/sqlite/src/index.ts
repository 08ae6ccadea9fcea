import { chmod, mkdir, open } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import KeyvSqlite from '@keyv/sqlite';
import Keyv from 'keyv';
import { type FleetStore, type IndexStore, MemoryRateLimitStore } from '@mcp-fleet/core';
import { SqliteIndexStore } from './sqlite-index-store.js';

export { SqliteIndexStore, type SqliteIndexStoreOptions } from './sqlite-index-store.js';

export interface SqliteStoreOptions {
  /**
   * Database file; its folder is created if missing (0700). The file and its `-wal`/`-shm` are made 0600, readable by
   * this user alone. `:memory:` for a throwaway store.
   */
  path: string;
  /** Prefix of every table mcp-fleet creates in the file. @default 'mcp_fleet' */
  tablePrefix?: string;
  /** How long a write waits for a lock held by another connection, in ms. @default 5000 */
  busyTimeout?: number;
  /** Clock of name claims and counters, for tests. @default Date.now */
  now?: () => number;
}

/**
 * Makes the database's files readable by this user alone, whatever the umask: the folders it creates 0700, the file
 * 0600 (created empty here if missing, so that SQLite never makes it 0644), and an existing file and its `-wal`,
 * `-shm` and `-journal` set to 0600. SQLite creates its `-wal`, `-shm` and `-journal` with the mode of the database
 * file, so they follow. A folder that exists is left as it is; a file this user does not own (EPERM) too.
 */
async function keepPrivate(path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await (await open(path, 'a', 0o600)).close();
  for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) {
    await chmod(file, 0o600).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT' && error.code !== 'EPERM') throw error;
    });
  }
}

type Writer = <T>(write: () => T | PromiseLike<T>) => Promise<T>;

/** Runs the writes given to it one after another, in the order given, whether each succeeds or fails. */
function oneAtATime(): Writer {
  let tail: Promise<unknown> = Promise.resolve();
  return (write) => {
    const run = tail.then(write, write);
    tail = run.catch(() => {});
    return run;
  };
}

/** The writer of each file open in this process, with the number of stores over it. */
const writers = new Map<string, { write: Writer; stores: number }>();

/**
 * The one writer of a file in this process, shared by every store opened over it (two fleets over one file in one
 * process would otherwise write at once and could fill libuv's pool with connections waiting for the lock: see
 * below). Its release forgets the file once the last store over it has closed. `:memory:` is a database per store.
 */
function writerOf(path: string): { write: Writer; release: () => void } {
  if (path === ':memory:') return { write: oneAtATime(), release: () => {} };
  const shared = writers.get(path) ?? { write: oneAtATime(), stores: 0 };
  shared.stores += 1;
  writers.set(path, shared);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    shared.stores -= 1;
    if (shared.stores === 0 && writers.get(path) === shared) writers.delete(path);
  };
  return { write: shared.write, release };
}

/**
 * Opens the file's two connections and makes its tables: the index first, as it switches the file to WAL (so the
 * record connection never blocks readers), then the records, whose table `@keyv/sqlite` makes in the background once
 * connected (a first query waits for it, and a failure to make it is thrown here instead of left unhandled).
 */
async function openConnections(
  path: string,
  tablePrefix: string,
  busyTimeout: number,
  now: () => number,
): Promise<{ claims: SqliteIndexStore; adapter: KeyvSqlite }> {
  const claims = await SqliteIndexStore.open({ path, tablePrefix, busyTimeout, now });
  const adapter = new KeyvSqlite({ uri: `sqlite://${path}`, table: `${tablePrefix}_records`, busyTimeout });
  try {
    await adapter.query('SELECT 1');
  } catch (error) {
    await claims.close().catch(() => {});
    await adapter.close().catch(() => {});
    throw error;
  }
  return { claims, adapter };
}

/**
 * Opens (or creates) an SQLite file holding mcp-fleet's records (through `@keyv/sqlite`) and its index (claims,
 * listings, quotas, the webhook outbox), and gives the store `createFleet` takes. Survives restarts and crashes: every
 * write is committed before the call returns.
 *
 * A file serves one process: its records and index are shared by every connection to it (a second fleet or a
 * command-line tool over the same file sees the same servers, keys and claims), but rate-limit counters and the
 * health monitor's leases are kept in this process's memory. For limits exact across processes, use Redis.
 *
 * ```ts
 * const store = await createSqliteStore({ path: './.mcp-fleet/fleet.sqlite' });
 * const fleet = createFleet({ store });
 * // on shutdown: await fleet.close(); await store.close();
 * ```
 */
export async function createSqliteStore(options: SqliteStoreOptions): Promise<FleetStore> {
  const memory = options.path === ':memory:';
  const path = memory ? options.path : resolve(options.path);
  if (!memory) await keepPrivate(path);
  const tablePrefix = options.tablePrefix ?? 'mcp_fleet';
  const busyTimeout = options.busyTimeout ?? 5000;
  const now = options.now ?? Date.now;
  // SQLite lets one connection write at a time; the others wait for the lock asleep on libuv's pool of 4 threads. Two
  // connections of this process writing at once could fill the pool with waiters while the holder's COMMIT waits for
  // a thread (then every write fails after busyTimeout): this process's writes to the file go one at a time instead,
  // those of every store over it included, which costs nothing, as the file takes one writer anyway. Opening writes
  // too (WAL mode, the tables), so a store opens in its turn, while another store over the file writes.
  const { write, release } = writerOf(path);
  const { claims, adapter } = await write(() => openConnections(path, tablePrefix, busyTimeout, now)).catch((error: unknown) => {
    release();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `createSqliteStore could not open ${path}: ${reason}. Its tables are named ${tablePrefix}_* (the tablePrefix option); ` +
        `a lock held by another process is waited for ${busyTimeout} ms (the busyTimeout option).`,
      { cause: error },
    );
  });
  for (const method of ['set', 'delete', 'deleteMany', 'clear'] as const) {
    const original = adapter[method].bind(adapter) as (...args: unknown[]) => Promise<unknown>;
    (adapter as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => write(() => original(...args));
  }
  const records = new Keyv({ store: adapter, namespace: '', throwOnErrors: true });
  const index: IndexStore = {
    commit: (transaction) => write(() => claims.commit(transaction)),
    claimOf: (key) => claims.claimOf(key),
    range: (set, range) => claims.range(set, range),
    count: (set) => claims.count(set),
    close: () => claims.close(),
  };
  // In this process: a file is one process's store (see above). Leases are counters of limit 1.
  const rateLimits = new MemoryRateLimitStore({ now });
  let closing: Promise<void> | undefined;
  const close = async () => {
    try {
      await rateLimits.close();
      await claims.close();
      await records.disconnect();
    } finally {
      release();
    }
  };
  return { records, index, rateLimits, leases: rateLimits, close: () => (closing ??= close()) };
}
