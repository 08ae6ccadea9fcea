import type Keyv from 'keyv';
import type { LeaseStore } from './health/monitor.js';
import { MemoryRateLimitStore } from './ratelimit/memory-rate-limit-store.js';
import type { RateLimitStore } from './ratelimit/rate-limit-store.js';
import type { IndexStore } from './storage/index-store.js';
import { MemoryIndexStore } from './storage/memory-index-store.js';
import { createMemoryStorage } from './storage/records.js';

/**
 * Everything a fleet stores, as one object: `createFleet({ store })`. Each member is a port of its own, because each
 * needs a different guarantee (docs/architecture.md, "One storage seam"); a store package returns them together so
 * that they are opened, shared and closed as one. Factories: `createMemoryStore()` here (the default),
 * `createSqliteStore` in `@mcp-fleet/sqlite`, `createRedisStore` in `@mcp-fleet/redis`, `createPostgresStore` in
 * `@mcp-fleet/postgres`. A store of your own proves
 * itself with `fleetStoreSuite` (`@mcp-fleet/core/testing`), which runs whole fleets over it.
 *
 * Several fleets may share one store (processes, or fleets in one process): they then share records, name claims,
 * quotas, the webhook outbox and MCP session records; and, where `rateLimits` and `leases` are shared too, exact rate
 * limits and one prober per server.
 */
export interface FleetStore {
  /**
   * Records: servers, API keys, tool calls, webhooks and their deliveries, events of the outbox, MCP session records.
   * Any Keyv created with `throwOnErrors: true` (otherwise a storage outage would look like missing data).
   */
  readonly records: Keyv;
  /**
   * Put before every key the fleet writes in `records`, so it never touches the host's own keys in a Keyv they share;
   * `''` for a Keyv whose store prefixes keys itself (the Redis store's). @default 'mcp-fleet:'
   */
  readonly keyPrefix?: string;
  /**
   * The atomic side: name claims, ordered listings, per-account quotas checked in the same commit, the outbox's due
   * deliveries and their leases. Must be as durable as `records`.
   */
  readonly index: IndexStore;
  /** Rate-limit counters; shared between fleets, they make limits exact across them. */
  readonly rateLimits: RateLimitStore;
  /** The health monitor's leases (one prober per server and interval); any `RateLimitStore` is one. */
  readonly leases: LeaseStore;
  /**
   * Releases what the store holds (connections, files). Idempotent. A fleet closes the store it made itself (none
   * was passed); a store passed as `store` is the embedder's: close it after `fleet.close()`.
   */
  close(): Promise<void>;
}

export interface MemoryStoreOptions {
  /**
   * Where records live instead of this process's memory: any Keyv created with `throwOnErrors: true`. Claims,
   * listings, counters and leases stay in this process, so such a store serves one process. It is yours: the store's
   * `close()` leaves it connected.
   * @default an in-memory Keyv that keeps records as objects
   */
  records?: Keyv;
  /** Put before every key the fleet writes in `records`. @default 'mcp-fleet:' */
  keyPrefix?: string;
  /** Clock of claims and counters, for tests. @default Date.now */
  now?: () => number;
}

/**
 * The store of one process, in its memory: nothing survives a restart. The default of `createFleet`. Two fleets given
 * the same memory store share everything, as two processes sharing a Redis store do.
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): FleetStore {
  const now = options.now ?? Date.now;
  const records = options.records ?? createMemoryStorage();
  const index = new MemoryIndexStore({ now });
  // Leases are counters of limit 1: the same store holds both.
  const rateLimits = new MemoryRateLimitStore({ now });
  let closing: Promise<void> | undefined;
  const close = async () => {
    await rateLimits.close();
    await index.close();
  };
  return { records, keyPrefix: options.keyPrefix ?? 'mcp-fleet:', index, rateLimits, leases: rateLimits, close: () => (closing ??= close()) };
}
