import { ResultAsync } from 'neverthrow';
import { type FleetError, storageUnavailable } from '../errors/fleet-error.js';
import type { CommitResult, IndexStore, IndexTransaction, RangeOptions } from './index-store.js';
import { storeCall } from '../trace/store-call.js';

/** The IndexStore seen through ResultAsync: a failing or unreachable store is STORAGE_UNAVAILABLE. */
export class IndexCalls {
  constructor(readonly store: IndexStore) {}

  commit(tx: IndexTransaction): ResultAsync<CommitResult, FleetError> {
    return ResultAsync.fromPromise(storeCall('index', this.store, 'commit', tx), storageUnavailable);
  }

  claimOf(key: string) {
    return ResultAsync.fromPromise(storeCall('index', this.store, 'claimOf', key), storageUnavailable);
  }

  range(set: string, options: RangeOptions): ResultAsync<string[], FleetError> {
    return ResultAsync.fromPromise(storeCall('index', this.store, 'range', set, options), storageUnavailable);
  }

  count(set: string): ResultAsync<number, FleetError> {
    return ResultAsync.fromPromise(storeCall('index', this.store, 'count', set), storageUnavailable);
  }

  /** Whether the store applies a commit at once (`commitNow`). */
  get commitsAtOnce(): boolean {
    return typeof this.store.commitNow === 'function';
  }

  /** `commit` at once over a store that applies it in this process (`IndexStore.commitNow`); `undefined` otherwise. */
  commitNow(tx: IndexTransaction): CommitResult | undefined {
    return this.store.commitNow === undefined ? undefined : storeCall('index', this.store as Required<IndexStore>, 'commitNow', tx);
  }

  /** `range` at once over a store that answers in this process (`IndexStore.rangeNow`); `undefined` otherwise. */
  rangeNow(set: string, options: RangeOptions): string[] | undefined {
    return this.store.rangeNow === undefined ? undefined : storeCall('index', this.store as Required<IndexStore>, 'rangeNow', set, options);
  }

  /** The store's count of applied commits (`IndexStore.commitsNow`); `undefined` when it keeps none. */
  commitsNow(): number | undefined {
    return this.store.commitsNow?.();
  }

  /** `count` at once over a store that answers in this process; `undefined` otherwise. */
  countNow(set: string): number | undefined {
    return this.store.countNow === undefined ? undefined : storeCall('index', this.store as Required<IndexStore>, 'countNow', set);
  }
}

/** Unions index transactions, so that several writes land in one `commit`; undefined parts are skipped. */
export function mergeTransactions(...parts: (IndexTransaction | undefined)[]): IndexTransaction {
  const out: Required<{ [K in keyof IndexTransaction]: NonNullable<IndexTransaction[K]>[number][] }> = {
    claims: [],
    releases: [],
    add: [],
    remove: [],
    limits: [],
  };
  for (const part of parts) {
    if (part === undefined) continue;
    out.claims.push(...(part.claims ?? []));
    out.releases.push(...(part.releases ?? []));
    out.add.push(...(part.add ?? []));
    out.remove.push(...(part.remove ?? []));
    out.limits.push(...(part.limits ?? []));
  }
  return out;
}
