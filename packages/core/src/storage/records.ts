import Keyv from 'keyv';
import { okAsync, ResultAsync } from 'neverthrow';
import { type FleetError, storageUnavailable } from '../errors/fleet-error.js';
import { memoKeys } from '../util/key-memo.js';
import { copy, installDecodeCache } from './decode-cache.js';
import { storeCall } from '../trace/store-call.js';

/** `Symbol.for`, so that a store package's copy of core and the app's agree on it. */
const STORE_PREFIXED = Symbol.for('mcp-fleet.storePrefixed');
/** Marks the in-memory Keyv the fleet makes for itself when given none (`createMemoryStorage`). */
const OBJECT_MEMORY = Symbol.for('mcp-fleet.objectMemory');

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

/** `RecordStore.getNow` over a store that cannot answer at once. */
export const NOT_NOW: unique symbol = Symbol('not now');

/** The Keyv methods the fleet calls, one signature each (Keyv's own are overloaded), for `storeCall`. */
interface KeyvPort {
  get(key: string): Promise<unknown>;
  getMany(keys: string[]): Promise<unknown[]>;
  set(key: string, value: unknown, ttl?: number): Promise<boolean>;
  delete(key: string): Promise<boolean>;
  deleteMany(keys: string[]): Promise<boolean>;
}

/** A value the object memory keeps with a time to live (see `ObjectMemory`). */
class Expiring {
  constructor(
    readonly value: unknown,
    readonly expires: number,
  ) {}
}

/** An entry in Keyv's own layout. */
interface KeyvEntry {
  value: unknown;
  expires?: number | undefined;
}

/**
 * The storage of a fleet given none: a Keyv over a `Map` (`ObjectMemory`) that keeps records as objects, not JSON
 * text (no serializer), so that reading one costs a copy, not a decode. The fleet reads and writes it through
 * `RecordStore`, which copies every value on the way in and on the way out: nothing a caller of the fleet holds is
 * ever the stored object. (Keyv's own `get` and `set` on it hand over values as they are, as over any `Map`.)
 * Nothing survives a restart, as before.
 */
export function createMemoryStorage(): Keyv {
  const keyv = new Keyv({ store: new ObjectMemory(), namespace: '', throwOnErrors: true, serialize: undefined, deserialize: undefined });
  Object.defineProperty(keyv, OBJECT_MEMORY, { value: true });
  return keyv;
}

/**
 * The object memory's `Map`. `RecordStore` keeps each value in it as it is (`held`, `hold`), or, with a time to
 * live, in an `Expiring`: not in Keyv's own layout (`{ value, expires }` around every entry), one object less for
 * each record, of which a store may hold millions. Keyv still reads, writes and iterates it in its own layout (`get`,
 * `set` and the iterator translate), so a Keyv over it works as any Keyv, for the fleet's keys as for the host's.
 *
 * It counts every change, through the fleet or through Keyv (`set`, `delete`, `clear`): a value read from it earlier
 * is still what it holds while the count has not moved.
 */
class ObjectMemory extends Map<string, unknown> {
  changes = 0;

  /** What is kept under `key`: the value, or an `Expiring` around it. */
  held(key: string): unknown {
    return super.get(key);
  }

  hold(key: string, held: unknown): void {
    this.changes++;
    super.set(key, held);
  }

  /** Keyv's read: the entry in its layout. */
  override get(key: string): KeyvEntry | undefined {
    return keyvEntry(super.get(key));
  }

  /** Keyv's write of an entry in its layout. */
  override set(key: string, entry: unknown): this {
    const { value, expires } = entry as KeyvEntry;
    this.hold(key, typeof expires === 'number' ? new Expiring(value, expires) : value);
    return this;
  }

  override delete(key: string): boolean {
    this.changes++;
    return super.delete(key);
  }

  override clear(): void {
    this.changes++;
    super.clear();
  }

  /** Keyv's iterator (`keyv.iterator()`): the entries in its layout. */
  override *[Symbol.iterator](): MapIterator<[string, unknown]> {
    for (const [key, held] of super.entries()) yield [key, keyvEntry(held)];
    return undefined;
  }
}

function keyvEntry(held: unknown): KeyvEntry | undefined {
  if (held === undefined) return undefined;
  return held instanceof Expiring ? { value: held.value, expires: held.expires } : { value: held };
}

function objectMemoryOf(keyv: Keyv): ObjectMemory | undefined {
  if ((keyv as unknown as Record<symbol, unknown>)[OBJECT_MEMORY] !== true) return undefined;
  return keyv.store instanceof ObjectMemory ? keyv.store : undefined;
}

