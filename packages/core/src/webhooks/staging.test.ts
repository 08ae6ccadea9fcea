import Keyv from 'keyv';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../store.js';
import { createFleet } from '../fleet.js';
import type { IndexTransaction } from '../storage/index-store.js';
import { MemoryIndexStore } from '../storage/memory-index-store.js';
import { DUE_SET } from './deliveries.js';
import { INTENT_SET } from '../events/outbox.js';
import { createWebhooks } from './service.js';
import { createGuardedAgent } from '../net/guarded-agent.js';
import { IndexCalls } from '../storage/index-calls.js';
import { RecordStore } from '../storage/records.js';

/** A memory index that records every commit, and can be told to fail the next ones. */
class SpyIndex extends MemoryIndexStore {
  readonly commits: IndexTransaction[] = [];
  failing = false;
  override commit(tx: IndexTransaction) {
    if (this.failing) throw new Error('index down');
    this.commits.push(tx);
    return super.commit(tx);
  }
}

const sets = (tx: IndexTransaction) => [...(tx.add ?? []), ...(tx.remove ?? [])].map((e) => e.set);

describe('registry changes stage their webhook events', () => {
  it('the intent is committed before the change, the publish in the same commit as its listings', async () => {
    const index = new SpyIndex();
    const storage = new Keyv({ throwOnErrors: true });
    const fleet = createFleet({ store: { ...createMemoryStore({ records: storage }), index }, rateLimit: false, webhooks: { worker: false } });
    (await fleet.webhooks.create('acct', { url: 'https://h.example.com/', events: ['server.created', 'server.updated', 'server.deleted'] }))._unsafeUnwrap();
    index.commits.length = 0;
    const server = (await fleet.servers.create('acct', { name: 'a', type: 'http', endpoint: 'https://mcp.example.com/mcp' }))._unsafeUnwrap();
    expect(index.commits).toHaveLength(2);
    expect(sets(index.commits[0]!)).toEqual([INTENT_SET]);
    const change = index.commits[1]!;
    expect(change.claims?.map((c) => c.key)).toEqual(['name:acct:a']);
    expect(sets(change)).toEqual(expect.arrayContaining(['servers:acct', DUE_SET, INTENT_SET]));
    index.commits.length = 0;
    (await fleet.servers.update('acct', server.id, { timeout: 1000 }))._unsafeUnwrap();
    (await fleet.servers.delete('acct', server.id))._unsafeUnwrap();
    expect(index.commits.map(sets).filter((s) => s.includes(DUE_SET))).toHaveLength(2);
    expect(await index.count(INTENT_SET)).toBe(0);
    expect(await index.count(DUE_SET)).toBe(3);
    await fleet.close();
  });

  it('an account listing no webhook: the create commits once, under the precondition that none is listed, and stages nothing', async () => {
    const index = new SpyIndex();
    const storage = new Keyv({ throwOnErrors: true });
    const fleet = createFleet({ store: { ...createMemoryStore({ records: storage }), index }, rateLimit: false, webhooks: { worker: false } });
    (await fleet.servers.create('acct', { name: 'a', type: 'http', endpoint: 'https://mcp.example.com/mcp' }))._unsafeUnwrap();
    expect(index.commits).toHaveLength(1);
    expect(index.commits[0]!.limits).toContainEqual({ set: 'webhooks:acct', max: 1 });
    expect(await index.count(INTENT_SET)).toBe(0);
    await fleet.close();
  });

  it('a webhook another process created is honoured: the create under the precondition is refused, then staged and published', async () => {
    const index = new SpyIndex();
    const storage = new Keyv({ throwOnErrors: true });
    const store = { ...createMemoryStore({ records: storage }), index };
    const fleet = createFleet({ store, rateLimit: false, webhooks: { worker: false } });
    const other = createFleet({ store, rateLimit: false, webhooks: { worker: false } });
    (await fleet.servers.create('acct', { name: 'a', type: 'http', endpoint: 'https://mcp.example.com/mcp' }))._unsafeUnwrap();
    (await other.webhooks.create('acct', { url: 'https://h.example.com/', events: ['server.created'] }))._unsafeUnwrap();
    index.commits.length = 0;
    const told: unknown[] = [];
    fleet.events.on('server.created', (event) => void told.push(event));
    const b = (await fleet.servers.create('acct', { name: 'b', type: 'http', endpoint: 'https://mcp.example.com/mcp' }))._unsafeUnwrap();
    // Refused by the webhook listed, then the intent and the change with its publication.
    expect(index.commits).toHaveLength(3);
    expect(index.commits[0]!.limits).toContainEqual({ set: 'webhooks:acct', max: 1 });
    expect(sets(index.commits[1]!)).toEqual([INTENT_SET]);
    expect(sets(index.commits[2]!)).toEqual(expect.arrayContaining(['servers:acct', DUE_SET, INTENT_SET]));
    expect(index.commits[2]!.limits).not.toContainEqual({ set: 'webhooks:acct', max: 1 });
    expect(await index.count(DUE_SET)).toBe(1);
    expect(told).toHaveLength(1);
    expect((await fleet.servers.get('acct', b.id))._unsafeUnwrap().id).toBe(b.id);
    // This process has seen the webhook: the next create stages at once, no refused commit first.
    index.commits.length = 0;
    (await fleet.servers.create('acct', { name: 'c', type: 'http', endpoint: 'https://mcp.example.com/mcp' }))._unsafeUnwrap();
    expect(index.commits).toHaveLength(2);
    expect(await index.count(DUE_SET)).toBe(2);
    // A webhook that subscribes to something else: the create is refused once, reads the subscribers, stages nothing.
    const third = createFleet({ store, rateLimit: false, webhooks: { worker: false } });
    (await other.webhooks.create('elsewhere', { url: 'https://h.example.com/', events: ['server.deleted'] }))._unsafeUnwrap();
    index.commits.length = 0;
    (await third.servers.create('elsewhere', { name: 'd', type: 'http', endpoint: 'https://mcp.example.com/mcp' }))._unsafeUnwrap();
    expect(index.commits).toHaveLength(2);
    expect(await index.count(DUE_SET)).toBe(2);
    expect(await index.count(INTENT_SET)).toBe(0);
    await Promise.all([fleet.close(), other.close(), third.close()]);
  });

  it('an index outage after the record was written leaves an intent that recovery publishes', async () => {
    let now = Date.parse('2026-11-22T10:00:00.000Z');
    const index = new SpyIndex({ now: () => now });
    const storage = new Keyv({ throwOnErrors: true });
    const fleet = createFleet({ store: { ...createMemoryStore({ records: storage }), index }, rateLimit: false, now: () => now, webhooks: { worker: false } });
    (await fleet.webhooks.create('acct', { url: 'https://h.example.com/', events: ['server.updated'] }))._unsafeUnwrap();
    const server = (await fleet.servers.create('acct', { name: 'a', type: 'http', endpoint: 'https://mcp.example.com/mcp' }))._unsafeUnwrap();
    // The intent commit succeeds, then the index goes down: the record is written, its commit is lost.
    const original = index.commit.bind(index);
    let calls = 0;
    index.commit = (tx) => {
      calls += 1;
      if (calls === 2) throw new Error('index down');
      return original(tx);
    };
    (await fleet.servers.update('acct', server.id, { timeout: 1000 }))._unsafeUnwrap();
    index.commit = original;
    expect(await index.count(INTENT_SET)).toBe(1);
    expect(await index.count(DUE_SET)).toBe(0);
    now += 61_000;
    const webhooks = createWebhooks(
      { records: new RecordStore(storage, 'mcp-fleet:'), index: new IndexCalls(index), agent: createGuardedAgent(), allowPrivateNetworks: false, now: () => now, onError: () => {} },
      { worker: false },
    );
    expect((await webhooks.outbox.recover())._unsafeUnwrap()).toBe(1);
    expect(await index.count(INTENT_SET)).toBe(0);
    expect(await index.count(DUE_SET)).toBe(1);
    await fleet.close();
  });
});
