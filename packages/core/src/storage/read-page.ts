import type { FleetError } from '../errors/fleet-error.js';
import type { PageQuery } from '../util/pagination.js';
import type { IndexCalls } from './index-calls.js';
import type { RangeOptions } from './index-store.js';
import type { RecordStore } from './records.js';
import { both, chain, chainMap, type Ran } from '../util/result.js';
/** Records read through a listing: ids and records side by side. */
export interface ListedRecords<T> {
  /** The listed ids, in the listing's order. */
  ids: string[];
  /** Their records; `undefined` where a listed record is gone (expired, or left by a crash): the caller repairs or skips. */
  found: (T | undefined)[];
}

export interface PageRead<T> extends ListedRecords<T> {
  /** How many the whole listing holds, gone records included. */
  total: number;
}

/**
 * The records of one range of a listing; `shared`: as `RecordStore.getMany` (read-only, kept by nobody). With
 * `keyPrefix` (what `keyOf` puts before an id), an index kept beside the records reads them in one call
 * (`IndexStore.readPage`).
 */
export function readRange<T>(
  index: IndexCalls,
  records: RecordStore,
  set: string,
  range: RangeOptions,
  keyOf: (id: string) => string,
  shared = false,
  keyPrefix?: string,
): Ran<ListedRecords<T>, FleetError> {
  const { joint } = index;
  if (joint !== undefined && keyPrefix !== undefined) return chainMap(joint.readPage<T>(set, range, records.storedKey(keyPrefix)), ({ ids, found }) => ({ ids, found }));
  return chain(index.range(set, range), (ids) => {
    const keys = new Array<string>(ids.length);
    for (let i = 0; i < ids.length; i++) keys[i] = keyOf(ids[i] as string);
    return chainMap(records.getMany<T>(keys, shared), (found) => ({ ids, found }));
  });
}

/** What reads a page: the stores, the listing, the page asked for, the record key of an id, and how to read it. */
type PageArgs = [
  index: IndexCalls,
  records: RecordStore,
  set: string,
  query: PageQuery,
  keyOf: (id: string) => string,
  options?: {
    order?: 'asc' | 'desc';
    shared?: boolean;
    /** What `keyOf` puts before an id: with it, an index kept beside the records reads the page in one call (`IndexStore.readPage`). */
    keyPrefix?: string;
  },
];

/**
 * One page of a listing (`page` 1-based): its records and the listing's total, counted while the page is read, side
 * by side. Over the memory stores every step answers at once, and so does this.
 */
export function readPage<T>(...[index, records, set, query, keyOf, options = {}]: PageArgs): Ran<PageRead<T>, FleetError> {
  const range = rangeOf(query, options.order);
  const { joint } = index;
  if (joint !== undefined && options.keyPrefix !== undefined) return joint.readPage<T>(set, range, records.storedKey(options.keyPrefix));
  return chainMap(both(index.count(set), readRange<T>(index, records, set, range, keyOf, options.shared === true)), ([total, { ids, found }]) => ({ ids, found, total }));
}

function rangeOf(query: PageQuery, order: 'asc' | 'desc' | undefined): RangeOptions {
  return order === undefined ? { offset: (query.page - 1) * query.limit, limit: query.limit } : { offset: (query.page - 1) * query.limit, limit: query.limit, order };
}
