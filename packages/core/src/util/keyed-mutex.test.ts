import { describe, expect, it } from 'vitest';
import { KeyedMutex } from './keyed-mutex.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('KeyedMutex', () => {
  it('runs the tasks of one key one at a time, in arrival order', async () => {
    const mutex = new KeyedMutex();
    const log: string[] = [];
    let running = 0;
    let maxRunning = 0;
    const task = (name: string, ms: number) => async () => {
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      log.push(`start ${name}`);
      await sleep(ms);
      log.push(`end ${name}`);
      running -= 1;
      return name;
    };
    const results = await Promise.all([mutex.run('k', task('a', 15)), mutex.run('k', task('b', 1)), mutex.run('k', task('c', 5))]);
    expect(results).toEqual(['a', 'b', 'c']);
    expect(maxRunning).toBe(1);
    expect(log).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  });

  it('runs different keys concurrently', async () => {
    const mutex = new KeyedMutex();
    let release: () => void = () => {};
    const blocked = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = mutex.run('a', async () => {
      await blocked;
      return 'a';
    });
    const second = await mutex.run('b', async () => 'b');
    expect(second).toBe('b');
    release();
    expect(await first).toBe('a');
  });

  it('a failing task rejects its own caller only; the next task still runs', async () => {
    const mutex = new KeyedMutex();
    const order: string[] = [];
    const failing = mutex.run('k', async () => {
      order.push('fail');
      throw new Error('boom');
    });
    const next = mutex.run('k', async () => {
      order.push('next');
      return 42;
    });
    await expect(failing).rejects.toThrow('boom');
    expect(await next).toBe(42);
    expect(order).toEqual(['fail', 'next']);
  });

  it('a task that throws synchronously inside its async body does not block the key', async () => {
    const mutex = new KeyedMutex();
    await expect(
      mutex.run('k', () => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    expect(await mutex.run('k', async () => 'after')).toBe('after');
  });

  it('a task queued after the key went idle runs at once', async () => {
    const mutex = new KeyedMutex();
    await mutex.run('k', async () => 1);
    await sleep(0);
    let ran = false;
    await mutex.run('k', async () => {
      ran = true;
    });
    expect(ran).toBe(true);
  });

  it('serializes read-modify-write sequences that would otherwise lose updates', async () => {
    const mutex = new KeyedMutex();
    let value = 0;
    await Promise.all(
      Array.from({ length: 50 }, () =>
        mutex.run('counter', async () => {
          const read = value;
          await sleep(Math.random() * 2);
          value = read + 1;
        }),
      ),
    );
    expect(value).toBe(50);
  });
});
