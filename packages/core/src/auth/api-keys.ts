import { hash as oneShotHash } from 'node:crypto';
import { err, errAsync, ok, okAsync, type Result, ResultAsync } from 'neverthrow';
import { z } from 'zod';
import { FleetError, invalidRequest } from '../errors/fleet-error.js';
import { EventBus } from '../events/bus.js';
import { ChangeWriter } from '../events/change-writer.js';
import { type IndexCalls, mergeTransactions } from '../storage/index-calls.js';
import { readPage } from '../storage/read-page.js';
import type { RecordStore } from '../storage/records.js';
import { isId, newId, randomToken } from '../util/ids.js';
import { type Page, type PageQuery, pagination, withPageDefaults } from '../util/pagination.js';
import { parse } from '../validation/parse.js';
import { grantedKey, keyRequestSchema } from './key-grants.js';
import { toKeyView } from './key-views.js';
import { ACCOUNT_PATTERN, type Principal, SCOPES, type Scope, TIERS, type Tier } from './scopes.js';
import { toolPatternsSchema } from './tool-patterns.js';
import { okWith, type Ran, chainMap, toAsync } from '../util/result.js';

/** An API key as listed: never its secret, which is stored only as a SHA-256 hash. */
export interface ApiKey {
  id: string;
  account: string;
  tier: Tier;
  /** `null`: every scope. */
  scopes: Scope[] | null;
  /** Tool allowlist: glob patterns (`*`) over namespaced tool names (`search__*`); `null`: every tool. */
  tools: string[] | null;
  /** Prompt allowlist: globs over `{prefix}__{prompt}`; `null`: the prompts of every server the key reaches (one of whose tools `tools` allows). */
  prompts: string[] | null;
  /** Resource allowlist: globs over `{prefix}__{uri}` (and `{prefix}__{uriTemplate}`); `null`: the resources of every server the key reaches. */
  resources: string[] | null;
  name: string | null;
  created_at: string;
  revoked_at: string | null;
  /** After this the key is refused; `null`: never. */
  expires_at: string | null;
  /** When a request last authenticated with the key, to the minute (written at most once a minute); `null`: never. */
  last_used_at: string | null;
}

export interface CreatedApiKey {
  key: ApiKey;
  /** `mcpf_` + 40 characters. Shown this once; only its hash is kept. */
  secret: string;
}

export interface CreateApiKeyInput {
  account: string;
  /** @default 'free' */
  tier?: Tier;
  /** Omit for a key with every scope. */
  scopes?: Scope[];
  /**
   * Only the tools whose namespaced name (`{prefix}__{tool}`) matches one of these globs (`*`: any run of characters)
   * exist for the key: 1 to 100 patterns of 1 to 200 printable characters, no spaces or `|`. @default null (every tool)
   */
  tools?: string[] | null;
  /**
   * Only the prompts whose namespaced name (`{prefix}__{prompt}`) matches one of these globs exist for the key (the
   * same shape as `tools`). @default null (the prompts of every server one of whose tools the key may call)
   */
  prompts?: string[] | null;
  /**
   * Only the resources whose `{prefix}__{uri}` (templates: `{prefix}__{uriTemplate}`) matches one of these globs exist
   * for the key (the same shape as `tools`). @default null (the resources of every server one of whose tools the key may call)
   */
  resources?: string[] | null;
  name?: string;
  /** When the key stops working (ISO 8601, in the future, at most 10 years ahead); kept in UTC. @default never */
  expires_at?: string;
}

/** Narrows `get` and `revoke` to one account: another account's key is then `NOT_FOUND`, exactly as a missing one. */
export interface KeyLookup {
  /** @default any account (the operator's view) */
  account?: string;
}

export interface RegisterApiKeyInput extends CreateApiKeyInput {
  /** A secret chosen by the operator (e.g. from `MCP_FLEET_API_KEYS`): at least 16 characters. */
  secret: string;
}

/**
 * What the hash of a secret points at: everything a request needs, in one read. A revoked key's entry stays, marked
 * revoked, so that its secret can never be registered again (from `MCP_FLEET_API_KEYS` at the next start, say).
 */
interface KeyHashEntry {
  id: string;
  account: string;
  tier: Tier;
  scopes: Scope[] | null;
  /** Absent in entries written before allowlists existed: every tool. */
  tools?: string[] | null;
  /** Absent in entries written before prompt and resource allowlists existed: by reach, as `null`. */
  prompts?: string[] | null;
  resources?: string[] | null;
  expires_at?: string | null;
  revoked?: true;
}

