import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createFleet } from '@mcp-fleet/core';
import { startV2ToolServer } from '../../core/src/mcp/fixtures/tool-servers.js';
import sqlite3 from 'sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { indexStoreContract } from '@mcp-fleet/core/testing';
import { createSqliteStore, SqliteIndexStore } from './index.js';

const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-sqlite-test-'));
let generation = 0;
/**
 * Connections racing in one process. Kept below libuv's pool of 4 threads: a connection waiting for the write lock
 * sleeps on a pool thread, and with 4 waiting the holder could not run its COMMIT until they time out.
 */
const CONNECTIONS = 3;

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A new file for every case; reopening within a case reaches the same file. */
function freshFile(): string {
  generation += 1;
  return join(dir, `index-${generation}.sqlite`);
}

let current = freshFile();

indexStoreContract(
  'SqliteIndexStore',
  async ({ now }) => SqliteIndexStore.open({ path: current, now }),
  async () => {
    await rm(current, { force: true });
    await rm(`${current}-wal`, { force: true });
    await rm(`${current}-shm`, { force: true });
    current = freshFile();
  },
  { durable: true, shared: true },
);

indexStoreContract('SqliteIndexStore (:memory:)', async ({ now }) => SqliteIndexStore.open({ path: ':memory:', now }));

/** Table names in an SQLite file, read through a connection of its own. */
function tables(path: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(path, sqlite3.OPEN_READONLY, (openError) => {
      if (openError) return reject(openError);
      db.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", [], (error, rows) => {
        db.close(() => (error ? reject(error) : resolve(rows.map((r) => r.name))));
      });
    });
  });
}

