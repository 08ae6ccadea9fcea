import type { FleetStore, IndexStore } from '@mcp-fleet/core';

/**
 * A store's index as the index contract opens it: its calls the index's own, its `close` the whole store's (which
 * also closes the connection or pool the store opened for it).
 */
export function indexClosingStore(store: Pick<FleetStore, 'index' | 'close'>): IndexStore {
  const { index } = store;
  return {
    commit: (tx) => index.commit(tx),
    claimOf: (key) => index.claimOf(key),
    range: (set, options) => index.range(set, options),
    count: (set) => index.count(set),
    close: () => store.close(),
  };
}
