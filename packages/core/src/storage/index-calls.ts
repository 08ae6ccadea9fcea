import type { FleetError } from '../errors/fleet-error.js';
import { storeCall } from '../trace/store-call.js';
import { portCall, type Ran } from '../util/result.js';
import type { Claim, CommitResult, IndexStore, IndexTransaction, RangeOptions } from './index-store.js';

/**
 * The IndexStore seen through results: a failing or unreachable store, whether it throws or rejects, is
 * STORAGE_UNAVAILABLE. A store that answers at once is answered at once (a `Result`), one that answers with a promise
 * through a `ResultAsync`.
 */
export class IndexCalls {
  constructor(readonly store: IndexStore) {}

  commit(tx: IndexTransaction): Ran<CommitResult, FleetError> {
    return portCall(() => storeCall('index', 'commit', () => this.store.commit(tx)));
  }

  claimOf(key: string): Ran<Claim | undefined, FleetError> {
    return portCall(() => storeCall('index', 'claimOf', () => this.store.claimOf(key)));
  }

  range(set: string, options: RangeOptions): Ran<string[], FleetError> {
    return portCall(() => storeCall('index', 'range', () => this.store.range(set, options)));
  }

  count(set: string): Ran<number, FleetError> {
    return portCall(() => storeCall('index', 'count', () => this.store.count(set)));
  }

  /** The store's count of applied commits (`IndexStore.appliedCommits`); `undefined` when it keeps none. */
  appliedCommits(): number | undefined {
    return this.store.appliedCommits?.();
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
