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
  /**
   * With `appliedCommits`, optional: a number that moves whenever `set` changes (a member added, moved or removed),
   * and never comes back to one it had with other members: what was read of `set` (`range`, `count`) is still what it
   * holds while this has not moved, whatever other sets did meanwhile.
   */
  setRevision?(set: string): number;
  /**
   * Optional, with `commitWithRecords` and `readPage`: for an index kept in the same database as the fleet's records
   * (`@mcp-fleet/postgres`), the Keyv whose records those two write and read. The fleet calls them only when this is
   * its own `records`, and otherwise (and over every store without them) writes the record and commits, or counts,
   * ranges and reads, in calls of their own (docs/architecture.md, "One storage seam").
   */
  readonly jointRecords?: unknown;
  /**
   * `commit(transaction)`, writing `records` in the same atomic step only if it goes through: one call, one round
   * trip. A refused commit has written nothing, records included.
   */
  commitWithRecords?(transaction: IndexTransaction, records: readonly RecordWrite[]): CommitResult | Promise<CommitResult>;
  /**
   * `count(set)`, `range(set, range)` and the record of each member (`keyPrefix + member` in `jointRecords`, decoded
   * as its Keyv decodes it; `undefined` where absent or expired), read together: one call.
   */
  readPage?<T>(set: string, range: RangeOptions, keyPrefix: string): JointPage<T> | Promise<JointPage<T>>;
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

/** A record `commitWithRecords` writes: its key as the records' Keyv is given it (the fleet's `keyPrefix` included), no expiry. */
export interface RecordWrite {
  key: string;
  value: unknown;
}

/** What `readPage` answers: the set's size, the members of the range in order, and their records side by side. */
export interface JointPage<T> {
  total: number;
  ids: string[];
  found: (T | undefined)[];
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
