import type { FleetError } from '../errors/fleet-error.js';
import { portCall, type Ran } from '../util/result.js';
import type { Claim, CommitResult, IndexStore, IndexTransaction, JointPage, RangeOptions, RecordWrite } from './index-store.js';

/**
 * The IndexStore seen through results: a failing or unreachable store, whether it throws or rejects, is
 * STORAGE_UNAVAILABLE. A store that answers at once is answered at once (a `Result`), one that answers with a promise
 * through a `ResultAsync`.
 */
export class IndexCalls {
  /** The store's joint calls (`IndexStore.jointRecords`), when it keeps the fleet's own records; else `undefined`. */
  readonly joint: JointCalls | undefined;

  constructor(
    readonly store: IndexStore,
    /** The fleet's records Keyv: the joint calls are used only when the store's `jointRecords` is this one. */
    records?: unknown,
  ) {
    const { commitWithRecords, readPage } = store;
    const joint = records !== undefined && store.jointRecords === records && typeof commitWithRecords === 'function' && typeof readPage === 'function';
    this.joint = joint ? new JointCalls(store) : undefined;
  }

  commit(tx: IndexTransaction): Ran<CommitResult, FleetError> {
    return portCall(() => this.store.commit(tx), 'index', 'commit');
  }

  claimOf(key: string): Ran<Claim | undefined, FleetError> {
    return portCall(() => this.store.claimOf(key), 'index', 'claimOf');
  }

  range(set: string, options: RangeOptions): Ran<string[], FleetError> {
    return portCall(() => this.store.range(set, options), 'index', 'range');
  }

  count(set: string): Ran<number, FleetError> {
    return portCall(() => this.store.count(set), 'index', 'count');
  }

  /** The store's revision of `set` (`IndexStore.setRevision`); `undefined` when it keeps none. */
  setRevision(set: string): number | undefined {
    return this.store.setRevision?.(set);
  }
}

/** An index's joint calls with the records (`IndexStore.commitWithRecords`, `readPage`), seen through results. */
export class JointCalls {
  constructor(private readonly store: IndexStore) {}

  commitWithRecords(tx: IndexTransaction, records: readonly RecordWrite[]): Ran<CommitResult, FleetError> {
    return portCall(() => (this.store.commitWithRecords as NonNullable<IndexStore['commitWithRecords']>).call(this.store, tx, records), 'index', 'commitWithRecords');
  }

  readPage<T>(set: string, range: RangeOptions, keyPrefix: string): Ran<JointPage<T>, FleetError> {
    return portCall(() => (this.store.readPage as NonNullable<IndexStore['readPage']>).call(this.store, set, range, keyPrefix) as JointPage<T> | Promise<JointPage<T>>, 'index', 'readPage');
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
