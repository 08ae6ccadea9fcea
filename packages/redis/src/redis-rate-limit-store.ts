import type { ConsumeResult, RateLimitCounter, RateLimitStore } from '@mcp-fleet/core';
import { checkTimeout, DEFAULT_KEY_PREFIX, DEFAULT_TIMEOUT_MS, LuaScript, type RedisCommandClient, withDeadline } from './commands.js';

/**
 * One decision for all the counters of a request (or of a batch: each counter with its own cost). The script runs
 * without any other command in between, in whichever process sent it, so N processes sharing the counters admit
 * exactly the limit.
 *
 * KEYS: the counters. ARGV: expiresAt (Unix ms), then each counter's limit and cost.
 * Returns {1 or 0 (allowed), each count after the decision}.
 */
const CONSUME = new LuaScript(`
local expiresAt = ARGV[1]
local counts, fresh, costs, allowed = {}, {}, {}, 1
for i = 1, #KEYS do
  local current = redis.call('GET', KEYS[i])
  fresh[i] = not current
  counts[i] = tonumber(current or '0')
  costs[i] = tonumber(ARGV[2 * i + 1])
  if counts[i] + costs[i] > tonumber(ARGV[2 * i]) then allowed = 0 end
end
if allowed == 1 then
  for i = 1, #KEYS do
    if costs[i] > 0 then
      counts[i] = redis.call('INCRBY', KEYS[i], costs[i])
      if fresh[i] then redis.call('PEXPIREAT', KEYS[i], expiresAt) end
    end
  end
end
table.insert(counts, 1, allowed)
return counts
`);

export interface RedisRateLimitStoreOptions {
  /** A connected node-redis client. The store never closes it: whoever opened it does. */
  client: RedisCommandClient;
  /** Every counter's key is this, then `ratelimit:`, then the counter's own key. @default 'mcp-fleet:' */
  keyPrefix?: string;
  /** How long a call waits for Redis's answer before it rejects, in ms. @default 2000 */
  commandTimeout?: number;
}

/** A limit in Redis's number syntax; `+inf` for a limit that never binds. */
function limitArgument(limit: number): string {
  if (Number.isNaN(limit)) throw new TypeError('a rate limit must be a number, not NaN');
  return limit === Infinity ? '+inf' : limit === -Infinity ? '-inf' : String(limit);
}

/**
 * Rate-limit counters in Redis: a string per counter at `{keyPrefix}ratelimit:{key}`, counted with INCRBY and
 * expiring by PEXPIREAT at the end of its window, set when the counter is created. Expiry follows the Redis
 * server's clock, so the hosts' clocks and Redis's should agree (NTP) for windows to end on time.
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly client: RedisCommandClient;
  private readonly keyPrefix: string;
  private readonly commandTimeout: number;
  private closed = false;

  constructor(options: RedisRateLimitStoreOptions) {
    this.client = options.client;
    this.keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    this.commandTimeout = checkTimeout('commandTimeout', options.commandTimeout ?? DEFAULT_TIMEOUT_MS);
  }

  async consume(counters: readonly RateLimitCounter[], expiresAt: number, cost = 1): Promise<ConsumeResult> {
    if (this.closed) throw new Error('RedisRateLimitStore is closed');
    // INCRBY takes integers only; checked here so the script never fails halfway.
    for (const each of [cost, ...counters.map((counter) => counter.cost ?? cost)]) {
      if (!Number.isSafeInteger(each) || each < 0) throw new TypeError('cost must be a non-negative integer');
    }
    if (!Number.isFinite(expiresAt)) throw new TypeError('expiresAt must be a finite time in Unix ms');
    if (counters.length === 0) return { allowed: true, counts: [] };
    const keys = counters.map(({ key }) => `${this.keyPrefix}ratelimit:${key}`);
    const args = [String(Math.ceil(expiresAt))];
    for (const counter of counters) args.push(limitArgument(counter.limit), String(counter.cost ?? cost));
    const [allowed, ...counts] = (await withDeadline(CONSUME.run(this.client, keys, args), this.commandTimeout, 'a rate-limit decision')) as number[];
    return { allowed: allowed === 1, counts };
  }

  /** Stops this store's calls; the client stays open for its owner to close. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
  }
}
