import { describe, expect, it } from 'vitest';
import { createFleet } from './fleet.js';
import { fleetStoreSuite } from './testing/fleet-store-suite.js';
import { createMemoryStore } from './store.js';

fleetStoreSuite('createMemoryStore', ({ now }) => createMemoryStore({ now }));

describe('who closes the store', () => {
  it('a store passed in stays open after fleet.close(): another fleet over it finds what the first wrote', async () => {
    const store = createMemoryStore();
    let closed = 0;
    const close = store.close;
    const tracked = { ...store, close: () => ((closed += 1), close()) };
    const first = createFleet({ store: tracked, rateLimit: false, webhooks: false });
    const created = (await first.servers.create('acme', { name: 'kept', type: 'http', endpoint: 'https://mcp.example.com/mcp' }))._unsafeUnwrap();
    await first.close();
    expect(closed).toBe(0);
    const second = createFleet({ store: tracked, rateLimit: false, webhooks: false });
    expect((await second.servers.get('acme', created.id))._unsafeUnwrap().name).toBe('kept');
    await second.close();
    await tracked.close();
    expect(closed).toBe(1);
  });
});