describe('SqliteIndexStore on a file', () => {
  const toClose: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const c of toClose.splice(0)) await c.close();
  });
  const track = <T extends { close(): Promise<void> }>(c: T) => {
    toClose.push(c);
    return c;
  };

  it('keeps claims and sets across close and reopen', async () => {
    const path = freshFile();
    const first = await SqliteIndexStore.open({ path, now: () => 42 });
    await first.commit({ claims: [{ key: 'name:a:x', owner: 'srv_1' }], add: [{ set: 'servers:a', member: 'srv_1', score: 7 }] });
    await first.close();
    const second = track(await SqliteIndexStore.open({ path }));
    expect(await second.claimOf('name:a:x')).toEqual({ owner: 'srv_1', since: 42 });
    expect(await second.range('servers:a', { offset: 0, limit: 10 })).toEqual(['srv_1']);
    expect(await second.count('servers:a')).toBe(1);
  });

  it('connections on the same file committing one claim concurrently: exactly one wins', async () => {
    const path = freshFile();
    const connections = [];
    for (let i = 0; i < CONNECTIONS; i++) connections.push(track(await SqliteIndexStore.open({ path, busyTimeout: 10_000 })));
    for (let round = 0; round < 20; round++) {
      const key = `contested-${round}`;
      const attempts = connections.flatMap((conn, c) =>
        [0, 1].map((j) => conn.commit({ claims: [{ key, owner: `o${c}-${j}` }], add: [{ set: `winners-${round}`, member: `o${c}-${j}`, score: 0 }] })),
      );
      const results = await Promise.all(attempts);
      const winners = results.flatMap((r, i) => (r.ok ? [`o${Math.floor(i / 2)}-${i % 2}`] : []));
      expect(winners).toHaveLength(1);
      for (const conn of connections) expect((await conn.claimOf(key))?.owner).toBe(winners[0]);
      expect(await connections[0]?.range(`winners-${round}`, { offset: 0, limit: 100 })).toEqual(winners);
    }
  });

  it('processes on the same file racing for the same claims: exactly one wins each', async () => {
    // Separate processes run truly in parallel, unlike connections sharing one event loop. They use the build
    // that the global setup makes, exactly what a second server process would load.
    const built = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    const path = freshFile();
    track(await SqliteIndexStore.open({ path }));
    const rounds = 30;
    const start = Date.now() + 1500;
    const script = `
      const { SqliteIndexStore } = await import(process.argv[1]);
      const [path, owner, start, rounds] = process.argv.slice(2);
      const store = await SqliteIndexStore.open({ path, busyTimeout: 15000 });
      while (Date.now() < Number(start)) {}
      const won = [];
      for (let round = 0; round < Number(rounds); round++) {
        const result = await store.commit({ claims: [{ key: 'k' + round, owner }], add: [{ set: 'w' + round, member: owner, score: 0 }] });
        if (result.ok) won.push(round);
      }
      await store.close();
      process.stdout.write(JSON.stringify(won));
    `;
    const run = (owner: string) =>
      new Promise<number[]>((resolve, reject) => {
        execFile(process.execPath, ['--input-type=module', '-e', script, built, path, owner, String(start), String(rounds)], (error, stdout) =>
          error ? reject(error) : resolve(JSON.parse(stdout) as number[]),
        );
      });
    const owners = ['p0', 'p1', 'p2', 'p3'];
    const won = await Promise.all(owners.map(run));
    const check = track(await SqliteIndexStore.open({ path }));
    for (let round = 0; round < rounds; round++) {
      const winners = owners.filter((_, i) => won[i]?.includes(round));
      expect(winners, `round ${round}`).toHaveLength(1);
      expect((await check.claimOf(`k${round}`))?.owner).toBe(winners[0]);
      expect(await check.range(`w${round}`, { offset: 0, limit: 10 })).toEqual(winners);
    }
  });

  it('uses its table prefix and refuses one that is not an identifier', async () => {
    const path = freshFile();
    track(await SqliteIndexStore.open({ path, tablePrefix: 'host_app_idx' }));
    expect(await tables(path)).toEqual(['host_app_idx_claims', 'host_app_idx_sets']);
    await expect(SqliteIndexStore.open({ path, tablePrefix: 'x; DROP TABLE y' })).rejects.toThrow(TypeError);
    await expect(SqliteIndexStore.open({ path, tablePrefix: '' })).rejects.toThrow(TypeError);
  });

  it('two table prefixes in one file are two independent stores', async () => {
    const path = freshFile();
    const one = track(await SqliteIndexStore.open({ path, tablePrefix: 'one' }));
    const two = track(await SqliteIndexStore.open({ path, tablePrefix: 'two' }));
    await one.commit({ claims: [{ key: 'k', owner: 'a' }], add: [{ set: 's', member: 'm', score: 1 }] });
    expect(await two.claimOf('k')).toBeUndefined();
    expect(await two.count('s')).toBe(0);
    expect(await two.commit({ claims: [{ key: 'k', owner: 'b' }] })).toEqual({ ok: true });
  });

  it('a commit after close rejects instead of hanging', async () => {
    const store = await SqliteIndexStore.open({ path: freshFile() });
    await store.close();
    await expect(store.commit({ add: [{ set: 's', member: 'm', score: 1 }] })).rejects.toThrow();
  });
});

