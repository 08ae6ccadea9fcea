import type { Tool } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import type { ServerRegistry } from '../registry/registry.js';
import type { ServerRecord } from '../registry/views.js';
import type { ConnectionPool, ListKind } from '../toolcalls/connection-pool.js';
import type { ToolListing, ToolService } from '../toolcalls/tool-service.js';
import { UpstreamCatalog } from './catalog.js';

const server = (over: Partial<ServerRecord> = {}): ServerRecord =>
  ({
    id: 'srv_a',
    account: 'acct',
    config: { name: 'a', type: 'http', endpoint: 'http://a.example/mcp', timeout: 30_000 },
    status: 'active',
    health: 'healthy',
    created_at: '2026-11-22T10:00:00.000Z',
    updated_at: '2026-11-22T10:00:00.000Z',
    ...over,
  }) as ServerRecord;

/** A catalog over a tool service whose listings answer `answers` in turn (a function: its promise). */
function catalogWith(answers: (() => Promise<ToolListing>)[]) {
  let clock = 0;
  let listings = 0;
  let notify: ((serverId: string, list: ListKind) => void) | undefined;
  const tools = {
    listing: () => {
      const next = answers[Math.min(listings, answers.length - 1)] as () => Promise<ToolListing>;
      listings += 1;
      return next();
    },
  } as unknown as ToolService;
  const pool = {
    onListChanged: (watcher: (serverId: string, list: ListKind) => void) => {
      notify = watcher;
      return () => {};
    },
  } as unknown as ConnectionPool;
  const catalog = new UpstreamCatalog({ registry: {} as ServerRegistry, tools, pool, now: () => clock, listTimeoutMs: 50 });
  return {
    catalog,
    listings: () => listings,
    advance: (ms: number) => (clock += ms),
    upstreamChanged: (serverId: string) => notify?.(serverId, 'tools'),
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
    expect(await other).toEqual([tool('x')]);
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
    expect((await c.catalog.list(server(), 'tools'))?.map((t) => t.name)).toEqual(['late']);
    expect(c.listings()).toBe(1);
  });

  it('a failed listing is left out and not cached', async () => {
    const c = catalogWith([() => Promise.reject(new Error('down')), async () => ({ tools: [tool('x')] })]);
    expect(await c.catalog.list(server(), 'tools')).toBeUndefined();
    expect((await c.catalog.list(server(), 'tools'))?.map((t) => t.name)).toEqual(['x']);
  });
});

describe('UpstreamCatalog: prompts, resources and templates', () => {
  it("keeps each list for the ttlMs of its own answer (SEP-2549), else the default", async () => {
    let clock = 0;
    const asked: string[] = [];
    const client = {
      listPrompts: async () => (asked.push('prompts'), { prompts: [{ name: 'p' }], ttlMs: 1000 }),
      listResources: async () => (asked.push('resources'), { resources: [{ uri: 'x://r', name: 'r' }] }),
      listResourceTemplates: async () => (asked.push('templates'), { resourceTemplates: [{ uriTemplate: 'x://{id}', name: 't' }], ttlMs: 5000 }),
    };
    const tools = { upstream: (_server: unknown, _timeout: number, run: (c: { client: typeof client }) => unknown) => run({ client }) } as unknown as ToolService;
    const pool = { onListChanged: () => () => {} } as unknown as ConnectionPool;
    const catalog = new UpstreamCatalog({ registry: {} as ServerRegistry, tools, pool, now: () => clock, listTimeoutMs: 50 });
    const all = async () => {
      await catalog.list(server(), 'prompts');
      await catalog.list(server(), 'resources');
      await catalog.list(server(), 'resourceTemplates');
    };
    await all();
    expect(await catalog.list(server(), 'resourceTemplates')).toEqual([{ uriTemplate: 'x://{id}', name: 't' }]);
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
