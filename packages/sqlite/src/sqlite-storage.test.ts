import { chmodSync, mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sqlite3 from 'sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from './index.js';

const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-sqlite-modes-'));
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const mode = (path: string) => statSync(path).mode & 0o777;

/** Runs `body` with the process's umask at `mask` (0: nothing masked, every mode as asked). */
async function withUmask<T>(mask: number, body: () => Promise<T>): Promise<T> {
  const previous = process.umask(mask);
  try {
    return await body();
  } finally {
    process.umask(previous);
  }
}

describe('createSqliteStore keeps its files private', () => {
  it('creates its folders 0700 and the database, -wal and -shm 0600, whatever the umask', async () => {
    const folder = join(dir, 'fresh', 'data');
    const path = join(folder, 'fleet.sqlite');
    await withUmask(0, async () => {
      const sqlite = await createSqliteStore({ path });
      // A record and an index write: the WAL and its shared memory exist while the connections are open.
      await sqlite.records.set('mcp-fleet:probe', { secret: 'x' });
      await sqlite.index.commit({ add: [{ set: 's', member: 'm', score: 1 }] });
      expect(readdirSync(folder).sort()).toEqual(['fleet.sqlite', 'fleet.sqlite-shm', 'fleet.sqlite-wal']);
      for (const file of readdirSync(folder)) expect([file, mode(join(folder, file))]).toEqual([file, 0o600]);
      await sqlite.close();
    });
    expect(mode(folder)).toBe(0o700);
    expect(mode(join(dir, 'fresh'))).toBe(0o700);
  });

  it('makes the files of an existing store private, and leaves a folder it did not create as it is', async () => {
    const folder = join(dir, 'existing');
    mkdirSync(folder, { mode: 0o755 });
    chmodSync(folder, 0o755);
    const path = join(folder, 'fleet.sqlite');
    // A store made by an earlier version: world-readable, with a WAL beside it.
    const before = await createSqliteStore({ path });
    await before.records.set('mcp-fleet:probe', 1);
    await before.close();
    for (const file of ['fleet.sqlite', 'fleet.sqlite-wal', 'fleet.sqlite-shm']) {
      writeFileSync(join(folder, file), '', { flag: 'a' });
      chmodSync(join(folder, file), 0o644);
    }
    const sqlite = await createSqliteStore({ path });
    await sqlite.records.set('mcp-fleet:probe', 2);
    for (const file of readdirSync(folder)) expect([file, mode(join(folder, file))]).toEqual([file, 0o600]);
    expect(await sqlite.records.get('mcp-fleet:probe')).toBe(2);
    await sqlite.close();
    expect(mode(folder)).toBe(0o755);
  });
});

describe('createSqliteStore refuses a file it cannot use', () => {
  it('a records table it cannot make is its rejection (not an unhandled one), and the file is free for the next store', async () => {
    const path = join(dir, 'taken', 'fleet.sqlite');
    mkdirSync(join(dir, 'taken'));
    // An index already named like the records table: CREATE TABLE IF NOT EXISTS fails on it.
    const db = new sqlite3.Database(path);
    await new Promise<void>((resolve, reject) =>
      db.exec('CREATE TABLE other (x); CREATE INDEX taken_records ON other (x);', (error) => (error ? reject(error) : resolve())),
    );
    await new Promise<void>((resolve) => db.close(() => resolve()));
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await expect(createSqliteStore({ path, tablePrefix: 'taken' })).rejects.toThrow(/already an index named taken_records\. Its tables are named taken_\* \(the tablePrefix option\)/);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    const other = await createSqliteStore({ path, tablePrefix: 'other_prefix', busyTimeout: 1 });
    await other.records.set('mcp-fleet:k', 1);
    expect(await other.records.get('mcp-fleet:k')).toBe(1);
    await other.close();
  });
});

describe('two stores over one file in one process', () => {
  it('write one at a time: busy writes of both never wait for each other into busyTimeout', async () => {
    const path = join(dir, 'shared', 'fleet.sqlite');
    // A lock held past 50 ms by the other store of this process would fail its writer: the two share one queue instead.
    const [a, b] = [await createSqliteStore({ path, busyTimeout: 50 }), await createSqliteStore({ path, busyTimeout: 50 })];
    try {
      const writes = Array.from({ length: 400 }, (_, i) => {
        const store = i % 2 === 0 ? a : b;
        return i % 4 < 2
          ? store.index.commit({ add: [{ set: 'shared', member: `m${i}`, score: i }] })
          : store.records.set(`mcp-fleet:r${i}`, { i });
      });
      const settled = await Promise.allSettled(writes);
      expect(settled.filter((s) => s.status === 'rejected').map((s) => String((s as PromiseRejectedResult).reason))).toEqual([]);
      expect(await b.index.count('shared')).toBe(200);
      expect(await a.records.get('mcp-fleet:r399')).toEqual({ i: 399 });
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('stores opened at once over a new file, and one opened while another writes, never wait for a lock', async () => {
    const path = join(dir, 'opened-at-once', 'fleet.sqlite');
    // Opening writes too (WAL mode, the tables): with a 1 ms wait, any lock met between this process's connections fails.
    const stores = await Promise.all(Array.from({ length: 4 }, () => createSqliteStore({ path, busyTimeout: 1 })));
    try {
      const writes = Array.from({ length: 200 }, (_, i) =>
        i % 2 === 0
          ? stores[i % 4]!.index.commit({ add: [{ set: 'opened', member: `m${i}`, score: i }] })
          : stores[i % 4]!.records.set(`mcp-fleet:r${i}`, { i }),
      );
      const late = createSqliteStore({ path, busyTimeout: 1 });
      const settled = await Promise.allSettled([...writes, late]);
      expect(settled.filter((s) => s.status === 'rejected').map((s) => String((s as PromiseRejectedResult).reason))).toEqual([]);
      stores.push(await late);
      expect(await stores[4]!.index.count('opened')).toBe(100);
      expect(await stores[4]!.records.get('mcp-fleet:r199')).toEqual({ i: 199 });
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it('a store closed leaves the other writing, and a store opened after both closed writes on its own', async () => {
    const path = join(dir, 'reopened', 'fleet.sqlite');
    const a = await createSqliteStore({ path });
    const b = await createSqliteStore({ path });
    await a.close();
    await b.index.commit({ add: [{ set: 's', member: 'after', score: 1 }] });
    await b.close();
    const c = await createSqliteStore({ path });
    await c.index.commit({ add: [{ set: 's', member: 'again', score: 2 }] });
    expect(await c.index.range('s', { offset: 0, limit: 10 })).toEqual(['after', 'again']);
    await c.close();
  });
});