/** `last_used_at` is written at most this often per key, off the request path. */
const LAST_USED_EVERY_MS = 60_000;
/** The furthest a key's expiry may lie ahead: further is a typo, or a key that should not expire at all. */
const MAX_EXPIRY_MS = 10 * 366 * 86_400_000;
/** Body fields the service sets (`POST /keys`): named as read-only rather than unknown. */
const READ_ONLY = ['id', 'account', 'secret', 'created_at', 'last_used_at', 'revoked_at'];

const SECRET_PREFIX = 'mcpf_';
const KEY_RECORD = 'apikey:';
const keyRecord = (id: string) => `${KEY_RECORD}${id}`;
const usedRecord = (id: string) => `apikey-used:${id}`;
const hashRecord = (hash: string) => `apikey-hash:${hash}`;
/** The index claim that makes a secret one key's: taken in the commit that lists the key. */
const secretClaim = (hash: string) => `apikey-secret:${hash}`;
const accountSet = (account: string) => `apikeys:${encodeURIComponent(account)}`;
const ALL_KEYS_SET = 'apikeys';

const inputSchema = z.strictObject({
  account: z.string().refine((account) => ACCOUNT_PATTERN.test(account), 'must be 1–64 characters of letters, digits, "_", "." or "-", starting with a letter or digit'),
  tier: z.enum(TIERS).default('free'),
  scopes: z.array(z.enum(SCOPES)).min(1).optional(),
  tools: toolPatternsSchema.optional(),
  prompts: toolPatternsSchema.optional(),
  resources: toolPatternsSchema.optional(),
  name: z.string().min(1).max(100).optional(),
  expires_at: z.iso.datetime({ offset: true }).optional(),
});

const registerSchema = inputSchema.extend({
  secret: z
    .string()
    .min(16)
    .max(512)
    .refine((secret) => /^[\x21-\x7e]+$/.test(secret), 'must be printable ASCII without spaces'),
});

export function hashSecret(secret: string): string {
  // The one-shot form: no Hash object per request (a third of the time of createHash().update().digest()).
  return oneShotHash('sha256', secret, 'hex');
}

/** Issues, revokes, lists and checks the API keys of every account. */
export class ApiKeys {
  /** When this process last wrote each key's `last_used_at`. */
  private readonly lastUseWritten = new Map<string, number>();
  /** `last_used_at` writes under way, which `close` waits for. */
  private readonly writing = new Set<Promise<void>>();
  /**
   * The principal each secret (by hash) verified as last time in this process: a hint, never an answer. The handler
   * uses it to ask for the rate-limit decision in the same round trip as the verification; `verify` still reads the
   * key on every request, so a revocation by any process is seen on the next one.
   */
  private readonly recent = new Map<string, Principal>();

  constructor(
    private readonly records: RecordStore,
    private readonly index: IndexCalls,
    private readonly now: () => number,
    /** Sees a failed write of `last_used_at` (it never fails a request). */
    private readonly onBackgroundError: (error: FleetError) => void = () => {},
    /** Announces `key.created` and `key.revoked` (webhooks, `fleet.events`). @default told to no one */
    private readonly changes: ChangeWriter = new ChangeWriter(new EventBus(() => {}), undefined),
  ) {}

  /** A new key with a generated secret, returned once. */
  create(input: CreateApiKeyInput): ResultAsync<CreatedApiKey, FleetError> {
    const secret = SECRET_PREFIX + randomToken(40);
    return parse(inputSchema, input, { root: 'input' }).andThen((valid) => futureExpiry(valid, this.now())).asyncAndThen((valid) => this.store(valid, secret).andThen(okWith((key) => ({ key, secret }))));
  }

  /**
   * A key made by another (`POST /keys`): `request` as received (`{ tier?, scopes?, tools?, expires_at?, description? }`,
   * judged by `keyRequestSchema`), in `creator`'s account, never with more than `creator` holds (`grantedKey`: a 403
   * `FORBIDDEN` names the scope, tool pattern, tier or expiry it lacks). The route calls this; so can an embedder
   * that lets its own principals make keys.
   */
  createFor(creator: Principal, request: unknown): ResultAsync<CreatedApiKey, FleetError> {
    return parse(keyRequestSchema, request, { readOnly: READ_ONLY })
      .andThen((valid) => grantedKey(creator, valid))
      .asyncAndThen((granted) => this.create(granted));
  }