/**
 * mcp-fleet's view of the embedder's Keyv: every key under `keyPrefix` (unless the store prefixes keys itself, see
 * `markStorePrefixed`), every failure a STORAGE_UNAVAILABLE. Keyv swallows store errors unless `throwOnErrors` is
 * on (a failed read would look like a missing record), so `createFleet` refuses a Keyv without it.
 *
 * Every value read is the caller's own copy. Over the fleet's own memory (`createMemoryStorage`) the records are kept
 * as objects and read synchronously; over any other Keyv, a decode cache keyed by the stored text (decode-cache.ts)
 * spares decoding a record that has not changed since it was last read, in this process or any other.
 */
export class RecordStore {
  private readonly keyPrefix: string;
  private readonly memory: ObjectMemory | undefined;
  /** The prefixed keys of pages read again and again (`getManyNow`), made once each (`memoKeys`). */
  private readonly prefixed: (key: string) => string;

  constructor(
    private readonly keyv: Keyv,
    keyPrefix: string,
    private readonly now: () => number = Date.now,
  ) {
    this.keyPrefix = isStorePrefixed(keyv) ? '' : keyPrefix;
    const prefix = this.keyPrefix;
    this.prefixed = memoKeys((key) => prefix + key);
    this.memory = objectMemoryOf(keyv);
    // Records read again are not decoded again (exact across processes: keyed by the stored text, see decode-cache.ts).
    if (this.memory === undefined) installDecodeCache(keyv);
  }

  get<T>(key: string): ResultAsync<T | undefined, FleetError> {
    if (this.memory !== undefined) return okAsync(this.readMemory(this.memory, this.keyPrefix + key) as T | undefined);
    return ResultAsync.fromPromise(storeCall('records', this.keyv as unknown as KeyvPort, 'get', this.keyPrefix + key) as Promise<T | undefined>, storageUnavailable);
  }

  /**
   * `get` at once, over the fleet's own memory (a copy, as `get` gives; with `shared` the stored value itself, as
   * `getMany` hands it out); `NOT_NOW` over any other store, which answers in its own time: use `get` then.
   */
  getNow<T>(key: string, shared = false): T | undefined | typeof NOT_NOW {
    if (this.memory === undefined) return NOT_NOW;
    return this.readMemory(this.memory, this.keyPrefix + key, shared) as T | undefined;
  }

  /**
   * Values in the order of `keys`, `undefined` where absent. With `shared`, the object memory hands out the stored
   * objects themselves, not copies: only for a caller that reads them at once, changes nothing and keeps nothing of
   * them but strings and numbers (a view such as a server's summary). Any other store decodes a fresh value anyway.
   */
  getMany<T>(keys: readonly string[], shared = false): ResultAsync<(T | undefined)[], FleetError> {
    if (keys.length === 0) return okAsync([]);
    const now = this.getManyNow<T>(keys, shared);
    if (now !== NOT_NOW) return okAsync(now);
    const prefixed = keys.map((key) => this.keyPrefix + key);
    // Keyv.getMany over a store without a getMany of its own settles each read separately and turns a failed one
    // into `undefined`, even with throwOnErrors: an outage would look like deleted records (and the registry would
    // repair its listings away). Read one by one then, so that any failure fails the call.
    const batched = typeof (this.keyv.store as { getMany?: unknown }).getMany === 'function';
    return ResultAsync.fromPromise(
      (batched ? storeCall('records', this.keyv as unknown as KeyvPort, 'getMany', prefixed) : Promise.all(prefixed.map((key) => storeCall('records', this.keyv as unknown as KeyvPort, 'get', key)))) as Promise<(T | undefined)[]>,
      storageUnavailable,
    );
  }

  /** `getMany` at once over the fleet's own memory (as `getMany` gives, `shared` included); `NOT_NOW` over any other store. */
  getManyNow<T>(keys: readonly string[], shared = false): (T | undefined)[] | typeof NOT_NOW {
    const { memory } = this;
    if (memory === undefined) return NOT_NOW;
    const values = new Array<T | undefined>(keys.length);
    for (let i = 0; i < keys.length; i++) values[i] = this.readMemory(memory, this.prefixed(keys[i] as string), shared) as T | undefined;
    return values;
  }