describe('createSqliteStore', () => {
  it('gives a Keyv whose records survive close and reopen, in tables under its prefix only', async () => {
    const path = join(dir, 'nested', 'folder', 'fleet.sqlite');
    const first = await createSqliteStore({ path, tablePrefix: 'embedded' });
    expect(first.records.throwOnErrors).toBe(true);
    await first.records.set('mcp-fleet:probe', { deep: { value: [1, 2, 3] } });
    await first.index.commit({ claims: [{ key: 'k', owner: 'o' }] });
    await first.close();

    const second = await createSqliteStore({ path, tablePrefix: 'embedded' });
    try {
      expect(await second.records.get('mcp-fleet:probe')).toEqual({ deep: { value: [1, 2, 3] } });
      expect((await second.index.claimOf('k'))?.owner).toBe('o');
    } finally {
      await second.close();
    }
    expect(await tables(path)).toEqual(['embedded_claims', 'embedded_records', 'embedded_sets']);
  });

  it('defaults its table prefix to mcp_fleet', async () => {
    const path = join(dir, 'default-prefix.sqlite');
    const storage = await createSqliteStore({ path });
    await storage.records.set('x', 1);
    await storage.close();
    expect(await tables(path)).toEqual(['mcp_fleet_claims', 'mcp_fleet_records', 'mcp_fleet_sets']);
  });

  it('backs a fleet whose servers, names and listings survive a restart', async () => {
    const path = join(dir, 'fleet-restart.sqlite');
    const first = await createSqliteStore({ path });
    const fleet1 = createFleet({ store: first });
    const created = await fleet1.servers.create('acme', { name: 'weather', type: 'http', endpoint: 'https://weather.example/mcp' });
    if (created.isErr()) throw created.error;
    await fleet1.close();
    await first.close();

    const second = await createSqliteStore({ path });
    try {
      const fleet2 = createFleet({ store: second });
      const got = await fleet2.servers.get('acme', created.value.id);
      expect(got._unsafeUnwrap().name).toBe('weather');
      const listed = (await fleet2.servers.list('acme'))._unsafeUnwrap();
      expect(listed.data.map((s) => s.id)).toEqual([created.value.id]);
      expect(listed.pagination.total).toBe(1);
      const again = await fleet2.servers.create('acme', { name: 'weather', type: 'http', endpoint: 'https://other.example/mcp' });
      expect(again._unsafeUnwrapErr().code).toBe('SERVER_NAME_EXISTS');
      await fleet2.close();
    } finally {
      await second.close();
    }
  });

  it('keeps tool call records, their filtered listings and recorded payloads across a restart', async () => {
    const path = join(dir, 'toolcalls-restart.sqlite');
    const upstream = await startV2ToolServer();
    const first = await createSqliteStore({ path });
    const options = { allowPrivateNetworks: true, toolCalls: { record: { arguments: true, results: true } } } as const;
    let ids: string[] = [];
    let serverId = '';
    try {
      const fleet1 = createFleet({ store: first, ...options });
      serverId = (await fleet1.servers.create('acme', { name: 'tools', type: 'http', endpoint: upstream.url }))._unsafeUnwrap().id;
      const ok = (await fleet1.tools.call('acme', serverId, 'echo', { text: 'kept' }))._unsafeUnwrap();
      const failed = (await fleet1.tools.call('acme', serverId, 'fail', {}))._unsafeUnwrap();
      ids = [failed.id, ok.id];
      await fleet1.close();
      await first.close();

      const second = await createSqliteStore({ path });
      try {
        const fleet2 = createFleet({ store: second, ...options });
        const listed = (await fleet2.toolCalls.list('acme'))._unsafeUnwrap();
        expect(listed.pagination.total).toBe(2);
        expect(new Set(listed.data.map((c) => c.id))).toEqual(new Set(ids));
        const errors = (await fleet2.toolCalls.list('acme', { status: 'error' }))._unsafeUnwrap();
        expect(errors.data.map((c) => c.id)).toEqual([failed.id]);
        const stored = (await fleet2.toolCalls.get('acme', ok.id))._unsafeUnwrap();
        expect(stored).toMatchObject({ status: 'success', arguments: { text: 'kept' }, server_id: serverId });
        await fleet2.close();
      } finally {
        await second.close();
      }
    } finally {
      await upstream.close();
    }
  });

  it('works on :memory:', async () => {
    const storage = await createSqliteStore({ path: ':memory:' });
    try {
      await storage.records.set('k', 'v');
      expect(await storage.records.get('k')).toBe('v');
      expect(await storage.index.commit({ claims: [{ key: 'k', owner: 'o' }] })).toEqual({ ok: true });
    } finally {
      await storage.close();
    }
  });
});
