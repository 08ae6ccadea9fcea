import type Keyv from 'keyv';
import { ResultAsync } from 'neverthrow';
import { type FleetError, storageUnavailable } from '../errors/fleet-error.js';

/** `Symbol.for`, so that a store package's copy of core and the app's agree on it. */
const STORE_PREFIXED = Symbol.for('mcp-fleet.storePrefixed');

/**
 * Marks a Keyv whose store already puts every key under a prefix of its own, as `@mcp-fleet/redis` does with its
 * `keyPrefix`: the fleet then leaves its keys as they are, so each key carries one prefix, the store's. Without the
 * mark the fleet adds its own `keyPrefix`, which keeps its keys apart from the host's in a Keyv they share.
 */
export function markStorePrefixed<K extends Keyv>(storage: K): K {
  Object.defineProperty(storage, STORE_PREFIXED, { value: true });
  return storage;
}

function isStorePrefixed(storage: Keyv): boolean {
  return (storage as unknown as Record<symbol, unknown>)[STORE_PREFIXED] === true;
}

/**
 * mcp-fleet's view of the embedder's Keyv: every key under `keyPrefix` (unless the store prefixes keys itself, see
 * `markStorePrefixed`), every failure a STORAGE_UNAVAILABLE. Keyv swallows store errors unless `throwOnErrors` is
 * on (a failed read would look like a missing record), so `createFleet` refuses a Keyv without it.
 */
export class RecordStore {
  private readonly keyPrefix: string;

  constructor(
    private readonly keyv: Keyv,
    keyPrefix: string,
  ) {
    this.keyPrefix = isStorePrefixed(keyv) ? '' : keyPrefix;
  }

  get<T>(key: string): ResultAsync<T | undefined, FleetError> {
    return ResultAsync.fromPromise(this.keyv.get<T>(this.keyPrefix + key), storageUnavailable);
  }

  /** Values in the order of `keys`, `undefined` where absent. */
  getMany<T>(keys: readonly string[]): ResultAsync<(T | undefined)[], FleetError> {
    if (keys.length === 0) return ResultAsync.fromSafePromise(Promise.resolve([]));
    const prefixed = keys.map((key) => this.keyPrefix + key);
    // Keyv.getMany over a store without a getMany of its own settles each read separately and turns a failed one
    // into `undefined`, even with throwOnErrors: an outage would look like deleted records (and the registry would
    // repair its listings away). Read one by one then, so that any failure fails the call.
    const batched = typeof (this.keyv.store as { getMany?: unknown }).getMany === 'function';
    return ResultAsync.fromPromise(
      batched ? this.keyv.getMany<T>(prefixed) : Promise.all(prefixed.map((key) => this.keyv.get<T>(key))),
      storageUnavailable,
    );
  }

  /** Writes a record; with `ttlMs` the store lets it expire. */
  set(key: string, value: unknown, ttlMs?: number): ResultAsync<void, FleetError> {
    return ResultAsync.fromPromise(
      this.keyv.set(this.keyPrefix + key, value, ttlMs).then((written) => {
        if (written === false) throw new Error(`keyv refused to write ${key}`);
      }),
      storageUnavailable,
    );
  }

  delete(key: string): ResultAsync<void, FleetError> {
    return ResultAsync.fromPromise(this.keyv.delete(this.keyPrefix + key).then(() => undefined), storageUnavailable);
  }

  deleteMany(keys: readonly string[]): ResultAsync<void, FleetError> {
    if (keys.length === 0) return ResultAsync.fromSafePromise(Promise.resolve(undefined));
    return ResultAsync.fromPromise(
      this.keyv.deleteMany(keys.map((key) => this.keyPrefix + key)).then(() => undefined),
      storageUnavailable,
    );
  }
}
