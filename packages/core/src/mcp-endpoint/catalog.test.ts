import type { Tool } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import type { ServerRegistry } from '../registry/registry.js';
import { serverRecord } from '../registry/test-helpers.js';
import type { ServerRecord } from '../registry/views.js';
import type { ConnectionPool, ListKind } from '../toolcalls/connection-pool.js';
import { type Listing, ListingCache, type ListingKind, type ListingsOptions, readListing, resolveListings } from '../toolcalls/listings.js';
import type { ToolService } from '../toolcalls/tool-service.js';
import { UpstreamCatalog } from './catalog.js';

type ToolListing = { tools: Tool[]; ttlMs?: number };

const server = serverRecord;

/**
 * A catalog over a tool service whose listings answer `answers` in turn (a function: its promise), kept in a real
 * listing cache as the tool service keeps them.
 */
function catalogWith(answers: (() => Promise<ToolListing>)[], limits: ListingsOptions = {}) {
  let clock = 0;
  let listings = 0;
  let notify: ((serverId: string, list: ListKind, account: string) => void) | undefined;
  const cache = new ListingCache({ now: () => clock, limits: resolveListings(limits) });
  const tools = {
    listing: async (server: ServerRecord, _timeoutMs: number, kind: ListingKind) => {
      const next = answers[Math.min(listings, answers.length - 1)] as () => Promise<ToolListing>;
      listings += 1;
      const { tools: items, ttlMs } = await next();
      const listing: Listing<Tool> = { items, bytes: Buffer.byteLength(JSON.stringify(items)), ttlMs };
      cache.store(server, kind, listing);
      return listing;
    },
  } as unknown as ToolService;
  const pool = {
    onListChanged: (watcher: (serverId: string, list: ListKind, account: string) => void) => {
      notify = watcher;
      return () => {};
    },
  } as unknown as ConnectionPool;
  const catalog = new UpstreamCatalog({ registry: {} as ServerRegistry, tools, pool, listings: cache, listTimeoutMs: 50 });
  return {
    catalog,
    cache,
    listings: () => listings,
    advance: (ms: number) => (clock += ms),
    upstreamChanged: (serverId: string, account = 'acct') => notify?.(serverId, 'tools', account),
  };
}

const tool = (name: string): Tool => ({ name, inputSchema: { type: 'object' } });

