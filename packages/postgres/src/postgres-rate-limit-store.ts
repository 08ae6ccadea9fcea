import type { ConsumeResult, RateLimitCounter, RateLimitStore } from '@mcp-fleet/core';
import type { Connection } from './connection.js';

const BIGINT_MAX = '9223372036854775807';

/** A count, limit or cost as bigint text; a limit of Infinity, or of more than PostgreSQL's largest bigint, is that largest bigint (never reached). */
function integer(value: number, name: string): string {
  if (!Number.isFinite(value) && value !== Infinity) throw new TypeError(`a rate-limit ${name} must be a finite number, got ${value}`);
  if (name === 'limit' && value >= 9223372036854775807) return BIGINT_MAX;
  return String(Math.max(0, Math.floor(value)));
}

/**
 * Rate-limit counters and leases in the table `counters`: one decision is one call of `consume` (docs/postgres.md),
 * which locks the request's counters in one fixed order, checks them all and adds only if every one has room. N
 * processes on one database therefore admit exactly the limit. A window ends at its `expiresAt` on the database's
 * clock. Any RateLimitStore is a LeaseStore: a lease is a counter of limit 1.
 */
export class PostgresRateLimitStore implements RateLimitStore {
  constructor(private readonly connection: Connection) {}

  async consume(counters: readonly RateLimitCounter[], expiresAt: number, cost = 1): Promise<ConsumeResult> {
    if (counters.length === 0) return { allowed: true, counts: [] };
    // Sent with a record read asked for in the same turn, if any (`Connection.decide`): the handler's key read.
    const answer = await this.connection.decide([
      counters.map((c) => c.key),
      counters.map((c) => integer(c.limit, 'limit')),
      counters.map((c) => integer(c.cost ?? cost, 'cost')),
      integer(Math.ceil(expiresAt), 'expiresAt'),
    ]);
    const [allowed, ...counts] = answer.map(Number);
    return { allowed: allowed === 1, counts };
  }

  /** The pool belongs to the store that made it. Idempotent. */
  async close(): Promise<void> {}
}
