import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import type { Principal, Tier } from '../auth/scopes.js';
import { FleetError, storageUnavailable } from '../errors/fleet-error.js';
import { MemoryRateLimitStore } from './memory-rate-limit-store.js';
import type { RateLimitCounter, RateLimitStore } from './rate-limit-store.js';

/** Requests per minute of each operation (seed §8.1, CONTRACT "Rate limits"); other operations: the tier limit alone. */
export const DEFAULT_OPERATION_LIMITS: Readonly<Record<string, number>> = {
  'servers.list': 100,
  'servers.create': 10,
  'servers.get': 100,
  'servers.update': 30,
  'servers.delete': 10,
  'servers.health': 60,
  'tool_calls.list': 100,
};

/** Requests per minute of each tier (seed §8.2). Enterprise is "custom": set it per account with `accounts`. */
export const DEFAULT_TIER_LIMITS: Readonly<Record<Tier, number>> = { free: 60, pro: 600, enterprise: 6000 };

export const DEFAULT_UNAUTHENTICATED_LIMIT = 20;

const WINDOW_MS = 60_000;

export interface RateLimitOptions {
  /** Where counters live; share one (Redis) between processes to make limits exact across them. @default MemoryRateLimitStore */
  store?: RateLimitStore;
  /** Per-minute limit of each operation by name (`servers.create`…); `null` removes one. Merged over the defaults. */
  operations?: Record<string, number | null>;
  /** Per-minute limit of each tier. Merged over the defaults. @default { free: 60, pro: 600, enterprise: 6000 } */
  tiers?: Partial<Record<Tier, number>>;
  /** Per-minute tier limit of particular accounts (enterprise contracts), instead of their tier's. @default {} */
  accounts?: Record<string, number>;
  /** 401 answers allowed per client address per minute, so keys cannot be guessed at speed. @default 20 */
  unauthenticated?: number;
  /**
   * When the store cannot be reached: `false` answers 503 STORAGE_UNAVAILABLE (fail closed); `true` admits the
   * request without rate-limit headers (fail open). @default false
   */
  failOpen?: boolean;
}

export type RateLimitScope = 'operation' | 'tier' | 'address';

/** The limit that binds a request: the one with the fewest remaining (ties: the smaller limit). */
export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** End of the window, Unix seconds. */
  reset: number;
  scope: RateLimitScope;
}

interface Counted {
  counter: RateLimitCounter;
  scope: RateLimitScope;
}

function positiveLimit(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new TypeError(`mcp-fleet: rate limit ${name} must be a positive integer`);
  return value;
}

/** Fixed one-minute windows aligned to the minute, counted per account (and per address for 401s). */
export class RateLimiter {
  private readonly store: RateLimitStore;
  private readonly operations: Map<string, number>;
  private readonly tiers: Record<Tier, number>;
  private readonly accounts: Map<string, number>;
  private readonly unauthenticated: number;
  private readonly failOpen: boolean;
  private readonly ownsStore: boolean;

  constructor(
    options: RateLimitOptions,
    private readonly now: () => number,
  ) {
    this.store = options.store ?? new MemoryRateLimitStore({ now });
    this.ownsStore = options.store === undefined;
    this.operations = new Map();
    for (const [name, limit] of Object.entries({ ...DEFAULT_OPERATION_LIMITS, ...options.operations })) {
      if (limit !== null && limit !== undefined) this.operations.set(name, positiveLimit(`operations["${name}"]`, limit));
    }
    this.tiers = { ...DEFAULT_TIER_LIMITS };
    for (const [tier, limit] of Object.entries(options.tiers ?? {})) {
      if (limit !== undefined) this.tiers[tier as Tier] = positiveLimit(`tiers.${tier}`, limit);
    }
    this.accounts = new Map(Object.entries(options.accounts ?? {}).map(([account, limit]) => [account, positiveLimit(`accounts["${account}"]`, limit)]));
    this.unauthenticated = positiveLimit('unauthenticated', options.unauthenticated ?? DEFAULT_UNAUTHENTICATED_LIMIT);
    this.failOpen = options.failOpen ?? false;
  }

