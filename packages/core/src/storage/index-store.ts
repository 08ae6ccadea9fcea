/**
 * The atomic side of storage. keyv holds the records; it has no atomic operations, so whatever must hold
 * under concurrency across requests and processes (unique names, ordered listings) lives behind this port.
 *
 * Two structures:
 * - claims: a key owned by one owner (a server's name, owned by its id), taken only when free;
 * - ordered sets: members ordered by a numeric score then by member, read one page at a time.
 *
 * `commit` applies a batch all-or-nothing: every claim must be free (or already the same owner's, or held by
 * `replacing`), else nothing is written and the first conflict is returned; then every limit must have room (its set
 * holds fewer than `max` members), else nothing is written and the first full set is returned. Implementations: `MemoryIndexStore`
 * here, SQLite in `@mcp-fleet/sqlite`; each must pass `indexStoreContract` (`@mcp-fleet/core/testing`).
 */
export interface IndexStore {
  commit(transaction: IndexTransaction): Promise<CommitResult>;
  /** The current owner of a claim and when (Unix ms) it was claimed, or `undefined` when free. */
  claimOf(key: string): Promise<Claim | undefined>;
  /** Members of a set, ordered by score then member; `order: 'desc'` reverses both. */
  range(set: string, options: RangeOptions): Promise<string[]>;
  count(set: string): Promise<number>;
  /**
   * `range` answered at once, by a store that holds its index in this process (`MemoryIndexStore`). Optional: the
   * fleet then reads a listing without waiting for a promise; a store over the network leaves it out.
   */
  rangeNow?(set: string, options: RangeOptions): string[];
  /** `count` answered at once; present exactly when `rangeNow` is. */
  countNow?(set: string): number;
  /**
   * `commit` answered at once, by a store that holds its index in this process (`MemoryIndexStore`): the same batch,
   * all-or-nothing, applied before it returns. Optional: the fleet then writes a change without waiting for a promise
   * (a create over the memory stores); a store over the network leaves it out.
   */
  commitNow?(transaction: IndexTransaction): CommitResult;
  /**
   * How many commits the store has applied, for a store that answers `rangeNow`: what was read from it is still what
   * it holds while this has not moved. Optional.
   */
  commitsNow?(): number;
  /** Releases connections. Idempotent. */
  close?(): Promise<void>;
}

export interface IndexTransaction {
  /** Claims to take; `replacing` lets a stale claim of that owner be taken over. */
  claims?: readonly { key: string; owner: string; replacing?: string }[];
  /** Claims to release; a claim is released only if `owner` still holds it. */
  releases?: readonly { key: string; owner: string }[];
  /** Members to add (or re-score) in sets. */
  add?: readonly { set: string; member: string; score: number }[];
  /** Members to remove from sets; absent members are ignored. */
  remove?: readonly { set: string; member: string }[];
  /**
   * Preconditions on the size of sets, checked in the same atomic step as the writes: the commit goes through only if
   * each `set` holds fewer than `max` members before it. A quota that holds across processes: add the new member in
   * the commit that names the limit.
   */
  limits?: readonly { set: string; max: number }[];
}

export interface Claim {
  owner: string;
  since: number;
}

/** A refused commit names why: the first claim held by another owner, or else the first set already full. */
export type CommitResult =
  | { ok: true }
  | { ok: false; conflict: { key: string } & Claim; full?: undefined }
  | { ok: false; full: { set: string; max: number }; conflict?: undefined };

export interface RangeOptions {
  offset: number;
  limit: number;
  order?: 'asc' | 'desc';
}