describe('UpstreamCatalog', () => {
  it('keeps a listing for a positive ttlMs, and for the default 60 s when the upstream says 0', async () => {
    const short = catalogWith([async () => ({ tools: [tool('x')], ttlMs: 1000 })]);
    await short.catalog.list(server(), 'tools');
    short.advance(999);
    await short.catalog.list(server(), 'tools');
    expect(short.listings()).toBe(1);
    short.advance(2);
    await short.catalog.list(server(), 'tools');
    expect(short.listings()).toBe(2);

    const zero = catalogWith([async () => ({ tools: [tool('x')], ttlMs: 0 })]);
    await zero.catalog.list(server(), 'tools');
    zero.advance(59_999);
    await zero.catalog.list(server(), 'tools');
    expect(zero.listings()).toBe(1);
    zero.advance(2);
    await zero.catalog.list(server(), 'tools');
    expect(zero.listings()).toBe(2);
  });

  it("lists at most 8 of one account's cold servers at once; another account's listing does not wait behind them", async () => {
    let live = 0;
    let most = 0;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const c = catalogWith([
      async () => {
        most = Math.max(most, (live += 1));
        await held;
        live -= 1;
        return { tools: [tool('x')] };
      },
    ]);
    const crowd = Array.from({ length: 20 }, (_, i) => c.catalog.list(server({ id: `srv_${i}` }), 'tools'));
    // Past the answer's time limit the crowd's listings are left out of it (undefined), still running or waiting.
    expect(await Promise.all(crowd)).toEqual(Array(20).fill(undefined));
    expect(most).toBe(8);
    const other = c.catalog.list(server({ id: 'srv_other', account: 'other' }), 'tools');
    await new Promise((resolve) => setImmediate(resolve));
    expect(most).toBe(9);
    release();
    expect((await other)?.items).toEqual([tool('x')]);
  });

  it("drops a server's listing on its list_changed and on a new configuration", async () => {
    const c = catalogWith([async () => ({ tools: [tool('x')] })]);
    await c.catalog.list(server(), 'tools');
    c.upstreamChanged('srv_a');
    await c.catalog.list(server(), 'tools');
    expect(c.listings()).toBe(2);
    await c.catalog.list(server({ updated_at: '2026-11-22T11:00:00.000Z' }), 'tools');
    expect(c.listings()).toBe(3);
    expect(c.catalog.known(server(), 'tools')).toBeUndefined();
  });

  it('leaves out an unhealthy server without asking it, and a slow one after the time limit while its listing fills the cache', async () => {
    let finish: (value: ToolListing) => void = () => {};
    const c = catalogWith([() => new Promise<ToolListing>((resolve) => (finish = resolve))]);
    expect(await c.catalog.list(server({ health: 'unhealthy' }), 'tools')).toBeUndefined();
    expect(c.listings()).toBe(0);
    expect(await c.catalog.list(server(), 'tools')).toBeUndefined();
    finish({ tools: [tool('late')] });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect((await c.catalog.list(server(), 'tools'))?.items.map((t) => t.name)).toEqual(['late']);
    expect(c.listings()).toBe(1);
  });

  it('a failed listing is left out and not cached', async () => {
    const c = catalogWith([() => Promise.reject(new Error('down')), async () => ({ tools: [tool('x')] })]);
    expect(await c.catalog.list(server(), 'tools')).toBeUndefined();
    expect((await c.catalog.list(server(), 'tools'))?.items.map((t) => t.name)).toEqual(['x']);
  });
});

describe("UpstreamCatalog: an upstream's list_changed", () => {
  it("a flood is one re-list now and one at the end of listings.relistIntervalMs, told to the server's account only", async () => {
    const c = catalogWith([async () => ({ tools: [tool('x')] })], { relistIntervalMs: 200 });
    const told: [string, string][] = [];
    c.catalog.onChange((serverId, _list, account) => told.push([serverId, account]));
    await c.catalog.list(server(), 'tools');
    for (let i = 0; i < 500; i++) c.upstreamChanged('srv_a', 'acct');
    // The first one dropped the listing and told the account at once; the other 499 wait for the interval's end.
    expect(told).toEqual([['srv_a', 'acct']]);
    expect(c.catalog.known(server(), 'tools')).toBeUndefined();
    await c.catalog.list(server(), 'tools');
    expect(c.listings()).toBe(2);
    await expect.poll(() => told.length).toBe(2);
    expect(told[1]).toEqual(['srv_a', 'acct']);
    // The folded change dropped the listing again: one more re-list for 500 notifications.
    await c.catalog.list(server(), 'tools');
    expect(c.listings()).toBe(3);
    // Quiet for an interval, then a new notification is heard at once again.
    await new Promise((resolve) => setTimeout(resolve, 250));
    c.upstreamChanged('srv_a', 'acct');
    expect(told).toHaveLength(3);
    c.catalog.close();
  });

  it("forgetting a server (updated, deleted) drops its pending re-list", async () => {
    const c = catalogWith([async () => ({ tools: [tool('x')] })], { relistIntervalMs: 50 });
    let told = 0;
    c.catalog.onChange(() => (told += 1));
    c.upstreamChanged('srv_a');
    c.upstreamChanged('srv_a');
    c.catalog.forget('srv_a');
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(told).toBe(1);
  });
});

