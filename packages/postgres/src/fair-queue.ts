/**
 * Items waiting in groups, taken in turns: `take(max)` takes one item of each group in turn (each group's items in
 * the order they came) until it has `max` or none is left, and a group served moves behind those that were not, so
 * that with more groups than `max` the next `take` starts with the ones this one left out. A group that floods waits
 * behind itself: an item of a quiet group goes out in the next `take` however many the flooding group has waiting.
 */
export class FairQueue<T> {
  /** Each group's items from `head` on, in the order they came; groups in the order they are to be served. */
  private readonly groups = new Map<string, { items: T[]; head: number }>();
  size = 0;

  push(group: string, item: T): void {
    const waiting = this.groups.get(group);
    if (waiting === undefined) this.groups.set(group, { items: [item], head: 0 });
    else waiting.items.push(item);
    this.size++;
  }

  take(max: number): T[] {
    const out: T[] = [];
    while (out.length < max && this.groups.size > 0) {
      // One turn: the groups as they stand (a group moved behind the others is not served twice in the turn).
      for (const group of [...this.groups.keys()]) {
        if (out.length === max) break;
        const waiting = this.groups.get(group) as { items: T[]; head: number };
        out.push(waiting.items[waiting.head++] as T);
        this.groups.delete(group);
        if (waiting.head < waiting.items.length) this.groups.set(group, waiting);
      }
    }
    this.size -= out.length;
    return out;
  }
}