  /**
   * Registers a secret the operator chose. Idempotent: registering the same secret again keeps its key and
   * updates its tier, scopes, tools and expiry (another account: a new key, the old one revoked), so a server can
   * register its configured keys on every start. A secret whose key was revoked stays refused: the answer is that
   * revoked key (check `revoked_at`), and nothing changes.
   */
  register(input: RegisterApiKeyInput): ResultAsync<ApiKey, FleetError> {
    return parse(registerSchema, input, { root: 'input' }).andThen((valid) => futureExpiry(valid, this.now())).asyncAndThen(({ secret, ...valid }) =>
      toAsync(this.records.get<KeyHashEntry>(hashRecord(hashSecret(secret)))).andThen((entry) => {
        if (entry === undefined) return this.store(valid, secret);
        return toAsync(this.records.get<ApiKey>(keyRecord(entry.id))).andThen((existing) => {
          if (entry.revoked === true) return existing === undefined ? errAsync(keyNotFound(entry.id)) : okAsync(withDefaults(existing));
          if (existing === undefined) return this.store(valid, secret);
          const key: ApiKey = {
            ...withDefaults(existing),
            tier: valid.tier,
            scopes: valid.scopes ?? null,
            tools: valid.tools ?? null,
            prompts: valid.prompts ?? null,
            resources: valid.resources ?? null,
            name: valid.name ?? existing.name,
            expires_at: valid.expires_at ?? null,
          };
          if (key.account !== valid.account) return this.revoke(existing.id).andThen(() => this.store(valid, secret, existing.id));
          return toAsync(this.records.set(keyRecord(key.id), key))
            .andThen(() => this.records.set(hashRecord(hashSecret(secret)), this.hashEntry(key)))
            .andThen(okWith(() => key));
        });
      }),
    );
  }

  /**
   * Revokes a key at once and for good; its record stays listed with `revoked_at`, and its secret's entry stays as a
   * revoked mark, so that registering the secret again (a restart with it still configured) cannot bring it back.
   */
  revoke(id: string, lookup: KeyLookup = {}): ResultAsync<ApiKey, FleetError> {
    return this.get(id, lookup).andThen((key) => {
      if (key.revoked_at !== null) return okAsync(key);
      const revoked: ApiKey = { ...key, revoked_at: new Date(this.now()).toISOString() };
      const event = { account: key.account, type: 'key.revoked' as const, data: { key: toKeyView(revoked) }, at: revoked.revoked_at as string, check: { key: keyRecord(id), match: { revoked_at: revoked.revoked_at } } };
      // The record is marked first: if the hash entry cannot be marked, `verify` still refuses nothing it should
      // not, as the entry is marked next and `revoke` can be run again.
      return toAsync(
        this.changes.write(event, ({ publish }) =>
          toAsync(this.records.set(keyRecord(id), revoked))
            .andThen(() => this.records.get<string>(`apikey-hash-of:${id}`))
            .andThen((hash) => (hash === undefined ? okAsync(undefined) : this.records.set(hashRecord(hash), { ...this.hashEntry(key), revoked: true })))
            .andThen(() => (publish === undefined ? okAsync(undefined) : toAsync(this.index.commit(publish)).map(() => undefined)))
            .andThen(okWith(() => revoked)),
        ),
      );
    });
  }

  /** One key, revoked ones included; with `lookup.account`, only a key of that account. */
  get(id: string, lookup: KeyLookup = {}): ResultAsync<ApiKey, FleetError> {
    // An id of the wrong form is simply unknown: no lookup, the same 404.
    if (lookup.account !== undefined && !isId('apiKey', id)) return errAsync(keyNotFound(id));
    return ResultAsync.combine([toAsync(this.records.get<ApiKey>(keyRecord(id))), toAsync(this.records.get<string>(usedRecord(id)))]).andThen(([key, used]) =>
      key === undefined || (lookup.account !== undefined && key.account !== lookup.account) ? errAsync(keyNotFound(id)) : okAsync(withDefaults(key, used)),
    );
  }

