import type { FleetOptions, RateLimitStore } from '@mcp-fleet/core';
import { createRedisStorage } from '@mcp-fleet/redis';
import { createSqliteStorage } from '@mcp-fleet/sqlite';
import { ConfigError, type StoreConfig } from './config.js';

export interface OpenedStore {
  options: Pick<FleetOptions, 'storage' | 'index'>;
  /** Rate-limit counters shared with other processes on the same store; absent: each process counts alone. */
  rateLimits?: RateLimitStore;
  close: () => Promise<void>;
  label: string;
  durable: boolean;
}

/** Host, port and database of a Redis URL, for the start line: never its credentials. */
function redisLabel(url: string): string {
  const parsed = new URL(url);
  const database = parsed.pathname.replace(/^\//, '') || '0';
  return `${parsed.protocol.slice(0, -1)} ${parsed.hostname}:${parsed.port || '6379'}/${database}`;
}

/** Opens the store that `MCP_FLEET_STORE` names. */
export async function openStore(store: StoreConfig): Promise<OpenedStore> {
  if (store.kind === 'memory') {
    return { options: {}, close: async () => {}, label: 'memory (nothing survives a restart)', durable: false };
  }
  if (store.kind === 'redis') {
    // An unreachable server is the operator's to fix: one line naming host and port (never the password), exit 2.
    const redis = await createRedisStorage({ url: store.url }).catch((error: Error) => {
      throw new ConfigError(`MCP_FLEET_STORE: ${error.message}`);
    });
    return {
      options: { storage: redis.storage, index: redis.index },
      rateLimits: redis.rateLimits,
      close: redis.close,
      label: redisLabel(store.url),
      durable: true,
    };
  }
  const sqlite = await createSqliteStorage({ path: store.path });
  return { options: { storage: sqlite.storage, index: sqlite.index }, close: sqlite.close, label: `sqlite ${store.path}`, durable: true };
}
