import type { Claim, CommitResult, IndexStore, IndexTransaction, RangeOptions } from './index-store.js';

/**
 * A member's place in one set. The entries of one member in all its sets are chained (`next`), from the store's one
 * map of members: a server is listed in five sets, a tool call in nine, and one lookup finds all of them.
 */
interface Entry {
  readonly member: string;
  score: number;
  readonly set: SortedSet;
  next: Entry | undefined;
}

function compare(a: { member: string; score: number }, b: { member: string; score: number }): number {
  return a.score - b.score || (a.member < b.member ? -1 : a.member > b.member ? 1 : 0);
}

/** A set kept as a sorted array of entries: O(log n) search, O(1) count, O(limit) page. */
class SortedSet {
  private readonly entries: Entry[] = [];

  get size(): number {
    return this.entries.length;
  }

  insert(entry: Entry): void {
    const { entries } = this;
    // Most adds are the newest entry of their set (a record created now): appended without a search or a splice.
    const last = entries[entries.length - 1];
    if (last === undefined || compare(last, entry) < 0) entries.push(entry);
    else entries.splice(this.indexFromEnd(entry), 0, entry);
  }

  /** Takes out `entry`, which is in this set with its current score. */
  delete(entry: Entry): void {
    this.entries.splice(this.indexOf(entry), 1);
  }

  range({ offset, limit, order = 'asc' }: RangeOptions): string[] {
    if (order === 'asc') return this.entries.slice(offset, offset + limit).map((e) => e.member);
    const end = this.entries.length - offset;
    return this.entries
      .slice(Math.max(0, end - limit), Math.max(0, end))
      .reverse()
      .map((e) => e.member);
  }

  /** First position whose entry is not less than `entry`. */
  private indexOf(entry: { member: string; score: number }, lo = 0, hi = this.entries.length): number {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(this.entries[mid] as Entry, entry) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * `indexOf` for an entry that belongs near the end, as one created in the same millisecond as the last ones does
   * (they are ordered by member): steps back 1, 2, 4… from the end, then searches the last step. It reads a few
   * entries at the end of the array rather than ~log2(n) all over it, which in a large set are cache misses.
   */
  private indexFromEnd(entry: { member: string; score: number }): number {
    let hi = this.entries.length;
    let step = 1;
    while (hi > 0) {
      const lo = Math.max(0, hi - step);
      if (compare(this.entries[lo] as Entry, entry) < 0) return this.indexOf(entry, lo + 1, hi);
      hi = lo;
      step *= 2;
    }
    return 0;
  }
}

export interface MemoryIndexStoreOptions {
  /** Clock for claim times. @default Date.now */
  now?: () => number;
}

/** The in-process IndexStore: atomic because each commit runs synchronously. Nothing survives a restart. */
export class MemoryIndexStore implements IndexStore {
  private readonly claims = new Map<string, Claim>();
  private readonly sets = new Map<string, SortedSet>();
  /**
   * Each member's first entry, its others chained from it. One map for all sets rather than one per set: an add of
   * a new member (every create) is one lookup, not one per set, and under load each lookup of a large map is a cache
   * miss.
   */
  private readonly members = new Map<string, Entry>();
  private readonly now: () => number;
  private applied = 0;

  constructor(options: MemoryIndexStoreOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  async commit(tx: IndexTransaction): Promise<CommitResult> {
    return this.commitNow(tx);
  }

  /** `commit` at once: the same batch, all-or-nothing, applied before it returns. */
  commitNow(tx: IndexTransaction): CommitResult {
    for (const { key, owner, replacing } of tx.claims ?? []) {
      const held = this.claims.get(key);
      if (held !== undefined && held.owner !== owner && held.owner !== replacing) {
        return { ok: false, conflict: { key, ...held } };
      }
    }
    for (const { set, max } of tx.limits ?? []) {
      if ((this.sets.get(set)?.size ?? 0) >= max) return { ok: false, full: { set, max } };
    }
    const since = this.now();
    this.applied++;
    for (const { key, owner } of tx.releases ?? []) {
      if (this.claims.get(key)?.owner === owner) this.claims.delete(key);
    }
    for (const { key, owner } of tx.claims ?? []) {
      if (this.claims.get(key)?.owner !== owner) this.claims.set(key, { owner, since });
    }
    for (const { set, member } of tx.remove ?? []) {
      const sorted = this.sets.get(set);
      if (sorted === undefined) continue;
      this.remove(sorted, member);
      if (sorted.size === 0) this.sets.delete(set);
    }
    for (const { set, member, score } of tx.add ?? []) {
      let sorted = this.sets.get(set);
      if (sorted === undefined) this.sets.set(set, (sorted = new SortedSet()));
      this.add(sorted, member, score);
    }
    return { ok: true };
  }

  /** Adds `member` to `sorted`, or moves it to `score` there. */
  private add(sorted: SortedSet, member: string, score: number): void {
    const first = this.members.get(member);
    let last: Entry | undefined;
    for (let entry = first; entry !== undefined; entry = entry.next) {
      if (entry.set === sorted) {
        if (entry.score === score) return;
        sorted.delete(entry);
        entry.score = score;
        sorted.insert(entry);
        return;
      }
      last = entry;
    }
    const entry: Entry = { member, score, set: sorted, next: undefined };
    if (last === undefined) this.members.set(member, entry);
    else last.next = entry;
    sorted.insert(entry);
  }

  /** Takes `member` out of `sorted`; absent, nothing happens. */
  private remove(sorted: SortedSet, member: string): void {
    let before: Entry | undefined;
    for (let entry = this.members.get(member); entry !== undefined; before = entry, entry = entry.next) {
      if (entry.set !== sorted) continue;
      sorted.delete(entry);
      if (before !== undefined) before.next = entry.next;
      else if (entry.next !== undefined) this.members.set(member, entry.next);
      else this.members.delete(member);
      return;
    }
  }

  async claimOf(key: string): Promise<Claim | undefined> {
    const claim = this.claims.get(key);
    return claim && { ...claim };
  }

  async range(set: string, options: RangeOptions): Promise<string[]> {
    return this.rangeNow(set, options);
  }

  async count(set: string): Promise<number> {
    return this.countNow(set);
  }

  rangeNow(set: string, options: RangeOptions): string[] {
    return this.sets.get(set)?.range(options) ?? [];
  }

  countNow(set: string): number {
    return this.sets.get(set)?.size ?? 0;
  }

  commitsNow(): number {
    return this.applied;
  }

  async close(): Promise<void> {}
}