  /**
   * Whether a key still works: `false` once it is revoked, past its `expires_at` or gone; `true` also when the storage
   * cannot say (what watches open streams must not cut every listener off during an outage).
   */
  async works(id: string): Promise<boolean> {
    const read = await toAsync(this.records.get<ApiKey>(keyRecord(id)));
    if (read.isErr()) return true;
    const key = read.value;
    return key !== undefined && key.revoked_at === null && (key.expires_at === null || key.expires_at === undefined || Date.parse(key.expires_at) > this.now());
  }

  /** The account's keys, oldest first, revoked ones included; `page` 1 and `limit` 50 unless given. */
  list(account: string, query: Partial<PageQuery> = {}): ResultAsync<Page<ApiKey>, FleetError> {
    const page = withPageDefaults(query);
    return toAsync(readPage<ApiKey>(this.index, this.records, accountSet(account), page, keyRecord, { keyPrefix: KEY_RECORD })).andThen(({ ids, found, total }) =>
      toAsync(this.records.getMany<string>(ids.map(usedRecord))).andThen(okWith((used) => {
        const data = found.flatMap((key, i) => (key === undefined || key.account !== account ? [] : [withDefaults(key, used[i])]));
        return { data, pagination: pagination(page, total - (found.length - data.length)) };
      })),
    );
  }

  /** How many keys exist in all accounts, revoked ones included. */
  count(): ResultAsync<number, FleetError> {
    return toAsync(this.index.count(ALL_KEYS_SET));
  }

  /** The principal a secret stands for, or `null` for an unknown, revoked or expired key. `hash`: `hashSecret(secret)`, when the caller has it already. */
  verify(secret: string, hash: string = hashSecret(secret)): ResultAsync<Principal | null, FleetError> {
    return toAsync(this.verifyHash(hash));
  }

  /**
   * `verify` of the secret whose hash (`hashSecret`) is `hash`, as it ran: at once over the fleet's own memory (the
   * handler's read on every request, without a promise), else through the store.
   */
  verifyHash(hash: string): Ran<Principal | null, FleetError> {
    // Read in place, not copied: `principalOf` copies what it keeps.
    return chainMap(this.records.get<KeyHashEntry>(hashRecord(hash), true), (entry) => this.verified(hash, entry));
  }

  private verified(hash: string, entry: KeyHashEntry | undefined): Principal | null {
    const principal = this.principalOf(entry);
    if (principal === null) this.recent.delete(hash);
    else {
      if (this.recent.size >= 10_000) this.recent.clear();
      this.recent.set(hash, principal);
    }
    return principal;
  }

  /** The principal the secret of this hash (`hashSecret`) verified as the last time (see `recent`), or `undefined`: a hint, `verify` decides. */
  lastVerified(hash: string): Principal | undefined {
    return this.recent.get(hash);
  }

  private principalOf(entry: KeyHashEntry | undefined): Principal | null {
    if (entry === undefined || entry.revoked === true) return null;
    const now = this.now();
    if (entry.expires_at != null && Date.parse(entry.expires_at) <= now) return null;
    this.noteUse(entry.id, now);
    // Arrays copied: the entry may be the stored object itself (`verifyHash`).
    return {
      account: entry.account,
      tier: entry.tier,
      scopes: entry.scopes?.slice() ?? null,
      tools: entry.tools?.slice() ?? null,
      prompts: entry.prompts?.slice() ?? null,
      resources: entry.resources?.slice() ?? null,
      keyId: entry.id,
      expiresAt: entry.expires_at ?? null,
    };
  }

  /** Writes `last_used_at` when this process has not for a minute; never on the request's path, never its failure. */
  private noteUse(id: string, now: number): void {
    if (now - (this.lastUseWritten.get(id) ?? Number.NEGATIVE_INFINITY) < LAST_USED_EVERY_MS) return;
    this.lastUseWritten.set(id, now);
    // Its own record, so that this write never races a revoke's write of the key record.
    const minute = new Date(Math.floor(now / LAST_USED_EVERY_MS) * LAST_USED_EVERY_MS).toISOString();
    const write: Promise<void> = toAsync(this.records.set(usedRecord(id), minute))
      .match(() => {}, this.onBackgroundError)
      .finally(() => this.writing.delete(write));
    this.writing.add(write);
    if (this.lastUseWritten.size > 100_000) this.lastUseWritten.clear();
  }

  /** Waits for the `last_used_at` writes under way (`fleet.close()` does, before the storage may close). */
  async close(): Promise<void> {
    await Promise.all([...this.writing]);
  }

