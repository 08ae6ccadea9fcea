import { createHash } from 'node:crypto';

/**
 * What the stores need of a client: node-redis's `sendCommand`. A `createClient()` client fits; so does anything
 * that speaks the same way (a test double, a client with modules).
 */
export interface RedisCommandClient {
  sendCommand(args: string[]): Promise<unknown>;
}

/** The prefix every mcp-fleet key starts with unless the embedder picks another. */
export const DEFAULT_KEY_PREFIX = 'mcp-fleet:';

/** How long a call waits for an answer, and how long connecting may take, unless the embedder says otherwise. */
export const DEFAULT_TIMEOUT_MS = 2000;

/** Raised when Redis does not answer in time. The command may still run on the server; only the wait ends. */
export class RedisTimeoutError extends Error {
  constructor(what: string, ms: number) {
    super(`Redis did not answer ${what} within ${ms} ms`);
    this.name = 'RedisTimeoutError';
  }
}

/**
 * Bounds a call that is already on the wire. node-redis times commands out only while they wait to be written;
 * once sent, a reply from a server that stopped answering (a paused process, a silent network) is awaited forever.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisTimeoutError(what, ms)), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

/** A Lua script run by its SHA1 (EVALSHA), sent whole (EVAL) only when the server does not know it yet. */
export class LuaScript {
  readonly sha: string;

  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(client: RedisCommandClient, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    const tail = [String(keys.length), ...keys, ...args];
    try {
      return await client.sendCommand(['EVALSHA', this.sha, ...tail]);
    } catch (error) {
      // After a restart or SCRIPT FLUSH the cache is empty; EVAL loads the script into it again.
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return client.sendCommand(['EVAL', this.source, ...tail]);
    }
  }
}

/** Checks a timeout option at construction, where a misconfiguration may throw. */
export function checkTimeout(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number of milliseconds`);
  return value;
}
