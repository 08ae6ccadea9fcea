/**
 * Keys made from ids, kept and handed out again. A key made afresh is a new string, which every `Map` lookup must
 * flatten and hash again (about 0.4 µs a lookup, against 0.04 µs for a string hashed before); the same id asked again
 * (a listing's ids come from the memory index as the very same strings) gets back the same key string, hashed once.
 * Bounded: forgotten all at once when it holds `max` keys, so it never grows with the number of records.
 */
export function memoKeys(keyOf: (id: string) => string, max = 10_000): (id: string) => string {
  const keys = new Map<string, string>();
  return (id) => kept(keys, id, keyOf, max);
}

/**
 * What `store` holds under `key`, made by `make(key)` the first time and handed out again after (the same object or
 * string: a listing's names, a record's key). Bounded: `store` is cleared all at once when it holds `max` entries.
 */
export function kept<V>(store: Map<string, V>, key: string, make: (key: string) => V, max = 10_000): V {
  let value = store.get(key);
  if (value === undefined) {
    if (store.size >= max) store.clear();
    store.set(key, (value = make(key)));
  }
  return value;
}
