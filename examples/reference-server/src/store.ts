import { createMemoryStore, type FleetStore } from '@mcp-fleet/core';
import { ConfigError, type StoreConfig } from './config.js';

export interface OpenedStore {
  /** What `createFleet({ store })` takes; the caller closes it (`store.close()`) after the fleet. */
  store: FleetStore;
  /** For the start line: the kind of store and where, never a credential. */
  label: string;
}

/** Host, port and database of a Redis URL, for the start line: never its credentials. */
function redisLabel(url: string): string {
  const parsed = new URL(url);
  const database = parsed.pathname.replace(/^\//, '') || '0';
  return `${parsed.protocol.slice(0, -1)} ${parsed.hostname}:${parsed.port || '6379'}/${database}`;
}

/** Opens the store that `MCP_FLEET_STORE` names; only its package is loaded (the drivers of the others cost a start 0.15 s). */
export async function openStore(config: StoreConfig): Promise<OpenedStore> {
  if (config.kind === 'memory') {
    return { store: createMemoryStore(), label: 'memory (nothing survives a restart)' };
  }
  if (config.kind === 'redis') {
    // An unreachable server is the operator's to fix: one line naming host and port (never the password), exit 2.
    const { createRedisStore } = await import('@mcp-fleet/redis');
    const store = await createRedisStore({ url: config.url }).catch((error: Error) => {
      throw new ConfigError(`MCP_FLEET_STORE: ${error.message}`);
    });
    return { store, label: redisLabel(config.url) };
  }
  if (config.kind === 'postgres') {
    // The same for PostgreSQL: the store's message names host and port, never the password. Its label too.
    const { createPostgresStore } = await import('@mcp-fleet/postgres');
    const store = await createPostgresStore({ connectionString: config.url, schema: config.schema }).catch((error: Error) => {
      throw new ConfigError(`MCP_FLEET_STORE: ${error.message}`);
    });
    return { store, label: store.label };
  }
  const { createSqliteStore } = await import('@mcp-fleet/sqlite');
  return { store: await createSqliteStore({ path: config.path }), label: `sqlite ${config.path}` };
}
