import { ResultAsync } from 'neverthrow';
import type { Ran } from './result.js';

/** Runs tasks one at a time per key, in arrival order; different keys run concurrently. */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    return this.hold(key, previous.then(task, task));
  }

  /** Makes `result` the last task of `key`'s lane: what comes next waits for it. */
  private hold<T>(key: string, result: Promise<T>): Promise<T> {
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
   * `run` for a task that answers a result: the changes of one record, serialized within this process. With nothing
   * running or waiting under `key`, the task starts at once; if it also ends at once (a write over the memory stores)
   * its `Result` is the answer, nothing could have come between; if it hands back a promise, the lane waits for it.
   */
  exclusive<T, E>(key: string, task: () => ResultAsync<T, E>): ResultAsync<T, E>;
  exclusive<T, E>(key: string, task: () => Ran<T, E>): Ran<T, E>;
  exclusive<T, E>(key: string, task: () => Ran<T, E>): Ran<T, E> {
    if (this.tails.has(key)) return new ResultAsync(this.run(key, async () => await task()));
    const ran = task();
    if (!(ran instanceof ResultAsync)) return ran;
    return new ResultAsync(this.hold(key, Promise.resolve(ran)));
  }
}
