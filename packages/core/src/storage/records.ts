import Keyv from 'keyv';
import { err, ok } from 'neverthrow';
import { type FleetError, storageUnavailable } from '../errors/fleet-error.js';
import { memoKeys } from '../util/key-memo.js';
import { chain, chainMap, portCall, type Ran } from '../util/result.js';
import { copy, installDecodeCache } from './decode-cache.js';

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
 * It counts the changes of the keys of each prefix asked (`changesOf`), through the fleet or through Keyv (`set`,
 * `delete`, `clear`): a value read from it earlier is still what it holds while its count has not moved.
 */
class ObjectMemory extends Map<string, unknown> {
  /** Changes counted apart for the keys that begin with each prefix asked of `changesOf`, since it was first asked. */
  private readonly families: { prefix: string; changes: number }[] = [];

  /**
   * How many changes the keys beginning with `prefix` have seen since it was first asked (a `clear` counts for all):
   * what was read of those keys is still what is held while this has not moved, whatever other keys did.
   */
  changesOf(prefix: string): number {
    let family = this.families.find((counted) => counted.prefix === prefix);
    if (family === undefined) this.families.push((family = { prefix, changes: 0 }));
    return family.changes;
  }

  /** What is kept under `key`: the value, or an `Expiring` around it. */
  held(key: string): unknown {
    return super.get(key);
  }

  hold(key: string, held: unknown): void {
    this.changed(key);
    super.set(key, held);
  }

  /**
   * `hold(family + id, held)`, where `family` is one string for all its ids: the key kept is V8's pair of references
   * to the two (`RecordStore.setAt`), and the prefixes counted are told apart on its two parts, never on the key itself
   * (a `startsWith` of the key would flatten it into a copy of both).
   */
  holdIn(family: string, id: string, held: unknown): void {
    for (const counted of this.families) {
      const { prefix } = counted;
      const within = prefix.length <= family.length ? family.startsWith(prefix) : prefix.startsWith(family) && id.startsWith(prefix.slice(family.length));
      if (within) counted.changes++;
    }
    super.set(family + id, held);
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
    this.changed(key);
    return super.delete(key);
  }

  override clear(): void {
    for (const family of this.families) family.changes++;
    super.clear();
  }

