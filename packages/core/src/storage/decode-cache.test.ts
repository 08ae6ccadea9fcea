import Keyv from 'keyv';
import { describe, expect, it } from 'vitest';
import { copy, decodeCacheStats, installDecodeCache } from './decode-cache.js';
import { createMemoryStorage, RecordStore } from './records.js';

const record = () => ({ id: 'srv_1', config: { name: 'a', args: ['x', { deep: true }] }, tags: [1, 2], at: null as string | null });

describe('the decode cache (a Keyv that keeps JSON text)', () => {
  it('decodes a text once, and every read after is a copy of its own', async () => {
    const keyv = new Keyv({ throwOnErrors: true });
    const records = new RecordStore(keyv, 't:');
    (await records.set('r', record()))._unsafeUnwrap();
    const stats = decodeCacheStats(keyv);
    const first = (await records.get<ReturnType<typeof record>>('r'))._unsafeUnwrap();
    const second = (await records.get<ReturnType<typeof record>>('r'))._unsafeUnwrap();
    expect(stats).toMatchObject({ misses: 1, hits: 1 });
    expect(second).toEqual(record());
    expect(second).not.toBe(first);
    (first as { config: { args: unknown[] } }).config.args.push('mutated');
    first!.tags[0] = 99;
    expect((await records.get('r'))._unsafeUnwrap()).toEqual(record());
    // The host reading the same Keyv gets copies too.
    const host = (await keyv.get<ReturnType<typeof record>>('t:r'))!;
    host.config.name = 'host';
    expect((await records.get('r'))._unsafeUnwrap()).toEqual(record());
  });

  it('answers by the stored text, so a write by anyone else (another process) is read at once', async () => {
    const keyv = new Keyv({ throwOnErrors: true });
    const records = new RecordStore(keyv, 't:');
    (await records.set('r', { v: 1 }))._unsafeUnwrap();
    expect((await records.get('r'))._unsafeUnwrap()).toEqual({ v: 1 });
    // Another writer, not through this RecordStore: the text changes under the cache.
    await (keyv.store as Map<string, string>).set('keyv:t:r', JSON.stringify({ value: { v: 2 } }));
    expect((await records.get('r'))._unsafeUnwrap()).toEqual({ v: 2 });
    await (keyv.store as Map<string, string>).delete('keyv:t:r');
    expect((await records.get('r'))._unsafeUnwrap()).toBeUndefined();
  });

  it('is installed once per Keyv, however many stores (fleets) share it', () => {
    const keyv = new Keyv({ throwOnErrors: true });
    new RecordStore(keyv, 'a:');
    const decode = keyv.deserialize;
    new RecordStore(keyv, 'b:');
    expect(keyv.deserialize).toBe(decode);
  });

  it('stays within two generations of text', () => {
    const keyv = new Keyv({ throwOnErrors: true });
    const stats = installDecodeCache(keyv, { generationChars: 1000 })!;
    for (let i = 0; i < 500; i++) keyv.deserialize!(JSON.stringify({ value: { i } }));
    expect(stats.misses).toBe(500);
    // About 20 characters a text: at most two generations of 1000.
    expect(stats.entries).toBeLessThanOrEqual(2 * (1000 / 20) + 2);
  });

  it('stays out of a Keyv with compression (the text is not the record)', () => {
    const keyv = new Keyv({ throwOnErrors: true, compression: { compress: async (v: unknown) => v, decompress: async (v: unknown) => v } as never });
    expect(installDecodeCache(keyv)).toBeUndefined();
  });
});

describe('the fleet’s own memory storage (records kept as objects)', () => {
  it('copies values in and out: neither the writer nor a reader can change what is stored', async () => {
    const storage = createMemoryStorage();
    const records = new RecordStore(storage, 't:');
    const written = record();
    (await records.set('r', written))._unsafeUnwrap();
    written.config.name = 'changed after the write';
    const read = (await records.get<ReturnType<typeof record>>('r'))._unsafeUnwrap()!;
    expect(read).toEqual(record());
    read.tags.push(3);
    const [again] = (await records.getMany<ReturnType<typeof record>>(['r']))._unsafeUnwrap();
    expect(again).toEqual(record());
    expect(again).not.toBe(read);
  });

  it('is shared by two stores over it (two fleets in one process) and honours expiry', async () => {
    const storage = createMemoryStorage();
    const a = new RecordStore(storage, 't:');
    const b = new RecordStore(storage, 't:');
    (await a.set('r', { v: 1 }, 30))._unsafeUnwrap();
    expect((await b.get('r'))._unsafeUnwrap()).toEqual({ v: 1 });
    (await b.delete('r'))._unsafeUnwrap();
    expect((await a.get('r'))._unsafeUnwrap()).toBeUndefined();
    (await a.set('s', { v: 2 }, 1))._unsafeUnwrap();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await b.get('s'))._unsafeUnwrap()).toBeUndefined();
  });
});

describe('copy', () => {
  it('keeps JSON’s meaning: undefined properties dropped, toJSON applied, __proto__ a key and never a prototype', () => {
    const parsed = JSON.parse('{"__proto__":{"polluted":true},"a":1}');
    const copied = copy(parsed);
    expect(Object.getPrototypeOf(copied)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(copied)).toEqual(['__proto__', 'a']);
    expect(copy({ a: undefined, d: new Date(0), b: Buffer.from('x') })).toEqual({ d: '1970-01-01T00:00:00.000Z', b: Buffer.from('x') });
  });
});
