import type { Claim, CommitResult, IndexStore, IndexTransaction, RangeOptions } from './index-store.js';

/**
 * Where a member is listed and at what score. The store keeps one per member, in one map for all sets: a server is
 * listed in five sets and a tool call in nine, and one lookup finds all of them. A store of 100k servers holds half a
 * million places, and each object it keeps is one more for the collector to copy, promote and mark: so a listing is
 * one object, its sets an array shared with the members listed in the same sets (`sharedSets`), and its score one
 * number while it is the same in all of them (a record is listed at its creation time everywhere).
 */
interface Listing {
  /** Never changed in place (it may be shared): a change puts a new array here. */
  sets: readonly SortedSet[];
  /** Its score in every one of `sets`, or in `sets[i]` at `scores[i]` when they differ. */
  scores: number | readonly number[];
}

const scoreIn = (listing: Listing, i: number): number =>
  typeof listing.scores === 'number' ? listing.scores : (listing.scores[i] as number);

/** One number when all `scores` are the same, else the scores themselves. */
const scoresOf = (scores: number[]): number | number[] => (scores.every((score) => score === scores[0]) ? (scores[0] as number) : scores);

/**
 * A set kept sorted by score, then member, as two parallel arrays (the scores as plain doubles, not one boxed number
 * per member): O(log n) search, O(1) count, O(limit) page.
 */
class SortedSet {
  private readonly members: string[] = [];
  private readonly scores: number[] = [];

  get size(): number {
    return this.members.length;
  }

  insert(member: string, score: number): void {
    const { members, scores } = this;
    // Most adds are the newest member of their set (a record created now): appended without a search or a splice.
    if (members.length === 0 || this.isBefore(members.length - 1, member, score)) {
      members.push(member);
      scores.push(score);
      return;
    }
    const at = this.indexFromEnd(member, score);
    members.splice(at, 0, member);
    scores.splice(at, 0, score);
  }

  /** Takes out `member`, which is in this set at `score`. */
  delete(member: string, score: number): void {
    const at = this.indexOf(member, score);
    this.members.splice(at, 1);
    this.scores.splice(at, 1);
  }

  range({ offset, limit, order = 'asc' }: RangeOptions): string[] {
    if (order === 'asc') return this.members.slice(offset, offset + limit);
    const end = this.members.length - offset;
    return this.members.slice(Math.max(0, end - limit), Math.max(0, end)).reverse();
  }

  /** Whether the member at `i` comes before `member` at `score`. */
  private isBefore(i: number, member: string, score: number): boolean {
    const at = this.scores[i] as number;
    return at !== score ? at < score : (this.members[i] as string) < member;
  }

  /** First position whose member does not come before `member` at `score`. */
  private indexOf(member: string, score: number, lo = 0, hi = this.members.length): number {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.isBefore(mid, member, score)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * `indexOf` for a member that belongs near the end, as one created in the same millisecond as the last ones does
   * (they are ordered by member): steps back 1, 2, 4… from the end, then searches the last step. It reads a few
   * places at the end of the arrays rather than ~log2(n) all over them, which in a large set are cache misses.
   */
  private indexFromEnd(member: string, score: number): number {
    let hi = this.members.length;
    let step = 1;
    while (hi > 0) {
      const lo = Math.max(0, hi - step);
      if (this.isBefore(lo, member, score)) return this.indexOf(member, score, lo + 1, hi);
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
   * Each member's listing. One map for all sets rather than one per set: an add of a new member (every create) is
   * one lookup, not one per set, and under load each lookup of a large map is a cache miss.
   */
  private readonly members = new Map<string, Listing>();
  /**
   * For each set, the sets of the last member listed first in it: the array the next member listed in the same sets
   * shares (the creates of one account, of one type and health, are listed alike).
   */
  private readonly lastSets = new Map<SortedSet, readonly SortedSet[]>();
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
      if (sorted.size === 0) {
        this.sets.delete(set);
        this.lastSets.delete(sorted);
      }
    }
    const adds = tx.add ?? [];
    for (let start = 0; start < adds.length; ) {
      // A member's adds come together (one record's listings): one lookup of the member for all of them.
      const { member } = adds[start] as { member: string };
      let end = start + 1;
      while (end < adds.length && (adds[end] as { member: string }).member === member) end++;
      this.addAll(member, adds, start, end);
      start = end;
    }
    return { ok: true };
  }

  /** The adds of `member` in `adds[start..end)`, in order: each puts it in its set, or moves it to its score there. */
  private addAll(member: string, adds: NonNullable<IndexTransaction['add']>, start: number, end: number): void {
    const listing = this.members.get(member);
    const sets = listing === undefined ? [] : [...listing.sets];
    const scores = listing === undefined ? [] : sets.map((_, i) => scoreIn(listing, i));
    let changed = false;
    for (let i = start; i < end; i++) {
      const { set, score } = adds[i] as { set: string; score: number };
      let sorted = this.sets.get(set);
      if (sorted === undefined) this.sets.set(set, (sorted = new SortedSet()));
      const at = sets.indexOf(sorted);
      if (at === -1) {
        sets.push(sorted);
        scores.push(score);
      } else if (scores[at] !== score) {
        sorted.delete(member, scores[at] as number);
        scores[at] = score;
      } else continue;
      sorted.insert(member, score);
      changed = true;
    }
    if (listing === undefined) this.members.set(member, { sets: this.sharedSets(sets), scores: scoresOf(scores) });
    else if (changed) this.relist(listing, sets, scores);
  }

  /** Takes `member` out of `sorted`; absent, nothing happens. */
  private remove(sorted: SortedSet, member: string): void {
    const listing = this.members.get(member);
    const at = listing === undefined ? -1 : listing.sets.indexOf(sorted);
    if (listing === undefined || at === -1) return;
    sorted.delete(member, scoreIn(listing, at));
    if (listing.sets.length === 1) {
      this.members.delete(member);
      return;
    }
    const keep = (_: unknown, i: number) => i !== at;
    this.relist(listing, listing.sets.filter(keep), listing.sets.map((_, i) => scoreIn(listing, i)).filter(keep));
  }

  /** Puts a changed listing's sets (shared where they can be) and scores in place. */
  private relist(listing: Listing, sets: SortedSet[], scores: number[]): void {
    listing.sets = this.sharedSets(sets);
    listing.scores = scoresOf(scores);
  }

  /** `sets`, or the equal array of the last member listed in them, to share. */
  private sharedSets(sets: SortedSet[]): readonly SortedSet[] {
    const first = sets[0] as SortedSet;
    const last = this.lastSets.get(first);
    if (last !== undefined && last.length === sets.length && last.every((set, i) => set === sets[i])) return last;
    // Copied to size: a grown array keeps room for 16 more.
    const kept = sets.slice();
    this.lastSets.set(first, kept);
    return kept;
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
