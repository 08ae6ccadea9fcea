import { type FleetStore, parseStoreUrl, redact } from '@mcp-fleet/core';
import { createClient } from '@redis/client';
import Keyv from 'keyv';
import { checkTimeout, DEFAULT_KEY_PREFIX, DEFAULT_TIMEOUT_MS, withDeadline } from './commands.js';
import { RedisIndexStore } from './redis-index-store.js';
import { RedisRateLimitStore } from './redis-rate-limit-store.js';
import { RedisRecordAdapter } from './redis-record-adapter.js';

export { DEFAULT_KEY_PREFIX, RedisTimeoutError, type RedisCommandClient } from './commands.js';
export { RedisIndexStore, type RedisIndexStoreOptions } from './redis-index-store.js';
export { RedisRateLimitStore, type RedisRateLimitStoreOptions } from './redis-rate-limit-store.js';

export interface RedisStoreOptions {
  /** `redis://[[user]:password@]host[:port][/db]`, or `rediss://…` for TLS. */
  url: string;
  /**
   * Every key written starts with it: records are `keyPrefix + key`, the index lives under `keyPrefix + 'index:'`
   * and rate-limit counters and leases under `keyPrefix + 'ratelimit:'`. It is the only prefix: the store's own
   * `keyPrefix` is `''`, so a fleet adds none and a server record is `mcp-fleet:server:srv_…`. @default 'mcp-fleet:'
   */
  keyPrefix?: string;
  /** How long connecting may take, in ms (the first time and every reconnect attempt). @default 2000 */
  connectTimeout?: number;
  /** How long a call waits for Redis's answer before it rejects, in ms. @default 2000 */
  commandTimeout?: number;
  /**
   * Sees the connection's errors, each failed reconnect attempt too. The calls fail on their own (rejected
   * promises, so `503 STORAGE_UNAVAILABLE`); this is for logging. @default ignores them
   */
  onError?: (error: Error) => void;
  /** The connection's name in `CLIENT LIST` (`CLIENT SETNAME`), to tell it apart from the host's. @default 'mcp-fleet' */
  clientName?: string;
  /** Clock for the `since` of name claims, for tests. @default Date.now */
  now?: () => number;
}

/** Everything `createFleet` stores, over one Redis connection, plus `close`. */
export interface RedisStore extends FleetStore {
  /** Records, through the store's Keyv adapter, with `throwOnErrors: true`; every key under `keyPrefix`. */
  readonly records: Keyv;
  /** `''`: the records' adapter puts the store's `keyPrefix` before every key itself. */
  readonly keyPrefix: '';
  readonly index: RedisIndexStore;
  readonly rateLimits: RedisRateLimitStore;
  /** The rate-limit counters: a lease is a counter of limit 1, so every process on this Redis shares them. */
  readonly leases: RedisRateLimitStore;
  /** Closes the stores and the connection. Idempotent. */
  close(): Promise<void>;
}

/** `host:port` of a Redis URL (enough to find the server) and the password's spellings, to keep out of messages. */
function inspectUrl(text: string): { address: string; secrets: string[] } {
  const { url, secrets } = parseStoreUrl(text, 'createRedisStore: url', ['redis:', 'rediss:'], 'redis://host:port or rediss://host:port');
  return { address: `${url.hostname || 'localhost'}:${url.port || '6379'}`, secrets };
}

function reasonOf(error: unknown, secrets: readonly string[]): string {
  return redact(error instanceof Error ? error.message : String(error), secrets);
}

/**
 * Connects to Redis and gives the store `createFleet` takes: records, the index, rate-limit counters and leases, all
 * over one connection, shared by every process that opens the same Redis with the same `keyPrefix`. Rejects when Redis cannot be reached within `connectTimeout`; the message names host and port, never
 * the password.
 *
 * While running, a lost connection is retried in the background (at most 2 s apart); meanwhile every call
 * rejects at once instead of queueing, and a call whose answer does not come within `commandTimeout` rejects too.
 *
 * ```ts
 * const store = await createRedisStore({ url: process.env.REDIS_URL! });
 * const fleet = createFleet({ store });
 * // on shutdown: await fleet.close(); await store.close();
 * ```
 */
export async function createRedisStore(options: RedisStoreOptions): Promise<RedisStore> {
  const { address, secrets } = inspectUrl(options.url);
  const keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
  const connectTimeout = checkTimeout('connectTimeout', options.connectTimeout ?? DEFAULT_TIMEOUT_MS);
  const commandTimeout = checkTimeout('commandTimeout', options.commandTimeout ?? DEFAULT_TIMEOUT_MS);
  const onError = options.onError ?? (() => {});

  let connected = false;
  const client = createClient({
    url: options.url,
    name: options.clientName ?? 'mcp-fleet',
    // A call made while the connection is down fails now, rather than waiting in a queue for Redis to return.
    disableOfflineQueue: true,
    socket: {
      connectTimeout,
      // Before the first connection: give up at once, so a wrong URL or a missing server stops the start. After
      // it: keep trying, at most 2 s apart, so the store comes back by itself when Redis does.
      reconnectStrategy: (retries) => (connected ? Math.min(50 * 2 ** retries, 2000) + Math.floor(Math.random() * 100) : false),
    },
  });
  // An 'error' event without a listener would crash the process.
  client.on('error', (error: Error) => onError(error));

  try {
    await withDeadline(client.connect(), connectTimeout, 'the connection');
  } catch (error) {
    if (client.isOpen) client.destroy();
    throw new Error(`Cannot connect to Redis at ${address}: ${reasonOf(error, secrets)}`);
  }
  connected = true;

  const adapter = new RedisRecordAdapter(client, commandTimeout);
  const records = new Keyv({ store: adapter, namespace: '', throwOnErrors: true });
  // After Keyv, which resets the adapter's namespace: the adapter prefixes keys with it, separated by nothing.
  adapter.namespace = keyPrefix;
  const index = new RedisIndexStore({ client, keyPrefix, now: options.now, commandTimeout });
  const rateLimits = new RedisRateLimitStore({ client, keyPrefix, commandTimeout });

  let closing: Promise<void> | undefined;
  const close = async () => {
    await index.close();
    await rateLimits.close();
    adapter.closed = true;
    if (!client.isOpen) return;
    try {
      // Lets commands already sent get their answers; a server that stopped answering does not hold us up.
      await withDeadline(client.close(), commandTimeout, 'the close');
    } catch {
      client.unref();
    }
  };
  return { records, keyPrefix: '', index, rateLimits, leases: rateLimits, close: () => (closing ??= close()) };
}
