import { ResultAsync } from 'neverthrow';

/** Runs tasks one at a time per key, in arrival order; different keys run concurrently. */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task, task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /**
   * Whether nothing runs or waits under `key`: a task that completes without yielding (a write over the memory
   * stores) may then run at once, in place of `run`, with the same effect: nothing could have come between.
   */
  idle(key: string): boolean {
    return !this.tails.has(key);
  }

  /** `run` for a task that answers a `ResultAsync`: the changes of one record, serialized within this process. */
  exclusive<T, E>(key: string, task: () => ResultAsync<T, E>): ResultAsync<T, E> {
    return new ResultAsync(this.run(key, async () => await task()));
  }
}