  /**
   * Whether a `shared` read hands out the stored object itself: true over the fleet's own memory, where a stored
   * object is never changed (a write stores a new copy), so that anything derived from one object stays exact for as
   * long as that object is what is stored (the summaries' JSON, `registry/views.ts`).
   */
  get sharesStoredObjects(): boolean {
    return this.memory !== undefined;
  }

  /**
   * How many changes the object memory has seen, by any fleet or through Keyv itself: what was read from it is
   * still what it holds while this has not moved. `undefined` over any other store.
   */
  get changesNow(): number | undefined {
    return this.memory?.changes;
  }

  /** Writes a record; with `ttlMs` the store lets it expire. */
  set(key: string, value: unknown, ttlMs?: number): ResultAsync<void, FleetError> {
    if (this.setNow(key, value, ttlMs)) return okAsync(undefined);
    return ResultAsync.fromPromise(
      storeCall('records', this.keyv as unknown as KeyvPort, 'set', this.keyPrefix + key, value, ttlMs).then((written) => {
        if (written === false) throw new Error(`keyv refused to write ${key}`);
      }),
      storageUnavailable,
    );
  }

  /**
   * `set` at once over the fleet's own memory (a copy is stored, as `set` stores); `false` over any other store, which
   * then wrote nothing: use `set`.
   */
  setNow(key: string, value: unknown, ttlMs?: number): boolean {
    if (this.memory === undefined) return false;
    this.writeMemory(this.memory, key, value, ttlMs);
    return true;
  }

  /**
   * `setNow` of a value made for this write and handed over: the object memory keeps it as it is, without the copy
   * `setNow` makes. The caller keeps no reference to it or to any part of it (nor did it come from anyone who could
   * change it), so that what is stored changes only by another write. `false` over any other store, as `setNow`.
   */
  handOverNow(key: string, value: unknown, ttlMs?: number): boolean {
    if (this.memory === undefined) return false;
    this.memory.hold(this.keptKey(key), this.heldForm(value, ttlMs));
    return true;
  }

  /** `delete` at once over the fleet's own memory; `false` over any other store, which then deleted nothing. */
  deleteNow(key: string): boolean {
    if (this.memory === undefined) return false;
    this.memory.delete(this.keyPrefix + key);
    return true;
  }

  delete(key: string): ResultAsync<void, FleetError> {
    if (this.deleteNow(key)) return okAsync(undefined);
    return ResultAsync.fromPromise(storeCall('records', this.keyv as unknown as KeyvPort, 'delete', this.keyPrefix + key).then(() => undefined), storageUnavailable);
  }

  deleteMany(keys: readonly string[]): ResultAsync<void, FleetError> {
    if (keys.length === 0) return okAsync(undefined);
    if (this.memory !== undefined) {
      for (const key of keys) this.memory.delete(this.keyPrefix + key);
      return okAsync(undefined);
    }
    return ResultAsync.fromPromise(
      storeCall('records', this.keyv as unknown as KeyvPort, 'deleteMany', keys.map((key) => this.keyPrefix + key)).then(() => undefined),
      storageUnavailable,
    );
  }

  /** Stores a copy of `value` in the object memory (`undefined` deletes, as Keyv does). */
  private writeMemory(memory: ObjectMemory, key: string, value: unknown, ttlMs: number | undefined): void {
    if (value === undefined) memory.delete(this.keyPrefix + key);
    else memory.hold(this.keptKey(key), this.heldForm(copy(value), ttlMs));
  }

  /** How the object memory holds `value`: as it is, or with a time to live in an `Expiring`. */
  private heldForm(value: unknown, ttlMs: number | undefined): unknown {
    return typeof ttlMs === 'number' && ttlMs > 0 ? new Expiring(value, this.now() + ttlMs) : value;
  }

  /**
   * The prefixed key as the object memory keeps it: joined into one flat string, where `+` would make V8's pair of
   * references to the prefix and the key, kept (with the key's own parts) for as long as the record.
   */
  private keptKey(key: string): string {
    return this.keyPrefix === '' ? key : [this.keyPrefix, key].join('');
  }

  /** A copy of what the object memory holds under `key` (with `shared`, the stored value); an expired entry is dropped, as Keyv drops it. */
  private readMemory(memory: ObjectMemory, key: string, shared = false): unknown {
    let value = memory.held(key);
    if (value instanceof Expiring) {
      if (this.now() > value.expires) {
        memory.delete(key);
        return undefined;
      }
      value = value.value;
    }
    if (value === undefined) return undefined;
    return shared ? value : copy(value);
  }
}
