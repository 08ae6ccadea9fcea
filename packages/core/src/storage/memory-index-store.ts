import type { Claim, CommitResult, IndexStore, IndexTransaction, RangeOptions } from './index-store.js';

/**
 * Slot numbers for parallel arrays: a slot given back is handed out again first, so the arrays stay dense (no hole,
 * which would turn an array of plain doubles into one of boxed numbers).
 */
class Slots {
  private readonly free: number[] = [];
  private next = 0;

  take(): number {
    return this.free.pop() ?? this.next++;
  }

  give(slot: number): void {
    this.free.push(slot);
  }
}

/** The sets of a slot given back: nothing kept alive by a slot that holds no member. */
const NO_SETS: readonly SortedSet[] = [];

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

/**
 * The in-process IndexStore: atomic because each commit runs synchronously. Nothing survives a restart.
 *
 * A store of 100k servers holds 100k claims and 100k members' listings, and every object it keeps is one more for the
 * collector to copy twice (to the survivor space, then to the old one) and to mark: a create was measured to cost
 * what it keeps more than what it does (docs/performance.md, "post-cpu2" and "post-bytes"). So a claim and a listing
 * are no objects of their own: the maps hold a slot (a small integer, kept in the map's own entry), and the owner and
 * time of a claim, the sets and score of a listing, are in arrays by slot, the times and scores as plain doubles (in
 * an object, each would be a boxed number of its own).
 */
export class MemoryIndexStore implements IndexStore {
  /** Each claim's slot in `claimOwners` and `claimSince`. */
  private readonly claims = new Map<string, number>();
  /** The owner of each claim's slot (`''` in a slot given back). */
  private readonly claimOwners: string[] = [];
  /** When (Unix ms) each claim's slot was claimed. */
  private readonly claimSince: number[] = [];
  private readonly claimSlots = new Slots();
  private readonly sets = new Map<string, SortedSet>();
  /**
   * Each member's slot in `listedSets` and `listedScore`. One map for all sets rather than one per set: an add of a new
   * member (every create) is one lookup, not one per set, and under load each lookup of a large map is a cache miss.
   */
  private readonly members = new Map<string, number>();
  /**
   * The sets each slot's member is listed in. Never changed in place: it may be shared with the members listed in the
   * same sets (`sharedSets`), and a change puts a new array here.
   */
  private readonly listedSets: (readonly SortedSet[])[] = [];
  /** The score of each slot's member in every one of its sets, unless `differingScores` holds its score in each. */
  private readonly listedScore: number[] = [];
  /** By slot, the scores of the members whose score is not the same in all their sets (a record is listed at its creation time everywhere). */
  private readonly differingScores = new Map<number, readonly number[]>();
  private readonly memberSlots = new Slots();
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
    const { claims, claimOwners, claimSince } = this;
    for (const { key, owner, replacing } of tx.claims ?? []) {
      const held = claims.get(key);
      if (held === undefined) continue;
      const holder = claimOwners[held] as string;
      if (holder !== owner && holder !== replacing) return { ok: false, conflict: { key, owner: holder, since: claimSince[held] as number } };
    }
    for (const { set, max } of tx.limits ?? []) {
      if ((this.sets.get(set)?.size ?? 0) >= max) return { ok: false, full: { set, max } };
    }
    const since = this.now();
    this.applied++;
    for (const { key, owner } of tx.releases ?? []) {
      const held = claims.get(key);
      if (held === undefined || claimOwners[held] !== owner) continue;
      claims.delete(key);
      claimOwners[held] = '';
      this.claimSlots.give(held);
    }
    for (const { key, owner } of tx.claims ?? []) {
      let held = claims.get(key);
      if (held !== undefined && claimOwners[held] === owner) continue;
      if (held === undefined) claims.set(key, (held = this.claimSlots.take()));
      claimOwners[held] = owner;
      claimSince[held] = since;
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
    const slot = this.members.get(member);
    const sets = slot === undefined ? [] : [...(this.listedSets[slot] as readonly SortedSet[])];
    const scores = slot === undefined ? [] : sets.map((_, i) => this.scoreIn(slot, i));
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
    if (slot === undefined) {
      const taken = this.memberSlots.take();
      this.members.set(member, taken);
      this.relist(taken, sets, scores);
    } else if (changed) this.relist(slot, sets, scores);
  }

  /** Takes `member` out of `sorted`, answering whether it was there; absent, nothing happens. */
  private remove(sorted: SortedSet, member: string): boolean {
    const slot = this.members.get(member);
    if (slot === undefined) return false;
    const sets = this.listedSets[slot] as readonly SortedSet[];
    const at = sets.indexOf(sorted);
    if (at === -1) return false;
    sorted.delete(member, this.scoreIn(slot, at));
    if (sets.length === 1) {
      this.members.delete(member);
      // Its one score is in `listedScore` (`relist` of a single set), not in `differingScores`.
      this.listedSets[slot] = NO_SETS;
      this.memberSlots.give(slot);
      return true;
    }
    const keep = (_: unknown, i: number) => i !== at;
    this.relist(slot, sets.filter(keep), sets.map((_, i) => this.scoreIn(slot, i)).filter(keep));
    return true;
  }

  /** The score of `slot`'s member in the `i`th of its sets. */
  private scoreIn(slot: number, i: number): number {
    const differing = this.differingScores.size === 0 ? undefined : this.differingScores.get(slot);
    return differing === undefined ? (this.listedScore[slot] as number) : (differing[i] as number);
  }

  /** Puts `slot`'s sets (shared where they can be) and their scores in place: one number when they are all the same. */
  private relist(slot: number, sets: SortedSet[], scores: number[]): void {
    this.listedSets[slot] = this.sharedSets(sets);
    const first = scores[0] as number;
    let same = true;
    for (let i = 1; i < scores.length && same; i++) same = scores[i] === first;
    if (same) {
      this.listedScore[slot] = first;
      if (this.differingScores.size !== 0) this.differingScores.delete(slot);
    } else {
      // Any number: `scoreIn` reads the slot's scores from `differingScores`.
      this.listedScore[slot] = 0;
      this.differingScores.set(slot, scores);
    }
  }

  /** `sets`, or the equal array of the last member listed in them, to share. */
  private sharedSets(sets: SortedSet[]): readonly SortedSet[] {
    const first = sets[0] as SortedSet;
    const last = this.lastSets.get(first);
    if (last !== undefined && last.length === sets.length) {
      let same = true;
      for (let i = 0; i < sets.length && same; i++) same = last[i] === sets[i];
      if (same) return last;
    }
    // Copied to size: a grown array keeps room for 16 more.
    const kept = sets.slice();
    this.lastSets.set(first, kept);
    return kept;
  }

  claimOf(key: string): Claim | undefined {
    const held = this.claims.get(key);
    return held === undefined ? undefined : { owner: this.claimOwners[held] as string, since: this.claimSince[held] as number };
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
