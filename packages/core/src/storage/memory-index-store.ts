import type { Claim, CommitResult, IndexStore, IndexTransaction, RangeOptions } from './index-store.js';

interface Entry {
  member: string;
  score: number;
}

function compare(a: Entry, b: Entry): number {
  return a.score - b.score || (a.member < b.member ? -1 : a.member > b.member ? 1 : 0);
}

/** A set kept as a sorted array plus a member → score map: O(log n) search, O(1) count, O(limit) page. */
class SortedSet {
  private readonly entries: Entry[] = [];
  private readonly scores = new Map<string, number>();

  get size(): number {
    return this.entries.length;
  }

  add(member: string, score: number): void {
    // One lookup of the member, not two: under load each lookup of a large set's map is a cache miss.
    const known = this.scores.get(member);
    if (known === score) return;
    if (known !== undefined) this.entries.splice(this.indexOf({ member, score: known }), 1);
    const entry = { member, score };
    // Most adds are the newest entry of their set (a record created now): appended without a search or a splice.
    const last = this.entries[this.entries.length - 1];
    if (last === undefined || compare(last, entry) < 0) this.entries.push(entry);
    else this.entries.splice(this.indexOf(entry), 0, entry);
    this.scores.set(member, score);
  }

  remove(member: string): void {
    const score = this.scores.get(member);
    if (score === undefined) return;
    this.entries.splice(this.indexOf({ member, score }), 1);
    this.scores.delete(member);
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
  private indexOf(entry: Entry): number {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(this.entries[mid] as Entry, entry) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
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
      sorted?.remove(member);
      if (sorted?.size === 0) this.sets.delete(set);
    }
    for (const { set, member, score } of tx.add ?? []) {
      let sorted = this.sets.get(set);
      if (sorted === undefined) this.sets.set(set, (sorted = new SortedSet()));
      sorted.add(member, score);
    }
    return { ok: true };
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
