import type { FleetOptions } from '@mcp-fleet/core';
import { createSqliteStorage } from '@mcp-fleet/sqlite';
import type { StoreConfig } from './config.js';

export interface OpenedStore {
  options: Pick<FleetOptions, 'storage' | 'index'>;
  close: () => Promise<void>;
  label: string;
  durable: boolean;
}

/** Opens the store that `MCP_FLEET_STORE` names. */
export async function openStore(store: StoreConfig): Promise<OpenedStore> {
  if (store.kind === 'memory') {
    return { options: {}, close: async () => {}, label: 'memory (nothing survives a restart)', durable: false };
  }
  const sqlite = await createSqliteStorage({ path: store.path });
  return { options: { storage: sqlite.storage, index: sqlite.index }, close: sqlite.close, label: `sqlite ${store.path}`, durable: true };
}
