import KeyvRedis, { type RedisClientConnectionType } from '@keyv/redis';
import type { KeyvEntry } from 'keyv';
import { withDeadline } from './commands.js';

/**
 * `@keyv/redis` over a client that `createRedisStore` owns, with two changes: every call has a deadline (a sent
 * command is otherwise awaited forever when the server stops answering), and after `close` calls reject instead of
 * reconnecting (the adapter connects a closed client again on its next call).
 */
export class RedisRecordAdapter extends KeyvRedis<string> {
  closed = false;
  readonly #timeout: number;

  constructor(client: RedisClientConnectionType, timeout: number) {
    // Errors reach the caller (Keyv's throwOnErrors needs the adapter to throw too); no separator after the prefix.
    super(client, { throwOnErrors: true, throwOnConnectError: true, keyPrefixSeparator: '' });
    this.#timeout = timeout;
  }

  override async getClient(): Promise<RedisClientConnectionType> {
    if (this.closed) throw new Error('the Redis storage is closed');
    return super.getClient();
  }

  override get<U = string>(key: string): Promise<U | undefined> {
    return this.#bound(super.get<U>(key));
  }

  override getMany<U = string>(keys: string[]): Promise<Array<U | undefined>> {
    return this.#bound(super.getMany<U>(keys));
  }

  override set(key: string, value: string, ttl?: number): Promise<void> {
    return this.#bound(super.set(key, value, ttl));
  }

  override setMany(entries: KeyvEntry[]): Promise<void> {
    return this.#bound(super.setMany(entries));
  }

  override has(key: string): Promise<boolean> {
    return this.#bound(super.has(key));
  }

  override hasMany(keys: string[]): Promise<boolean[]> {
    return this.#bound(super.hasMany(keys));
  }

  override delete(key: string): Promise<boolean> {
    return this.#bound(super.delete(key));
  }

  override deleteMany(keys: string[]): Promise<boolean> {
    return this.#bound(super.deleteMany(keys));
  }

  #bound<T>(work: Promise<T>): Promise<T> {
    return withDeadline(work, this.#timeout, 'a record call');
  }
}
