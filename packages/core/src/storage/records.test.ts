import Keyv from 'keyv';
import { describe, expect, it } from 'vitest';
import { createMemoryStorage, markStorePrefixed, RecordStore } from './records.js';

/** The keys a Keyv holds, as its store sees them. */
async function keysOf(keyv: Keyv): Promise<string[]> {
  const keys: string[] = [];
  for await (const [key] of (keyv.store as Map<string, unknown>).entries()) keys.push(key);
  return keys.sort();
}

describe('RecordStore key prefix', () => {
  it('prefixes every key of a bare Keyv with keyPrefix, so the host’s own keys are never touched', async () => {
    const keyv = new Keyv({ store: new Map(), namespace: '', throwOnErrors: true });
    await keyv.set('server:srv_1', 'the host’s');
    const records = new RecordStore(keyv, 'mcp-fleet:');
    (await records.set('server:srv_1', { ours: true }))._unsafeUnwrap();
    expect(await keysOf(keyv)).toEqual(['mcp-fleet:server:srv_1', 'server:srv_1']);
    expect((await records.get('server:srv_1'))._unsafeUnwrap()).toEqual({ ours: true });
    (await records.deleteMany(['server:srv_1']))._unsafeUnwrap();
    expect(await keysOf(keyv)).toEqual(['server:srv_1']);
  });

  it('adds nothing to a Keyv whose store prefixes its keys itself (markStorePrefixed)', async () => {
    const keyv = markStorePrefixed(new Keyv({ store: new Map(), namespace: '', throwOnErrors: true }));
    const records = new RecordStore(keyv, 'mcp-fleet:');
    (await records.set('server:srv_1', { ours: true }))._unsafeUnwrap();
    expect(await keysOf(keyv)).toEqual(['server:srv_1']);
    expect((await records.getMany(['server:srv_1', 'server:srv_2']))._unsafeUnwrap()).toEqual([{ ours: true }, undefined]);
    (await records.delete('server:srv_1'))._unsafeUnwrap();
    expect(await keysOf(keyv)).toEqual([]);
  });

  it('reads the mark by its Symbol.for name, so a store package built against another copy of core is understood', async () => {
    const keyv = new Keyv({ store: new Map(), namespace: '', throwOnErrors: true });
    Object.defineProperty(keyv, Symbol.for('mcp-fleet.storePrefixed'), { value: true });
    (await new RecordStore(keyv, 'mcp-fleet:').set('k', 1))._unsafeUnwrap();
    expect(await keysOf(keyv)).toEqual(['k']);
  });
});

describe('createMemoryStorage through Keyv', () => {
  // The object memory keeps a record as it is, not in Keyv's layout: Keyv itself still reads and writes it as any Keyv.
  it('reads, through Keyv, what the fleet wrote, and the fleet reads what Keyv wrote, expiry included', async () => {
    const keyv = createMemoryStorage();
    const records = new RecordStore(keyv, 'mcp-fleet:');
    (await records.set('server:srv_1', { name: 'ours', tags: ['a'] }))._unsafeUnwrap();
    expect(await keyv.get('mcp-fleet:server:srv_1')).toEqual({ name: 'ours', tags: ['a'] });

    await keyv.set('mcp-fleet:server:srv_2', { name: 'written by Keyv' });
    expect((await records.get('server:srv_2'))._unsafeUnwrap()).toEqual({ name: 'written by Keyv' });
    await keyv.set('mcp-fleet:server:srv_3', { name: 'brief' }, 1);
    (await records.set('server:srv_4', { name: 'brief too' }, 1))._unsafeUnwrap();
    expect(await keyv.get('mcp-fleet:server:srv_4')).toEqual({ name: 'brief too' });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await records.get('server:srv_3'))._unsafeUnwrap()).toBeUndefined();
    expect(await keyv.get('mcp-fleet:server:srv_4')).toBeUndefined();

    // Keyv's iterator (its keys as it gives them back, its values) sees the values, the expired ones gone.
    const values: unknown[] = [];
    for await (const [, value] of keyv.iterator?.(undefined) ?? []) values.push(value);
    expect(values).toEqual([{ name: 'ours', tags: ['a'] }, { name: 'written by Keyv' }]);
  });
});

