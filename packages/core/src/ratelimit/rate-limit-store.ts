/**
 * The atomic counter behind rate limits. One operation decides one request against all its counters at once,
 * so that a request is admitted only if every counter has room and a refused request consumes none of them:
 * nothing else can keep that rule exact when several processes share the counters.
 *
 * Implementations: `MemoryRateLimitStore` here, `RedisRateLimitStore` in `@mcp-fleet/redis` (one Lua script per
 * decision). Each must pass `rateLimitStoreContract` (`@mcp-fleet/core/testing`).
 */
export interface RateLimitStore {
  /**
   * If every counter's current count plus its cost is within its `limit`, adds its cost to each; otherwise changes
   * nothing. A counter's cost is its own `cost` when it has one, else the call's `cost` (a batch of MCP messages
   * costs N on the tier and the number of its calls on `tools.call`, decided in this one step). Counters are created
   * at 0 and expire at `expiresAt` (Unix ms), the end of their window. A cost of 0 asks without consuming.
   *
   * A store in this process answers the decision itself (the memory store does: the request then goes on without
   * waiting for a promise); a store elsewhere answers a promise. Either way it is the one decision, taken once.
   */
  consume(counters: readonly RateLimitCounter[], expiresAt: number, cost?: number): ConsumeResult | Promise<ConsumeResult>;
  /** Releases connections. Idempotent. */
  close?(): Promise<void>;
}

export interface RateLimitCounter {
  key: string;
  limit: number;
  /** What this decision adds to this counter, a non-negative integer; absent: the `cost` of the `consume` call. */
  cost?: number;
}

export interface ConsumeResult {
  allowed: boolean;
  /** Each counter's count after the decision, in the order given. */
  counts: number[];
}
