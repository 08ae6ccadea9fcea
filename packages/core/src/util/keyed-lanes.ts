/**
 * Runs at most `width` tasks at once per key, the rest waiting in arrival order; different keys run independently.
 * What keeps one tenant's burst of upstream work from taking every connection the service has.
 */
export class KeyedLanes {
  private readonly lanes = new Map<string, { active: number; waiting: (() => void)[] }>();

  constructor(private readonly width: number) {}

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    let lane = this.lanes.get(key);
    if (lane === undefined) this.lanes.set(key, (lane = { active: 0, waiting: [] }));
    if (lane.active >= this.width) await new Promise<void>((resolve) => lane.waiting.push(resolve));
    else lane.active += 1;
    try {
      return await task();
    } finally {
      // The slot passes to the next waiter as it is; the lane goes once nothing runs or waits.
      const next = lane.waiting.shift();
      if (next !== undefined) next();
      else if ((lane.active -= 1) === 0) this.lanes.delete(key);
    }
  }

  /** Tasks running now under `key`, for tests. */
  active(key: string): number {
    return this.lanes.get(key)?.active ?? 0;
  }
}