describe('RecordStore.setAt', () => {
  it('writes under family + id, read back by the whole key, through Keyv too, over the object memory and any Keyv', async () => {
    for (const keyv of [createMemoryStorage(), new Keyv({ store: new Map(), namespace: '', throwOnErrors: true })]) {
      const records = new RecordStore(keyv, 'mcp-fleet:');
      (await records.setAt('server:', 'srv_1', { name: 'one' }))._unsafeUnwrap();
      expect((await records.get('server:srv_1'))._unsafeUnwrap()).toEqual({ name: 'one' });
      expect(await keyv.get('mcp-fleet:server:srv_1')).toEqual({ name: 'one' });
      expect(await keysOf(keyv)).toEqual(['mcp-fleet:server:srv_1']);
      (await records.delete('server:srv_1'))._unsafeUnwrap();
      expect(await keysOf(keyv)).toEqual([]);
    }
  });

  it('writes with a time to live: expired after it, over the object memory and any Keyv', async () => {
    for (const keyv of [createMemoryStorage(), new Keyv({ store: new Map(), namespace: '', throwOnErrors: true })]) {
      const records = new RecordStore(keyv, 'mcp-fleet:');
      (await records.setAt('toolcall:', 'call_1', { name: 'one' }, 5))._unsafeUnwrap();
      (await records.setAt('toolcall:', 'call_2', { name: 'two' }, 60_000))._unsafeUnwrap();
      expect((await records.get('toolcall:call_1'))._unsafeUnwrap()).toEqual({ name: 'one' });
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect((await records.get('toolcall:call_1'))._unsafeUnwrap()).toBeUndefined();
      expect((await records.get('toolcall:call_2'))._unsafeUnwrap()).toEqual({ name: 'two' });
    }
  });

  it('reads and writes each key as its own, the same key asked again or keys in turn', async () => {
    const records = new RecordStore(createMemoryStorage(), 'mcp-fleet:');
    for (let i = 0; i < 3; i++) {
      for (const key of ['a', 'b', 'b', 'a']) {
        const found = (await records.get<{ n: number }>(key))._unsafeUnwrap();
        (await records.set(key, { key, n: (found?.n ?? 0) + 1 }, undefined, true))._unsafeUnwrap();
      }
    }
    expect((await records.getMany(['a', 'b']))._unsafeUnwrap()).toEqual([{ key: 'a', n: 6 }, { key: 'b', n: 6 }]);
  });

  it('counts the write as a change of every prefix the whole key begins with, and of no other (memoryChangesOf)', async () => {
    const records = new RecordStore(createMemoryStorage(), 'mcp-fleet:');
    // Prefixes shorter than the family, the family itself, longer ones within the id, and others.
    const asked = ['', 'server:', 'server:srv_', 'server:srv_a', 'server:srv_b', 'serverless:', 'key:'];
    const before = asked.map((prefix) => records.memoryChangesOf(prefix));
    (await records.setAt('server:', 'srv_a1', { name: 'a' }))._unsafeUnwrap();
    const after = asked.map((prefix, i) => (records.memoryChangesOf(prefix) as number) - (before[i] as number));
    expect(after).toEqual([1, 1, 1, 1, 0, 0, 0]);
    // The same as `set` counts it.
    (await records.set('server:srv_a2', { name: 'a' }))._unsafeUnwrap();
    expect(asked.map((prefix, i) => (records.memoryChangesOf(prefix) as number) - (before[i] as number))).toEqual([2, 2, 2, 2, 0, 0, 0]);
  });
});
