import { ok } from 'neverthrow';
import type { Principal, Tier } from '../auth/scopes.js';
import { FleetError } from '../errors/fleet-error.js';
import { MemoryRateLimitStore } from './memory-rate-limit-store.js';
import type { ConsumeResult, RateLimitCounter, RateLimitStore } from './rate-limit-store.js';
import { checkOption, positiveInteger } from '../util/options.js';
import { chainMap, otherwise, portCall, type Ran } from '../util/result.js';
import { rateLimitChannel } from '../trace/channels.js';

/** Requests per minute of each tier (docs/rate-limits.md). Enterprise is "custom": set it per account with `accounts`. */
export const DEFAULT_TIER_LIMITS: Readonly<Record<Tier, number>> = { free: 60, pro: 600, enterprise: 6000 };

export const DEFAULT_UNAUTHENTICATED_LIMIT = 20;

const WINDOW_MS = 60_000;

export interface RateLimitOptions {
  /** Where counters live; share one (Redis) between processes to make limits exact across them. @default MemoryRateLimitStore */
  store?: RateLimitStore;
  /**
   * Per-minute limit of each operation by name (`servers.create`…); `null` removes one. Merged over the defaults,
   * which each route declares (docs/rate-limits.md lists them).
   */
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

/**
 * Several requests decided together, admitted whole or refused whole (a batch of MCP messages): `requests` count
 * against the tier, `ofOperation` of them against the operation's limit.
 */
export interface Batch {
  requests: number;
  ofOperation: number;
}

/** The limit that binds a request: the one with the fewest remaining (ties: the smaller limit). */
export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** End of the window, Unix seconds. */
  reset: number;
  scope: RateLimitScope;
}

interface Window {
  index: number;
  /** Unix ms. */
  end: number;
}

/** The counter keys of one account in the current window: `rl:{account}:tier:{window}` and `rl:{account}:op:{operation}:{window}`. */
interface AccountKeys {
  tier: string;
  /** By operation; kept only while keys are cached. */
  operations: Map<string, string> | undefined;
  /** The counters of a request of one operation (`undefined`: the tier alone), kept only while keys are cached. */
  decided: Map<string | undefined, Counters> | undefined;
}

/** What one decision counts: its counters, the scope of each, and the tier their tier limit is that of. */
interface Counters {
  tier: Tier;
  counters: readonly RateLimitCounter[];
  scopes: readonly RateLimitScope[];
}

const positiveLimit = (name: string, value: number) => checkOption(`rateLimit.${name}`, value, positiveInteger);

/** Fixed one-minute windows aligned to the minute, counted per account (and per address for 401s). */
export class RateLimiter {
  private readonly store: RateLimitStore;
  private readonly operations: Map<string, number>;
  private readonly tiers: Record<Tier, number>;
  private readonly accounts: Map<string, number>;
  private readonly unauthenticated: number;
  private readonly failOpen: boolean;
  private readonly ownsStore: boolean;
  /**
   * Whether the store keeps its counters in this process (`MemoryRateLimitStore`): there is then no round trip to save
   * by asking for a key's verification and its admission together (the handler), and counter keys are kept.
   */
  readonly decidesInProcess: boolean;
  /**
   * With a store in this process (in memory): the counter keys of the current window, by account and by address. Building a key
   * string and hashing it anew for every decision costs more than the count itself; the store meets the same string
   * objects again, and holds them anyway. Cleared when the window changes, so they follow the live accounts as the
   * store's counters do. Other stores keep their counters elsewhere: their keys are built for each decision, so
   * that this process holds nothing per account for them.
   */
  private keysWindow = Number.NaN;
  /** The window of the last decision (`window()`). */
  private current: Window = { index: Number.NaN, end: Number.NaN };
  private readonly accountKeys = new Map<string, AccountKeys>();
  private readonly addressKeys = new Map<string, string>();

