import { chmod, mkdir, open } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import KeyvSqlite from '@keyv/sqlite';
import Keyv from 'keyv';
import { SqliteIndexStore } from './sqlite-index-store.js';

export { SqliteIndexStore, type SqliteIndexStoreOptions } from './sqlite-index-store.js';

export interface SqliteStorageOptions {
  /**
   * Database file; its folder is created if missing (0700). The file and its `-wal`/`-shm` are made 0600, readable by
   * this user alone. `:memory:` for a throwaway store.
   */
  path: string;
  /** Prefix of every table mcp-fleet creates in the file. @default 'mcp_fleet' */
  tablePrefix?: string;
  /** How long a write waits for a lock held by another connection, in ms. @default 5000 */
  busyTimeout?: number;
}

/** Both halves of storage for `createFleet`, in one SQLite file, plus `close`. */
export interface SqliteStorage {
  storage: Keyv;
  index: SqliteIndexStore;
  close(): Promise<void>;
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

/**
 * Opens (or creates) an SQLite file holding mcp-fleet's records (through `@keyv/sqlite`) and its index
 * (claims and listings). Survives restarts and crashes: every write is committed before the call returns.
 *
 * ```ts
 * const sqlite = await createSqliteStorage({ path: './.mcp-fleet/fleet.sqlite' });
 * const fleet = createFleet({ storage: sqlite.storage, index: sqlite.index });
 * ```
 */
export async function createSqliteStorage(options: SqliteStorageOptions): Promise<SqliteStorage> {
  const memory = options.path === ':memory:';
  const path = memory ? options.path : resolve(options.path);
  if (!memory) await keepPrivate(path);
  const tablePrefix = options.tablePrefix ?? 'mcp_fleet';
  const busyTimeout = options.busyTimeout ?? 5000;
  // The index opens first: it switches the file to WAL, so the record connection never blocks readers.
  const index = await SqliteIndexStore.open({ path, tablePrefix, busyTimeout });
  const adapter = new KeyvSqlite({ uri: `sqlite://${path}`, table: `${tablePrefix}_records`, busyTimeout });
  const storage = new Keyv({ store: adapter, namespace: '', throwOnErrors: true });
  return {
    storage,
    index,
    close: async () => {
      await index.close();
      await storage.disconnect();
    },
  };
}
