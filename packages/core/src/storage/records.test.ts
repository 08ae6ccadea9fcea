import Keyv from 'keyv';
import { describe, expect, it } from 'vitest';
import { markStorePrefixed, RecordStore } from './records.js';

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
