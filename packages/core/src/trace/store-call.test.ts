import { tracingChannel } from 'node:diagnostics_channel';
import Keyv from 'keyv';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RateLimiter } from '../ratelimit/limiter.js';
import { IndexCalls } from '../storage/index-calls.js';
import { MemoryIndexStore } from '../storage/memory-index-store.js';
import { RecordStore } from '../storage/records.js';
import type { StoreMessage } from './channels.js';

const channel = tracingChannel<unknown, StoreMessage>('mcp-fleet:store');
const calls: string[] = [];
const handlers = {
  start: () => {},
  end: (message: StoreMessage) => {
    if (message.outcome !== undefined) calls.push(`${message.port}.${message.method} ${message.outcome}`);
  },
  asyncStart: () => {},
  asyncEnd: (message: StoreMessage) => calls.push(`${message.port}.${message.method} ${message.outcome}`),
  error: () => {},
};

beforeEach(() => channel.subscribe(handlers));
afterEach(() => {
  channel.unsubscribe(handlers);
  calls.length = 0;
});

describe('mcp-fleet:store', () => {
  it('traces each call of the record storage (a Keyv), never a key or a value', async () => {
    const records = new RecordStore(new Keyv({ throwOnErrors: true }), 'p:');
    (await records.set('a', { secret: 'x' })).unwrapOr(undefined);
    (await records.get('a')).unwrapOr(undefined);
    (await records.getMany(['a', 'b'])).unwrapOr(undefined);
    (await records.delete('a')).unwrapOr(undefined);
    expect(calls[0]).toBe('records.set ok');
    expect(calls).toContain('records.get ok');
    expect(calls.at(-1)).toBe('records.delete ok');
  });

  it('traces each call of the index store', async () => {
    const index = new IndexCalls(new MemoryIndexStore());
    expect((await index.commit({ add: [{ set: 's', member: 'm', score: 1 }] })).isOk()).toBe(true);
    expect((await index.range('s', { offset: 0, limit: 10 }))._unsafeUnwrap()).toEqual(['m']);
    expect(calls).toEqual(['index.commit ok', 'index.range ok']);
  });

  it('traces each call of the rate-limit counters', async () => {
    const limiter = new RateLimiter({}, () => Date.parse('2026-11-26T12:00:00Z'));
    expect((await limiter.admit({ account: 'acme', tier: 'free', scopes: null }, undefined))._unsafeUnwrap()?.allowed).toBe(true);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatch(/^ratelimit\.consume(Now)? ok$/);
  });
});
