import { describe, expect, it } from 'vitest';
import { resolveOptions } from './options.js';
import { createMemoryStore } from './store.js';

describe('resolveOptions: every option checked once, defaults filled in, per capability', () => {
  it('without options: a memory store of the fleet\'s own, every capability on but the monitor and the dashboard', async () => {
    const resolved = resolveOptions({});
    expect(resolved.ownsStore).toBe(true);
    expect(resolved).toMatchObject({ prefix: '/v1', bodyLimit: 65_536, maxUpstreamBytes: 4 * 1024 * 1024, rateLimit: {}, webhooks: {}, mcp: {} });
    expect(resolved.monitor).toBeUndefined();
    expect(resolved.dashboard).toBeUndefined();
    expect(resolved.toolCalls).toMatchObject({ retentionMs: 30 * 86_400_000, expirySweepMs: 60_000 });
    // Listings default to the upstream bound, the stdio line limit is that same bound.
    expect(resolved.listings.maxBytes).toBe(resolved.maxUpstreamBytes);
    await resolved.store.close();
  });

  it('a store passed in is the embedder\'s; `false` turns a capability off', () => {
    const store = createMemoryStore();
    const resolved = resolveOptions({ store, rateLimit: false, webhooks: false, mcp: false, monitor: true, dashboard: true });
    expect(resolved.store).toBe(store);
    expect(resolved.ownsStore).toBe(false);
    expect(resolved).toMatchObject({ rateLimit: undefined, webhooks: undefined, mcp: undefined, monitor: {}, dashboard: {} });
  });

  it.each([
    [{ maxUpstreamBytes: 0 }, 'mcp-fleet: maxUpstreamBytes must be a positive integer'],
    [{ toolCalls: { retentionDays: -1 } }, 'mcp-fleet: toolCalls.retentionDays must be a positive number'],
    [{ toolCalls: { expirySweepMs: 0 } }, 'mcp-fleet: toolCalls.expirySweepMs must be a positive number'],
    [{ bodyLimit: 1.5 }, 'mcp-fleet: bodyLimit must be a positive integer'],
    [{ listings: { maxItems: 0 } }, 'mcp-fleet: listings.maxItems must be a positive integer'],
  ])('refuses %j with a TypeError naming the option', (options, message) => {
    expect(() => resolveOptions(options)).toThrow(new TypeError(message));
  });
});