  /** `operationLimits`: the defaults of each operation, as the routes declare them; `options.operations` overrides. */
  constructor(
    options: RateLimitOptions,
    private readonly now: () => number,
    operationLimits: Readonly<Record<string, number>> = {},
  ) {
    this.store = options.store ?? new MemoryRateLimitStore({ now });
    this.ownsStore = options.store === undefined;
    this.decidesInProcess = this.store instanceof MemoryRateLimitStore;
    this.operations = new Map();
    for (const [name, limit] of Object.entries({ ...operationLimits, ...options.operations })) {
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
   * it only if both have room. `null`: the store failed and the limiter fails open. Decided at once (a `Result`)
   * when the store answers at once (in memory), else a `ResultAsync` of the store's answer.
   */
  admit(principal: Principal, operation: string | undefined, batch?: Batch): Decided {
    const window = this.window();
    const keys = this.keysOf(principal.account, window);
    // A single request's counters are the same objects for every request of the account, operation and tier in the
    // window: kept with the keys (in memory), so a decision builds none. A batch's carry its own costs.
    let counted = batch === undefined ? keys.decided?.get(operation) : undefined;
    if (counted === undefined || counted.tier !== principal.tier) {
      counted = this.countersOf(keys, principal, operation, batch, window);
      if (batch === undefined && this.decidesInProcess) (keys.decided ??= new Map()).set(operation, counted);
    }
    return this.decide(counted.counters, counted.scopes, window, 1);
  }

  /** Counts one failed key against the client address: refused (429) once the address's budget is spent. */
  countFailure(address: string | undefined): Decided {
    const window = this.window();
    return this.decide([this.addressCounter(address, window)], ADDRESS, window, 1);
  }

  /**
   * Whether the client address has failures left in its budget, asked without spending any (a cost of 0): what a
   * failed credential would cost must not be paid to a third party (an identity provider's introspection endpoint)
   * once the address may fail no more. `null`: the store failed and the limiter fails open.
   */
  failureBudget(address: string | undefined): Decided {
    const window = this.window();
    return this.decide([this.addressCounter(address, window)], ADDRESS, window, 0);
  }

  /**
   * The response headers of a decision. `now`: the time (Unix ms), or the clock, read only for a refusal's
   * `Retry-After` (an admitted request's headers need no clock).
   */
  static headers(decision: RateLimitDecision | null, now: number | (() => number)): Record<string, string> {
    if (decision === null) return {};
    const headers: Record<string, string> = {
      'x-ratelimit-limit': String(decision.limit),
      'x-ratelimit-remaining': String(decision.remaining),
      'x-ratelimit-reset': String(decision.reset),
    };
    if (!decision.allowed) headers['retry-after'] = String(Math.max(1, decision.reset - Math.floor((typeof now === 'number' ? now : now()) / 1000)));
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

  private addressCounter(address: string | undefined, window: Window): RateLimitCounter {
    const name = address ?? 'unknown';
    let key = this.cacheKeys(window) ? this.addressKeys.get(name) : undefined;
    if (key === undefined) {
      key = `rl:addr:${encodeURIComponent(name)}:${window.index}`;
      if (this.decidesInProcess) this.addressKeys.set(name, key);
    }
    return { key, limit: this.unauthenticated };
  }

  private keysOf(account: string, window: Window): AccountKeys {
    let keys = this.cacheKeys(window) ? this.accountKeys.get(account) : undefined;
    if (keys === undefined) {
      keys = { tier: `rl:${encodeURIComponent(account)}:tier:${window.index}`, operations: undefined, decided: undefined };
      if (this.decidesInProcess) this.accountKeys.set(account, keys);
    }
    return keys;
  }

  /**
   * The counters one request (or `batch`) of `principal` counts on: its operation's limit when it has one, and its
   * tier's, always last: a store that queues waiting decisions by their last counter (PostgreSQL's) queues them by account.
   */
  private countersOf(keys: AccountKeys, principal: Principal, operation: string | undefined, batch: Batch | undefined, window: Window): Counters {
    const operationLimit = operation === undefined || batch?.ofOperation === 0 ? undefined : this.operations.get(operation);
    const tierLimit = (this.accounts.size === 0 ? undefined : this.accounts.get(principal.account)) ?? this.tiers[principal.tier];
    const tier: RateLimitCounter = batch === undefined ? { key: keys.tier, limit: tierLimit } : { key: keys.tier, limit: tierLimit, cost: batch.requests };
    if (operationLimit === undefined) return { tier: principal.tier, counters: [tier], scopes: TIER_ONLY };
    const key = this.operationKey(keys, principal.account, operation as string, window);
    const counter: RateLimitCounter = batch === undefined ? { key, limit: operationLimit } : { key, limit: operationLimit, cost: batch.ofOperation };
    return { tier: principal.tier, counters: [counter, tier], scopes: OPERATION_AND_TIER };
  }

  private operationKey(keys: AccountKeys, account: string, operation: string, window: Window): string {
    let key = keys.operations?.get(operation);
    if (key === undefined) {
      key = `rl:${encodeURIComponent(account)}:op:${operation}:${window.index}`;
      if (this.decidesInProcess) (keys.operations ??= new Map()).set(operation, key);
    }
    return key;
  }

  /** Whether keys are cached (the store is in memory); forgets the keys of other windows. */
  private cacheKeys(window: Window): boolean {
    if (!this.decidesInProcess) return false;
    if (window.index !== this.keysWindow) {
      this.accountKeys.clear();
      this.addressKeys.clear();
      this.keysWindow = window.index;
    }
    return true;
  }

  /** The window of the clock's time: the same object for every decision within it. */
  private window(): Window {
    const index = Math.floor(this.now() / WINDOW_MS);
    if (index !== this.current.index) this.current = { index, end: (index + 1) * WINDOW_MS };
    return this.current;
  }

  /**
   * One atomic consume of `counters`, and the binding limit of its outcome: at once when the store answers at once,
   * else when its promise settles. A store that throws or rejects is unavailable: 503, or admitted without headers
   * when the limiter fails open.
   */
  private decide(counters: readonly RateLimitCounter[], scopes: readonly RateLimitScope[], window: Window, cost: number): Decided {
    const consumed = portCall(() => this.store.consume(counters, window.end, cost), 'ratelimit', 'consume');
    const decided = chainMap(consumed, (result): RateLimitDecision | null => binding(counters, scopes, window, result, cost));
    return this.failOpen ? otherwise(decided, () => ok(null)) : decided;
  }
}

/** A limiter's decision: a `Result` when the store answered at once, a `ResultAsync` when it answers later. */
export type Decided = Ran<RateLimitDecision | null, FleetError>;

const TIER_ONLY: readonly RateLimitScope[] = ['tier'];
const OPERATION_AND_TIER: readonly RateLimitScope[] = ['operation', 'tier'];
const ADDRESS: readonly RateLimitScope[] = ['address'];

/**
 * The limit that binds: the one with the fewest remaining (ties: the smaller limit); of a refusal, among the counters
 * that had no room for their cost (a batch may be refused by a limit that still has some room, just not enough).
 */
function binding(
  counters: readonly RateLimitCounter[],
  scopes: readonly RateLimitScope[],
  window: Window,
  { allowed, counts }: ConsumeResult,
  cost: number,
): RateLimitDecision {
  let best = -1;
  let bestRemaining = 0;
  let bestBlocked = false;
  for (let i = 0; i < counters.length; i++) {
    const counter = counters[i] as RateLimitCounter;
    const remaining = Math.max(0, counter.limit - (counts[i] ?? 0));
    const blocked = !allowed && remaining < (counter.cost ?? cost);
    if (bestBlocked && !blocked) continue;
    if (
      best < 0 ||
      (blocked && !bestBlocked) ||
      remaining < bestRemaining ||
      (remaining === bestRemaining && counter.limit < (counters[best] as RateLimitCounter).limit)
    ) {
      best = i;
      bestRemaining = remaining;
      bestBlocked = blocked;
    }
  }
  const decision: RateLimitDecision = {
    allowed,
    limit: (counters[best] as RateLimitCounter).limit,
    remaining: bestRemaining,
    reset: window.end / 1000,
    scope: scopes[best] as RateLimitScope,
  };
  if (rateLimitChannel.hasSubscribers) rateLimitChannel.publish({ ...decision, cost });
  return decision;
}
