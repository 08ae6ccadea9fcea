import { okAsync, ResultAsync } from 'neverthrow';
import type { FleetError } from '../errors/fleet-error.js';
import type { PageQuery } from '../util/pagination.js';
import type { IndexCalls } from './index-calls.js';
import type { RangeOptions } from './index-store.js';
import { NOT_NOW, type RecordStore } from './records.js';
import { okWith } from '../util/result.js';

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

/** The records of one range of a listing; `shared`: as `RecordStore.getMany` (read-only, kept by nobody). */
export function readRange<T>(
  index: IndexCalls,
  records: RecordStore,
  set: string,
  range: RangeOptions,
  keyOf: (id: string) => string,
  shared = false,
): ResultAsync<ListedRecords<T>, FleetError> {
  return index.range(set, range).andThen((ids) => records.getMany<T>(ids.map(keyOf), shared).andThen(okWith((found) => ({ ids, found }))));
}

/** What reads a page: the stores, the listing, the page asked for, the record key of an id, and how to read it. */
type PageArgs = [
  index: IndexCalls,
  records: RecordStore,
  set: string,
  query: PageQuery,
  keyOf: (id: string) => string,
  options?: { order?: 'asc' | 'desc'; shared?: boolean },
];

/**
 * One page of a listing (`page` 1-based): its records and the listing's total, counted while the page is read. Over
 * the memory stores it is read at once (`readPageNow`); otherwise from the stores, count and range side by side.
 */
export function readPage<T>(...args: PageArgs): ResultAsync<PageRead<T>, FleetError> {
  const now = readPageNow<T>(...args);
  if (now !== undefined) return okAsync(now);
  const [index, records, set, query, keyOf, options = {}] = args;
  const range = rangeOf(query, options.order);
  return ResultAsync.combine([index.count(set), readRange<T>(index, records, set, range, keyOf, options.shared === true)]).andThen(okWith(([total, { ids, found }]) => ({ ids, found, total })));
}

/**
 * `readPage` at once, when the listing and the records are both held in this process (the memory stores): the same
 * page, read without a promise. `undefined` when either store answers in its own time: use `readPage` then.
 */
export function readPageNow<T>(...[index, records, set, query, keyOf, options = {}]: PageArgs): PageRead<T> | undefined {
  const total = index.countNow(set);
  const ids = total === undefined ? undefined : index.rangeNow(set, rangeOf(query, options.order));
  if (total === undefined || ids === undefined) return undefined;
  const keys = new Array<string>(ids.length);
  for (let i = 0; i < ids.length; i++) keys[i] = keyOf(ids[i] as string);
  const found = records.getManyNow<T>(keys, options.shared === true);
  return found === NOT_NOW ? undefined : { ids, found, total };
}

function rangeOf(query: PageQuery, order: 'asc' | 'desc' | undefined): RangeOptions {
  return order === undefined ? { offset: (query.page - 1) * query.limit, limit: query.limit } : { offset: (query.page - 1) * query.limit, limit: query.limit, order };
}