  /**
   * Counts one request of `principal` against its operation's limit (when it has one) and its tier's, admitting
   * it only if both have room. `null`: the store failed and the limiter fails open.
   */
  admit(principal: Principal, operation: string | undefined): ResultAsync<RateLimitDecision | null, FleetError> {
    const window = this.window();
    const account = encodeURIComponent(principal.account);
    const counted: Counted[] = [];
    const operationLimit = operation === undefined ? undefined : this.operations.get(operation);
    if (operationLimit !== undefined) {
      counted.push({ scope: 'operation', counter: { key: `rl:${account}:op:${operation}:${window.index}`, limit: operationLimit } });
    }
    const tierLimit = this.accounts.get(principal.account) ?? this.tiers[principal.tier];
    counted.push({ scope: 'tier', counter: { key: `rl:${account}:tier:${window.index}`, limit: tierLimit } });
    return this.decide(counted, window, 1);
  }

  /** Whether a client address may still try to authenticate (its 401 budget is not spent); consumes nothing. */
  checkAddress(address: string | undefined): ResultAsync<RateLimitDecision | null, FleetError> {
    return this.decide([this.addressCounter(address)], this.window(), 0).map((decision) =>
      decision === null ? null : { ...decision, allowed: decision.remaining > 0 },
    );
  }

  /** Counts one 401 answer against the client address. */
  countFailure(address: string | undefined): ResultAsync<RateLimitDecision | null, FleetError> {
    return this.decide([this.addressCounter(address)], this.window(), 1);
  }

  /** The response headers of a decision. */
  static headers(decision: RateLimitDecision | null, nowMs: number): Record<string, string> {
    if (decision === null) return {};
    const headers: Record<string, string> = {
      'x-ratelimit-limit': String(decision.limit),
      'x-ratelimit-remaining': String(decision.remaining),
      'x-ratelimit-reset': String(decision.reset),
    };
    if (!decision.allowed) headers['retry-after'] = String(Math.max(1, decision.reset - Math.floor(nowMs / 1000)));
    return headers;
  }

  /** The 429 of a refused decision. */
  static refusal(decision: RateLimitDecision): FleetError {
    const what = decision.scope === 'operation' ? 'this operation' : decision.scope === 'tier' ? 'this account' : 'this client address';
    return new FleetError('RATE_LIMITED', {
      message: `Rate limit of ${decision.limit} requests a minute for ${what} exceeded; retry after ${new Date(decision.reset * 1000).toISOString()}.`,
      details: { limit: decision.limit, reset: decision.reset, scope: decision.scope },
    });
  }

  /** Closes the store only if the limiter made it: a store passed in is its owner's to close. */
  async close(): Promise<void> {
    if (this.ownsStore) await this.store.close?.();
  }

  private addressCounter(address: string | undefined): Counted {
    const window = this.window();
    return { scope: 'address', counter: { key: `rl:addr:${encodeURIComponent(address ?? 'unknown')}:${window.index}`, limit: this.unauthenticated } };
  }

  private window() {
    const index = Math.floor(this.now() / WINDOW_MS);
    return { index, end: (index + 1) * WINDOW_MS };
  }

  private decide(counted: Counted[], window: { end: number }, cost: number): ResultAsync<RateLimitDecision | null, FleetError> {
    const counters = counted.map((c) => c.counter);
    return ResultAsync.fromPromise(this.store.consume(counters, window.end, cost), storageUnavailable)
      .map(({ allowed, counts }) => {
        let binding: RateLimitDecision | undefined;
        counted.forEach(({ counter, scope }, i) => {
          const remaining = Math.max(0, counter.limit - (counts[i] ?? 0));
          if (binding === undefined || remaining < binding.remaining || (remaining === binding.remaining && counter.limit < binding.limit)) {
            binding = { allowed, limit: counter.limit, remaining, reset: window.end / 1000, scope };
          }
        });
        return binding as RateLimitDecision;
      })
      .orElse((error) => (this.failOpen ? okAsync(null) : errAsync(error)));
  }
}
