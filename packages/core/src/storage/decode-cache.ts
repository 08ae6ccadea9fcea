import type Keyv from 'keyv';

/** `Symbol.for`, so that two copies of core (or two fleets) on one Keyv install one cache, not a cache of a cache. */
const DECODE_CACHE = Symbol.for('mcp-fleet.decodeCache');

export interface DecodeCacheOptions {
  /** Stored text (in UTF-16 code units) one generation of the cache holds before it becomes the old one. @default 4 Mi */
  generationChars?: number;
  /** Texts longer than this are decoded every time, never kept. @default 64 Ki */
  maxEntryChars?: number;
}

export interface DecodeCacheStats {
  hits: number;
  misses: number;
  /** Entries in both generations. */
  entries: number;
}

interface Installed {
  stats: DecodeCacheStats;
}

/**
 * Puts a bounded cache of decoded records in front of the Keyv's `deserialize`, keyed by the stored text itself.
 *
 * Why it is exact whatever shares the storage: a deserializer is a function of its input, so the same text always
 * decodes to the same value; the cache never answers for a key, only for bytes the store has just returned. A record
 * another process rewrote comes back as other text, misses, and is decoded; there is nothing to invalidate, across
 * processes or within one. What the cache saves is the decode (`@keyv/serialize` runs `JSON.parse` with a reviver over
 * every string), not the read: every `get` still asks the store, so a revoked key or a deleted record is seen on the
 * next request.
 *
 * Every hit is a fresh deep copy (objects, arrays, Buffers), so a caller (or the host app, on a Keyv it shares with
 * the fleet) that mutates what it got changes neither the store nor the cache. Two generations bound it: when the
 * young one has taken `generationChars` of text, it becomes the old one and the previous old one is dropped; a hit in
 * the old generation moves the entry to the young one. With compression the stored text is not the record, so a Keyv
 * with `compression` gets no cache; so does a Keyv whose deserializer returns a promise.
 */
export function installDecodeCache(keyv: Keyv, options: DecodeCacheOptions = {}): DecodeCacheStats | undefined {
  const holder = keyv as unknown as Record<symbol, Installed | undefined>;
  const installed = holder[DECODE_CACHE];
  if (installed !== undefined) return installed.stats;
  const decode = keyv.deserialize;
  if (typeof decode !== 'function' || (keyv.opts as { compression?: unknown }).compression !== undefined) return undefined;
  const generationChars = options.generationChars ?? 4 * 1024 * 1024;
  const maxEntryChars = options.maxEntryChars ?? 64 * 1024;
  let young = new Map<string, unknown>();
  let old = new Map<string, unknown>();
  let youngChars = 0;
  const stats: DecodeCacheStats = {
    hits: 0,
    misses: 0,
    get entries() {
      return young.size + old.size;
    },
  };
  const keep = (text: string, decoded: unknown) => {
    if (youngChars + text.length > generationChars) {
      old = young;
      young = new Map();
      youngChars = 0;
    }
    young.set(text, decoded);
    youngChars += text.length;
  };
  const cached = ((text: string) => {
    if (typeof text !== 'string' || text.length > maxEntryChars) return decode(text);
    let decoded = young.get(text);
    if (decoded === undefined) {
      decoded = old.get(text);
      if (decoded !== undefined) keep(text, decoded);
    }
    if (decoded !== undefined) {
      stats.hits++;
      return copy(decoded);
    }
    stats.misses++;
    decoded = decode(text);
    if (decoded === undefined || decoded === null || typeof (decoded as { then?: unknown }).then === 'function') return decoded;
    keep(text, decoded);
    // The decoded value stays in the cache untouched; the caller gets a copy like any later reader.
    return copy(decoded);
  }) as typeof decode;
  keyv.deserialize = cached;
  Object.defineProperty(keyv, DECODE_CACHE, { value: { stats } satisfies Installed });
  return stats;
}

/** The decode cache's counters on a Keyv, when it has one. */
export function decodeCacheStats(keyv: Keyv): DecodeCacheStats | undefined {
  return (keyv as unknown as Record<symbol, Installed | undefined>)[DECODE_CACHE]?.stats;
}

/**
 * A deep copy of a record with JSON's meaning: plain objects, arrays and primitives copied, an object property holding
 * `undefined` left out, a `toJSON` (a Date) applied; Buffers (which `@keyv/serialize` round-trips) copied as Buffers.
 * An order of magnitude faster than decoding the text again, and faster than `structuredClone` for these small
 * records. An own `__proto__` key (JSON.parse makes one) stays a key, never becomes the copy's prototype.
 */
export function copy<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copy(value[i]);
    return out as T;
  }
  if (Buffer.isBuffer(value)) return Buffer.from(value) as T;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return copy((value as unknown as { toJSON(): unknown }).toJSON()) as T;
  const out: Record<string, unknown> = {};
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined || typeof item === 'function') continue;
    if (key === '__proto__') Object.defineProperty(out, key, { value: copy(item), enumerable: true, writable: true, configurable: true });
    else out[key] = copy(item);
  }
  return out as T;
}