  private changed(key: string): void {
    for (const family of this.families) if (key.startsWith(family.prefix)) family.changes++;
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
  /** The prefixed keys of pages read again and again (`getMany`), made once each (`memoKeys`). */
  private readonly prefixed: (key: string) => string;
  /** The last key given to `keptKey`, and what it answered. */
  private lastKey = '';
  private lastKept = '';

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

  /**
   * The record under `key`, the caller's own copy (with `shared`, over the fleet's own memory, the stored value itself,
   * as `getMany` hands it out). Over the fleet's own memory a `Result` at once; over any other Keyv a `ResultAsync`.
   */
  get<T>(key: string, shared = false): Ran<T | undefined, FleetError> {
    if (this.memory !== undefined) return ok(this.readMemory(this.memory, this.keptKey(key), shared) as T | undefined);
    return portCall(() => this.keyv.get<T>(this.keyPrefix + key), 'records', 'get');
  }

  /**
   * Values in the order of `keys`, `undefined` where absent. With `shared`, the object memory hands out the stored
   * objects themselves, not copies: only for a caller that reads them at once, changes nothing and keeps nothing of
   * them but strings and numbers (a view such as a server's summary). Any other store decodes a fresh value anyway.
   */
  getMany<T>(keys: readonly string[], shared = false): Ran<(T | undefined)[], FleetError> {
    const { memory } = this;
    if (memory !== undefined) {
      const values = new Array<T | undefined>(keys.length);
      for (let i = 0; i < keys.length; i++) values[i] = this.readMemory(memory, this.prefixed(keys[i] as string), shared) as T | undefined;
      return ok(values);
    }
    if (keys.length === 0) return ok([]);
    const prefixed = keys.map((key) => this.keyPrefix + key);
    // Keyv.getMany over a store without a getMany of its own settles each read separately and turns a failed one
    // into `undefined`, even with throwOnErrors: an outage would look like deleted records (and the registry would
    // repair its listings away). Read one by one then, so that any failure fails the call.
    const batched = typeof (this.keyv.store as { getMany?: unknown }).getMany === 'function';
    return portCall(() => (batched ? this.keyv.getMany<T>(prefixed) : Promise.all(prefixed.map((key) => this.keyv.get<T>(key)))), 'records', 'getMany');
  }

  /** `key` as this store hands it to the Keyv (its prefix put before it): what an index's joint calls are given. */
  storedKey(key: string): string {
    return this.keyPrefix + key;
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
   * How many changes the object memory has seen to the records whose keys begin with `prefix` (this store's own prefix
   * put before it), by any fleet or through Keyv itself, since it was first asked: what was read of them is still
   * what it holds while this has not moved; changes to other records do not move it. `undefined` over any other store.
   */
  memoryChangesOf(prefix: string): number | undefined {
    return this.memory?.changesOf(this.prefixed(prefix));
  }

  /**
   * Writes a record; with `ttlMs` the store lets it expire. The object memory stores a copy, or, `handedOver`, the
   * value itself: a value made for this write, of which the caller keeps no reference to it or any part of it (nor
   * did it come from anyone who could change it), so that what is stored changes only by another write.
   */
  set(key: string, value: unknown, ttlMs?: number, handedOver = false): Ran<void, FleetError> {
    const { memory } = this;
    if (memory !== undefined) {
      if (handedOver && value !== undefined) memory.hold(this.keptKey(key), this.heldForm(value, ttlMs));
      else this.writeMemory(memory, key, value, ttlMs);
      return ok(undefined);
    }
    const written = portCall(() => this.keyv.set(this.keyPrefix + key, value, ttlMs), 'records', 'set');
    return chain(written, (done) => (done === false ? err(storageUnavailable(new Error(`keyv refused to write ${key}`))) : ok(undefined)));
  }

  delete(key: string): Ran<void, FleetError> {
    if (this.memory !== undefined) {
      this.memory.delete(this.keyPrefix + key);
      return ok(undefined);
    }
    return chainMap(portCall(() => this.keyv.delete(this.keyPrefix + key), 'records', 'delete'), nothing);
  }

  deleteMany(keys: readonly string[]): Ran<void, FleetError> {
    if (keys.length === 0) return ok(undefined);
    if (this.memory !== undefined) {
      for (const key of keys) this.memory.delete(this.keyPrefix + key);
      return ok(undefined);
    }
    return chainMap(portCall(() => this.keyv.deleteMany(keys.map((key) => this.keyPrefix + key)), 'records', 'deleteMany'), nothing);
  }

  /**
   * `set(family + id, value, ttlMs, true)`: a record handed over, kept under an id that the record itself keeps (a
   * server's under `server:` and its id, a tool call's under `toolcall:`). The object memory keys it by its prefix and
   * `family`, one string made once (`prefixed`), `+` the id: V8 keeps that key as a pair of references to the two
   * strings (32 bytes, never flattened by the `Map`), where a flat key is a copy of both (64 bytes for a server's),
   * kept as long as the record, and made without a copy of the prefix per write. Any other store is given the same key
   * as `set` would give it.
   */
  setAt(family: string, id: string, value: unknown, ttlMs?: number): Ran<void, FleetError> {
    const { memory } = this;
    if (memory === undefined || value === undefined) return this.set(family + id, value, ttlMs, true);
    memory.holdIn(this.prefixed(family), id, this.heldForm(value, ttlMs));
    return ok(undefined);
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
    if (this.keyPrefix === '') return key;
    // A record read and then written (a count: `HealthLog.record`) under a key its caller keeps: made and hashed once.
    if (key === this.lastKey) return this.lastKept;
    this.lastKey = key;
    return (this.lastKept = [this.keyPrefix, key].join(''));
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

/** What a delete answers when it went through: nothing. */
function nothing(): undefined {
  return undefined;
}
