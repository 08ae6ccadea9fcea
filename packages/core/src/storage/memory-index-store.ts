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

/** A run of a set's entries, in order: members, and their scores as plain doubles, side by side. */
interface Block {
  members: string[];
  scores: number[];
}

/** Entries a block holds when the entries come in order (each new one last); a block that grows past twice this splits. */
const BLOCK = 512;

/**
 * A set kept sorted by score, then member, as a list of blocks of at most `2 * BLOCK` entries, each two parallel
 * arrays (the scores as plain doubles, not one boxed number per member). An add or remove moves the entries of one
 * block, never those of the whole set: in one array, a server created in the same millisecond as the last ones (they
 * are ordered by member, which is random) moved a large array's tail and wrote its old-space slots again, and every
 * delete moved half the set. O(log n) search, O(1) count, O(limit) page.
 */
class SortedSet {
  private readonly blocks: Block[] = [];
  /** Where each block starts in the set, known for the blocks before `startsKnown`: a page at an offset finds its block. */
  private readonly starts: number[] = [];
  private startsKnown = 0;
  private count = 0;
  /** The store's count of applied commits when this set last changed (`MemoryIndexStore.setRevision`). */
  revision = 0;

  get size(): number {
    return this.count;
  }

  insert(member: string, score: number): void {
    const { blocks } = this;
    this.count++;
    const last = blocks[blocks.length - 1];
    if (last === undefined) {
      blocks.push({ members: [member], scores: [score] });
      return;
    }
    const end = last.members.length;
    // Most adds are the newest member of their set (a record created now): appended without a search, and a full
    // last block is followed by a new one rather than split, so blocks filled in order stay full.
    if (isBefore(last, end - 1, member, score)) {
      if (end < BLOCK) {
        last.members.push(member);
        last.scores.push(score);
      } else blocks.push({ members: [member], scores: [score] });
      return;
    }
    const at = isBefore(last, 0, member, score) ? blocks.length - 1 : this.blockOf(member, score);
    const block = blocks[at] as Block;
    // Moved up by hand: `splice` makes an array of what it removed, on every add.
    const i = indexIn(block, member, score);
    const { members, scores } = block;
    members.push(member);
    scores.push(score);
    for (let j = members.length - 1; j > i; j--) {
      members[j] = members[j - 1] as string;
      scores[j] = scores[j - 1] as number;
    }
    members[i] = member;
    scores[i] = score;
    this.changedAfter(at);
    if (block.members.length > 2 * BLOCK) {
      blocks.splice(at + 1, 0, { members: block.members.splice(BLOCK), scores: block.scores.splice(BLOCK) });
    }
  }

  /** Takes out `member`, which is in this set at `score`. */
  delete(member: string, score: number): void {
    const at = this.blockOf(member, score);
    const block = this.blocks[at] as Block;
    const i = indexIn(block, member, score);
    block.members.splice(i, 1);
    block.scores.splice(i, 1);
    this.count--;
    this.changedAfter(at);
    // An emptied block goes; the block after it starts where it did, so what is known of the starts holds.
    if (block.members.length === 0) this.blocks.splice(at, 1);
  }

  range({ offset, limit, order = 'asc' }: RangeOptions): string[] {
    if (order === 'asc') return this.slice(offset, Math.min(this.count, offset + limit));
    const end = this.count - offset;
    return this.slice(Math.max(0, end - limit), Math.max(0, end)).reverse();
  }

  /** The members at positions `from` up to `to` (excluded). */
  private slice(from: number, to: number): string[] {
    if (from >= to) return [];
    this.knowStarts();
    const { blocks, starts } = this;
    // The last block starting at or before `from`.
    let lo = 0;
    let hi = blocks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if ((starts[mid] as number) <= from) lo = mid;
      else hi = mid - 1;
    }
    const at = from - (starts[lo] as number);
    const first = (blocks[lo] as Block).members;
    // A page within one block (most pages): one copy.
    if (at + (to - from) <= first.length) return first.slice(at, at + (to - from));
    let out = first.slice(at);
    for (let b = lo + 1; b < blocks.length && out.length < to - from; b++) {
      const { members } = blocks[b] as Block;
      out = out.concat(members.length <= to - from - out.length ? members : members.slice(0, to - from - out.length));
    }
    return out;
  }

  /** The first block whose last entry does not come before `member` at `score` (the last block if none). */
  private blockOf(member: string, score: number): number {
    const { blocks } = this;
    let lo = 0;
    let hi = blocks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const block = blocks[mid] as Block;
      if (isBefore(block, block.members.length - 1, member, score)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Block `at` changed size: the starts of the blocks after it are no longer known. */
  private changedAfter(at: number): void {
    if (this.startsKnown > at + 1) this.startsKnown = at + 1;
  }

  private knowStarts(): void {
    const { blocks, starts } = this;
    if (this.startsKnown === blocks.length) return;
    starts[0] = 0;
    for (let b = Math.max(1, this.startsKnown); b < blocks.length; b++) {
      starts[b] = (starts[b - 1] as number) + (blocks[b - 1] as Block).members.length;
    }
    if (starts.length > blocks.length) starts.length = blocks.length;
    this.startsKnown = blocks.length;
  }
}

/** Whether the entry at `i` of `block` comes before `member` at `score`. */
function isBefore(block: Block, i: number, member: string, score: number): boolean {
  const at = block.scores[i] as number;
  return at !== score ? at < score : (block.members[i] as string) < member;
}

/** First position in `block` whose entry does not come before `member` at `score`. */
function indexIn(block: Block, member: string, score: number): number {
  let lo = 0;
  let hi = block.members.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (isBefore(block, mid, member, score)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
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

  /** Applied before it returns: the batch, all-or-nothing (answered at once, as every method of this store). */
  commit(tx: IndexTransaction): CommitResult {
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
      if (this.remove(sorted, member)) sorted.revision = this.applied;
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
      sorted.revision = this.applied;
      changed = true;
    }
    if (listing === undefined) this.members.set(member, { sets: this.sharedSets(sets), scores: scoresOf(scores) });
    else if (changed) this.relist(listing, sets, scores);
  }

  /** Takes `member` out of `sorted`, answering whether it was there; absent, nothing happens. */
  private remove(sorted: SortedSet, member: string): boolean {
    const listing = this.members.get(member);
    const at = listing === undefined ? -1 : listing.sets.indexOf(sorted);
    if (listing === undefined || at === -1) return false;
    sorted.delete(member, scoreIn(listing, at));
    if (listing.sets.length === 1) {
      this.members.delete(member);
      return true;
    }
    const keep = (_: unknown, i: number) => i !== at;
    this.relist(listing, listing.sets.filter(keep), listing.sets.map((_, i) => scoreIn(listing, i)).filter(keep));
    return true;
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

  claimOf(key: string): Claim | undefined {
    const claim = this.claims.get(key);
    return claim && { ...claim };
  }

  range(set: string, options: RangeOptions): string[] {
    return this.sets.get(set)?.range(options) ?? [];
  }

  count(set: string): number {
    return this.sets.get(set)?.size ?? 0;
  }

  appliedCommits(): number {
    return this.applied;
  }

  /**
   * The count of applied commits when `set` last changed (a member added, moved or removed); for a set that holds
   * nobody, the count now. What `range` and `count` answer of `set` is the same while this has not moved: a set made
   * again after it emptied starts at a later count than any it answered before, and an empty set's answer moves with
   * every commit (never the same number for two different contents).
   */
  setRevision(set: string): number {
    return this.sets.get(set)?.revision ?? this.applied;
  }

  async close(): Promise<void> {}
}