describe('UpstreamCatalog: bounded listings', () => {
  it('a listing refused as too large is left out, nothing of it kept, and not asked again within the TTL', async () => {
    let clock = 0;
    let pages = 0;
    // 50 pages of 10 tools, one cursor after the other: far more than listings.maxItems (100).
    const client = {
      request: async ({ params }: { params: { cursor?: string } }) => {
        pages += 1;
        const at = Number(params.cursor ?? 0);
        return { tools: Array.from({ length: 10 }, (_, i) => tool(`t${at}_${i}`)), ...(at < 49 ? { nextCursor: String(at + 1) } : {}) };
      },
    };
    const cache = new ListingCache({ now: () => clock, limits: resolveListings({ maxItems: 100 }) });
    const tools = {
      listing: async (s: ServerRecord, timeoutMs: number, kind: ListingKind) => {
        try {
          const listing = await readListing(client as never, kind, timeoutMs, cache.limits);
          cache.store(s, kind, listing);
          return listing;
        } catch (error) {
          cache.refuse(s, kind, error as never);
          throw error;
        }
      },
    } as unknown as ToolService;
    const pool = { onListChanged: () => () => {} } as unknown as ConnectionPool;
    const catalog = new UpstreamCatalog({ registry: {} as ServerRegistry, tools, pool, listings: cache, listTimeoutMs: 50 });
    expect(await catalog.list(server(), 'tools')).toBeUndefined();
    // The eleventh page passed 100 items: no page after it was asked for.
    expect(pages).toBe(11);
    expect(catalog.known(server(), 'tools')).toBeUndefined();
    expect(cache.bytes()).toBe(0);
    expect(await catalog.list(server(), 'tools')).toBeUndefined();
    expect(pages).toBe(11);
    clock += 60_001;
    expect(await catalog.list(server(), 'tools')).toBeUndefined();
    expect(pages).toBe(22);
  });
});

describe('UpstreamCatalog: prompts, resources and templates', () => {
  it("keeps each list for the ttlMs of its own answer (SEP-2549), else the default", async () => {
    let clock = 0;
    const asked: string[] = [];
    const answers: Record<string, () => unknown> = {
      'prompts/list': () => (asked.push('prompts'), { prompts: [{ name: 'p' }], ttlMs: 1000 }),
      'resources/list': () => (asked.push('resources'), { resources: [{ uri: 'x://r', name: 'r' }] }),
      'resources/templates/list': () => (asked.push('templates'), { resourceTemplates: [{ uriTemplate: 'x://{id}', name: 't' }], ttlMs: 5000 }),
    };
    const client = { request: async ({ method }: { method: string }) => answers[method]?.() };
    const cache = new ListingCache({ now: () => clock, limits: resolveListings() });
    // As the tool service lists: every page through readListing, kept in the cache.
    const tools = {
      listing: async (s: ServerRecord, timeoutMs: number, kind: ListingKind) => {
        const listing = await readListing(client as never, kind, timeoutMs, cache.limits);
        cache.store(s, kind, listing);
        return listing;
      },
    } as unknown as ToolService;
    const pool = { onListChanged: () => () => {} } as unknown as ConnectionPool;
    const catalog = new UpstreamCatalog({ registry: {} as ServerRegistry, tools, pool, listings: cache, listTimeoutMs: 50 });
    const all = async () => {
      await catalog.list(server(), 'prompts');
      await catalog.list(server(), 'resources');
      await catalog.list(server(), 'resourceTemplates');
    };
    await all();
    expect((await catalog.list(server(), 'resourceTemplates'))?.items).toEqual([{ uriTemplate: 'x://{id}', name: 't' }]);
    clock += 1001;
    await all();
    expect(asked).toEqual(['prompts', 'resources', 'templates', 'prompts']);
    clock += 4000;
    await all();
    expect(asked.slice(4)).toEqual(['prompts', 'templates']);
    clock += 55_000;
    await all();
    expect(asked.slice(6)).toEqual(['prompts', 'resources', 'templates']);
  });
});