  /**
   * Writes a new key for `secret`; `replacing`: the key that held the secret before (registered for another account).
   * The secret is claimed in the commit that lists the key, so two registrations of one secret at once (processes
   * starting together on one store) make one key: the one that lost the claim removes its records and answers the
   * winner's key.
   */
  private store(valid: z.output<typeof inputSchema>, secret: string, replacing?: string): ResultAsync<ApiKey, FleetError> {
    const now = this.now();
    const key: ApiKey = {
      id: newId('apiKey'),
      account: valid.account,
      tier: valid.tier,
      scopes: valid.scopes ?? null,
      tools: valid.tools ?? null,
      prompts: valid.prompts ?? null,
      resources: valid.resources ?? null,
      name: valid.name ?? null,
      created_at: new Date(now).toISOString(),
      revoked_at: null,
      expires_at: valid.expires_at ?? null,
      last_used_at: null,
    };
    const hash = hashSecret(secret);
    const event = { account: key.account, type: 'key.created' as const, data: { key: toKeyView(key) }, at: key.created_at, check: { key: keyRecord(key.id) } };
    // Lost the secret's claim: the key is another's, whose registration announced it.
    let winner: string | undefined;
    const lost = new FleetError('INTERNAL_ERROR', { message: 'Another registration of this secret won.' });
    // Record and listing first, the hash (which makes the key usable) last: a crash leaves at worst a listed key
    // that was never handed out. The event is published by the listing's commit.
    const written = this.changes.write(event, ({ publish, abandon }) =>
      toAsync(this.records.set(keyRecord(key.id), key))
        .andThen(() => this.records.set(`apikey-hash-of:${key.id}`, hash))
        .andThen(() =>
          this.index.commit(
            mergeTransactions(
              {
                claims: [{ key: secretClaim(hash), owner: key.id, ...(replacing !== undefined && { replacing }) }],
                add: [
                  { set: accountSet(key.account), member: key.id, score: now },
                  { set: ALL_KEYS_SET, member: key.id, score: now },
                ],
              },
              publish,
            ),
          ),
        )
        .andThen((result) => {
          if (result.ok) return toAsync(this.records.set(hashRecord(hash), this.hashEntry(key))).andThen(okWith(() => key));
          winner = result.conflict?.owner as string;
          return toAsync(this.records.deleteMany([keyRecord(key.id), `apikey-hash-of:${key.id}`]))
            .andThen(() => abandon())
            .andThen(() => errAsync(lost));
        }),
    );
    return toAsync(written).orElse((error) => (error === lost && winner !== undefined ? this.get(winner) : errAsync(error)));
  }

  private hashEntry(key: ApiKey): KeyHashEntry {
    return {
      id: key.id,
      account: key.account,
      tier: key.tier,
      scopes: key.scopes,
      tools: key.tools,
      prompts: key.prompts,
      resources: key.resources,
      expires_at: key.expires_at,
    };
  }
}

const keyNotFound = (id: string) => new FleetError('NOT_FOUND', { message: 'No API key with this id exists.', details: { id } });

/**
 * A record written before `expires_at`, `last_used_at` and the allowlists existed reads as never expiring, never used,
 * every tool, prompts and resources by reach.
 */
function withDefaults(key: ApiKey, used?: string): ApiKey {
  // Expiries were once kept as given (with an offset): shown in UTC, as every time is.
  const expires = key.expires_at == null ? null : new Date(Date.parse(key.expires_at)).toISOString();
  return { ...key, tools: key.tools ?? null, prompts: key.prompts ?? null, resources: key.resources ?? null, expires_at: expires, last_used_at: used ?? key.last_used_at ?? null };
}

/** An expiry must lie ahead (a key born expired is a mistake worth a 400), and within 10 years; kept in UTC. */
function futureExpiry<T extends { expires_at?: string | undefined }>(valid: T, now: number): Result<T, FleetError> {
  if (valid.expires_at === undefined) return ok(valid);
  const at = Date.parse(valid.expires_at);
  if (at <= now) return err(invalidRequest([{ field: 'expires_at', issue: `must be in the future (now is ${new Date(now).toISOString()})` }]));
  if (at - now > MAX_EXPIRY_MS) return err(invalidRequest([{ field: 'expires_at', issue: 'must be at most 10 years ahead; leave it out for a key that never expires' }]));
  return ok({ ...valid, expires_at: new Date(at).toISOString() });
}
