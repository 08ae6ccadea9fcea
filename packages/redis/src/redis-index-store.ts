import type { Claim, CommitResult, IndexStore, IndexTransaction, RangeOptions } from '@mcp-fleet/core';
import { transactionParts } from '@mcp-fleet/core';
import { checkTimeout, DEFAULT_KEY_PREFIX, DEFAULT_TIMEOUT_MS, LuaScript, type RedisCommandClient, withDeadline } from './commands.js';

/**
 * One commit, all-or-nothing: Redis runs a script without interleaving any other command, and the script checks
 * every claim before it writes anything, so a conflict leaves no trace.
 *
 * KEYS: the claim keys, then the released claim keys, then the sets to remove from, then the sets to add to, then
 *       the limited sets.
 * ARGV: since, the five counts, then per claim owner / has-replacing ('1' or '0') / replacing,
 *       per release owner, per removal member, per addition score / member, per limit its max.
 * Returns {} on success, {position of the conflicting claim (1-based), its owner, its since}, or {0, position of the
 * full limit (1-based)}.
 */
const COMMIT = new LuaScript(`
local since = ARGV[1]
local claims, releases, removals, additions, limits = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local arg = 7
for i = 1, claims do
  local owner = ARGV[arg]
  local replacing = false
  if ARGV[arg + 1] == '1' then replacing = ARGV[arg + 2] end
  local held = redis.call('HMGET', KEYS[i], 'owner', 'since')
  if held[1] and held[1] ~= owner and held[1] ~= replacing then
    return { i, held[1], held[2] or '0' }
  end
  arg = arg + 3
end
local limitKey = claims + releases + removals + additions
local limitArg = #ARGV - limits
for j = 1, limits do
  if redis.call('ZCARD', KEYS[limitKey + j]) >= tonumber(ARGV[limitArg + j]) then
    return { 0, j }
  end
end
local key = claims
for i = 1, releases do
  if redis.call('HGET', KEYS[key + i], 'owner') == ARGV[arg] then redis.call('DEL', KEYS[key + i]) end
  arg = arg + 1
end
local claimArg = 7
for i = 1, claims do
  if redis.call('HGET', KEYS[i], 'owner') ~= ARGV[claimArg] then
    redis.call('HSET', KEYS[i], 'owner', ARGV[claimArg], 'since', since)
  end
  claimArg = claimArg + 3
end
key = key + releases
for i = 1, removals do
  redis.call('ZREM', KEYS[key + i], ARGV[arg])
  arg = arg + 1
end
key = key + removals
for i = 1, additions do
  redis.call('ZADD', KEYS[key + i], ARGV[arg], ARGV[arg + 1])
  arg = arg + 2
end
return {}
`);

export interface RedisIndexStoreOptions {
  /** A connected node-redis client. The store never closes it: whoever opened it does. */
  client: RedisCommandClient;
  /** Every key the store writes starts with this, then `index:claim:` or `index:set:`. @default 'mcp-fleet:' */
  keyPrefix?: string;
  /** Clock for the `since` of the claims taken (the caller's, not the Redis server's). @default Date.now */
  now?: () => number;
  /** How long a call waits for Redis's answer before it rejects, in ms. @default 2000 */
  commandTimeout?: number;
}

/** Redis's score syntax: `inf`/`-inf` rather than JavaScript's `Infinity`. */
function scoreArgument(score: number): string {
  if (Number.isNaN(score)) throw new TypeError('an index score must be a number, not NaN');
  if (score === Infinity) return '+inf';
  if (score === -Infinity) return '-inf';
  return String(score);
}

/** A limit as the script compares it: a count is below `max` exactly when it is below `ceil(max)`. */
function limitArgument(max: number): string {
  if (Number.isNaN(max)) throw new TypeError('a limit must be a number, not NaN');
  return String(Math.max(0, Math.ceil(max)));
}

/** A Redis index position: an integer no larger than Redis accepts and no longer than `String()` keeps exact. */
function position(value: number): number {
  return Math.min(Math.max(0, Math.floor(value)), Number.MAX_SAFE_INTEGER);
}

