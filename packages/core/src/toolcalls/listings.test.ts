import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Tool } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { isFleetError } from '../errors/fleet-error.js';
import { EventBus } from '../events/bus.js';
import { closedAfterEach } from '../mcp/fixtures/listen.js';
import { startHostileUpstream } from '../mcp/fixtures/hostile-upstream.js';
import { serverRecord } from '../registry/test-helpers.js';
import { type Listing, ListingCache, readListing, resolveListings } from './listings.js';

const started = closedAfterEach();

const server = serverRecord;

const listingOf = (bytes: number): Listing<Tool> => ({ items: [{ name: 'x', inputSchema: { type: 'object' } }], bytes });

async function clientOf(url: string): Promise<Client> {
  const client = new Client({ name: 'listings-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

describe('readListing: a listing bounded whole, across its pages', () => {
  it('refuses past listings.maxBytes before asking for the next page; within it, answers every page', async () => {
    // 20 pages of ~100 KB.
    const hostile = await started(startHostileUpstream({ pages: 20, perPage: 10, descriptionBytes: 10_000 }));
    const client = await clientOf(hostile.url);
    const refused = await readListing(client, 'tools', 10_000, { maxBytes: 350_000, maxItems: 10_000 }).catch((error: unknown) => error);
    expect(isFleetError(refused) && refused.code).toBe('UPSTREAM_RESPONSE_TOO_LARGE');
    expect((refused as Error).message).toContain('listings.maxBytes');
    expect(hostile.pagesServed()).toBe(4);
    const whole = await readListing(client, 'tools', 10_000, { maxBytes: 4_000_000, maxItems: 10_000 });
    expect(whole.items).toHaveLength(200);
    expect(whole.bytes).toBeGreaterThan(2_000_000);
    await client.close();
  });

  it('refuses past listings.maxItems, prompts as tools', async () => {
    const hostile = await started(startHostileUpstream({ pages: 30, perPage: 50 }));
    const client = await clientOf(hostile.url);
    const refused = await readListing(client, 'prompts', 10_000, { maxBytes: 4_000_000, maxItems: 120 }).catch((error: unknown) => error);
    expect(isFleetError(refused) && refused.code).toBe('UPSTREAM_RESPONSE_TOO_LARGE');
    expect((refused as Error).message).toContain('listings.maxItems');
    expect((refused as Error).message).toContain('prompts/list');
    await client.close();
  });
});

describe('ListingCache', () => {
  it("drops a server's listings when it is updated or deleted (it follows the registry's events)", () => {
    const events = new EventBus(() => {});
    const cache = new ListingCache({ now: () => 0, limits: resolveListings() });
    cache.follow(events);
    cache.store(server(), 'tools', listingOf(1000));
    cache.store(server(), 'prompts', listingOf(500));
    cache.store(server({ id: 'srv_b' }), 'tools', listingOf(300));
    expect(cache.bytes('acct')).toBe(1800);
    events.emit('server.deleted', { account: 'acct', server: { id: 'srv_a' } } as never);
    expect(cache.bytes()).toBe(300);
    expect(cache.get(server(), 'tools')).toBeUndefined();
    events.emit('server.updated', { account: 'acct', server: { id: 'srv_b' } } as never);
    expect(cache.size).toBe(0);
    expect(cache.bytes()).toBe(0);
  });

  it('keeps at most listings.cacheBytesPerAccount per account, least recently used out first; another account keeps its own', () => {
    const cache = new ListingCache({ now: () => 0, limits: resolveListings({ maxBytes: 1000, cacheBytesPerAccount: 2500 }) });
    cache.store(server({ id: 'srv_1' }), 'tools', listingOf(1000));
    cache.store(server({ id: 'srv_2' }), 'tools', listingOf(1000));
    cache.store(server({ id: 'srv_o', account: 'other' }), 'tools', listingOf(1000));
    // srv_1 read last: srv_2 is the least recently used when srv_3 comes.
    expect(cache.get(server({ id: 'srv_1' }), 'tools')?.fresh).toBe(true);
    cache.store(server({ id: 'srv_3' }), 'tools', listingOf(1000));
    expect(cache.get(server({ id: 'srv_2' }), 'tools')).toBeUndefined();
    expect(cache.get(server({ id: 'srv_1' }), 'tools')).toBeDefined();
    expect(cache.bytes('acct')).toBe(2000);
    expect(cache.get(server({ id: 'srv_o', account: 'other' }), 'tools')).toBeDefined();
  });

  it('a list marked used (touch) goes after the others, and the mark changes nothing a read answers', () => {
    const cache = new ListingCache({ now: () => 0, limits: resolveListings({ maxBytes: 1000, cacheBytesPerAccount: 2500 }) });
    cache.store(server({ id: 'srv_1' }), 'tools', listingOf(1000));
    cache.store(server({ id: 'srv_2' }), 'tools', listingOf(1000));
    const revision = cache.revision;
    // srv_1 is in use by an answer taken as kept (no read of it): srv_2 is the least recently used when srv_3 comes.
    cache.touch('srv_1', 'tools');
    cache.touch('srv_unknown', 'tools');
    expect(cache.revision).toBe(revision);
    cache.store(server({ id: 'srv_3' }), 'tools', listingOf(1000));
    expect(cache.get(server({ id: 'srv_1' }), 'tools')).toBeDefined();
    expect(cache.get(server({ id: 'srv_2' }), 'tools')).toBeUndefined();
  });

  it('keeps at most listings.cacheBytes over every account', () => {
    const cache = new ListingCache({ now: () => 0, limits: resolveListings({ maxBytes: 1000, cacheBytesPerAccount: 1000, cacheBytes: 2000 }) });
    for (let i = 0; i < 5; i++) cache.store(server({ id: `srv_${i}`, account: `a${i}` }), 'tools', listingOf(1000));
    expect(cache.bytes()).toBe(2000);
    expect(cache.size).toBe(2);
    expect(cache.get(server({ id: 'srv_4', account: 'a4' }), 'tools')).toBeDefined();
  });

  it('an entry of an older configuration is never read', () => {
    const cache = new ListingCache({ now: () => 0, limits: resolveListings() });
    cache.store(server(), 'tools', listingOf(10));
    expect(cache.tools(server())?.has('x')).toBe(true);
    expect(cache.tools(server({ updated_at: '2026-11-22T11:00:00.000Z' }))).toBeUndefined();
  });

  it('checks its options at construction, naming the one to fix', () => {
    expect(() => resolveListings({ maxItems: 0 })).toThrow('listings.maxItems must be a positive integer');
    expect(() => resolveListings({ maxBytes: 2000, cacheBytesPerAccount: 1000 })).toThrow('listings.cacheBytesPerAccount must be at least listings.maxBytes');
    expect(() => resolveListings({ cacheBytesPerAccount: 64 * 1024 * 1024, cacheBytes: 1024 * 1024 * 32 })).toThrow('listings.cacheBytes must be at least');
  });
});
