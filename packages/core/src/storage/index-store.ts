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
 *
 * A method may answer a value or a promise: a store held in this process answers at once (the fleet then goes on
 * without waiting), a shared one with a promise. A throw and a rejection are alike STORAGE_UNAVAILABLE (`IndexCalls`).
 */
export interface IndexStore {
  commit(transaction: IndexTransaction): CommitResult | Promise<CommitResult>;
  /** The current owner of a claim and when (Unix ms) it was claimed, or `undefined` when free. */
  claimOf(key: string): Claim | undefined | Promise<Claim | undefined>;
  /** Members of a set, ordered by score then member; `order: 'desc'` reverses both. */
  range(set: string, options: RangeOptions): string[] | Promise<string[]>;
  count(set: string): number | Promise<number>;
  /**
   * How many commits the store has applied, for a store that holds its index in this process (`MemoryIndexStore`):
   * what was read from it is still what it holds while this has not moved. Optional: a store shared by other
   * processes leaves it out.
   */
  appliedCommits?(): number;
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

/** A transaction's parts, as a store applies them. */
export interface TransactionParts {
  claims: readonly { key: string; owner: string; replacing?: string }[];
  releases: readonly { key: string; owner: string }[];
  remove: readonly { set: string; member: string }[];
  add: readonly { set: string; member: string; score: number }[];
  /** The limits to check: a limit of `Infinity` is none, and left out. */
  limits: readonly { set: string; max: number }[];
  /** Nothing to do: the commit succeeds without touching the store. */
  empty: boolean;
}

/** Each part of `tx` as a list (an absent part is empty), for a store's `commit`. */
export function transactionParts(tx: IndexTransaction): TransactionParts {
  const claims = tx.claims ?? [];
  const releases = tx.releases ?? [];
  const remove = tx.remove ?? [];
  const add = tx.add ?? [];
  const limits = (tx.limits ?? []).filter(({ max }) => max !== Infinity);
  return { claims, releases, remove, add, limits, empty: claims.length + releases.length + remove.length + add.length + limits.length === 0 };
}