/**
 * The IndexStore in Redis: a claim is a hash (`owner`, `since`) at `{keyPrefix}index:claim:{key}`, an ordered set a
 * sorted set at `{keyPrefix}index:set:{set}`. Redis orders equal scores by member, byte by byte, and `REV` reverses
 * both, which is the port's order in both directions. Every key of a commit is passed in KEYS.
 */
export class RedisIndexStore implements IndexStore {
  private readonly client: RedisCommandClient;
  private readonly keyPrefix: string;
  private readonly now: () => number;
  private readonly commandTimeout: number;
  private closed = false;

  constructor(options: RedisIndexStoreOptions) {
    this.client = options.client;
    this.keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    this.now = options.now ?? Date.now;
    this.commandTimeout = checkTimeout('commandTimeout', options.commandTimeout ?? DEFAULT_TIMEOUT_MS);
  }

  async commit(tx: IndexTransaction): Promise<CommitResult> {
    // A limit of Infinity is none (`transactionParts` leaves it out).
    const { claims, releases, remove: removals, add: additions, limits, empty } = transactionParts(tx);
    if (empty) return { ok: true };
    // Checked before the script runs: a score Redis refuses would fail the script halfway, after some writes.
    const scores = additions.map(({ score }) => scoreArgument(score));
    const keys = [
      ...claims.map(({ key }) => this.claimKey(key)),
      ...releases.map(({ key }) => this.claimKey(key)),
      ...removals.map(({ set }) => this.setKey(set)),
      ...additions.map(({ set }) => this.setKey(set)),
      ...limits.map(({ set }) => this.setKey(set)),
    ];
    const args = [
      String(this.now()),
      String(claims.length),
      String(releases.length),
      String(removals.length),
      String(additions.length),
      String(limits.length),
      ...claims.flatMap(({ owner, replacing }) => [owner, replacing === undefined ? '0' : '1', replacing ?? '']),
      ...releases.map(({ owner }) => owner),
      ...removals.map(({ member }) => member),
      ...additions.flatMap(({ member }, i) => [scores[i] as string, member]),
      ...limits.map(({ max }) => limitArgument(max)),
    ];
    const reply = (await this.call('a commit', () => COMMIT.run(this.client, keys, args))) as unknown[];
    if (reply.length === 0) return { ok: true };
    if (reply[0] === 0) {
      const limit = limits[(reply[1] as number) - 1];
      if (limit === undefined) throw new Error('the commit script named a limit that was not in the transaction');
      return { ok: false, full: { set: limit.set, max: limit.max } };
    }
    const [at, owner, since] = reply as [number, string, string];
    const claim = claims[at - 1];
    if (claim === undefined) throw new Error('the commit script named a claim that was not in the transaction');
    return { ok: false, conflict: { key: claim.key, owner, since: Number(since) } };
  }

  async claimOf(key: string): Promise<Claim | undefined> {
    const [owner, since] = (await this.call('a claim read', () =>
      this.client.sendCommand(['HMGET', this.claimKey(key), 'owner', 'since']),
    )) as [string | null, string | null];
    return owner === null ? undefined : { owner, since: Number(since) };
  }

  async range(set: string, { offset, limit, order = 'asc' }: RangeOptions): Promise<string[]> {
    if (!(limit >= 1)) return [];
    const start = position(offset);
    const stop = position(start + limit - 1);
    const command = ['ZRANGE', this.setKey(set), String(start), String(stop)];
    if (order === 'desc') command.push('REV');
    return (await this.call('a range read', () => this.client.sendCommand(command))) as string[];
  }

  async count(set: string): Promise<number> {
    return (await this.call('a count', () => this.client.sendCommand(['ZCARD', this.setKey(set)]))) as number;
  }

  /** Stops this store's calls; the client stays open for its owner to close. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
  }

  private claimKey(key: string): string {
    return `${this.keyPrefix}index:claim:${key}`;
  }

  private setKey(set: string): string {
    return `${this.keyPrefix}index:set:${set}`;
  }

  private async call<T>(what: string, send: () => Promise<T>): Promise<T> {
    if (this.closed) throw new Error('RedisIndexStore is closed');
    return withDeadline(send(), this.commandTimeout, what);
  }
}
