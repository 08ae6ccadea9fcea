import { createHash } from 'node:crypto';
import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import { z } from 'zod';
import { FleetError } from '../errors/fleet-error.js';
import type { IndexCalls } from '../storage/index-calls.js';
import { readRange } from '../storage/read-page.js';
import type { RecordStore } from '../storage/records.js';
import { newId, randomToken } from '../util/ids.js';
import { parse } from '../validation/parse.js';
import { ACCOUNT_PATTERN, type Principal, SCOPES, type Scope, TIERS, type Tier } from './scopes.js';

/** An API key as listed: never its secret, which is stored only as a SHA-256 hash. */
export interface ApiKey {
  id: string;
  account: string;
  tier: Tier;
  /** `null`: every scope. */
  scopes: Scope[] | null;
  name: string | null;
  created_at: string;
  revoked_at: string | null;
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
  name?: string;
}

export interface RegisterApiKeyInput extends CreateApiKeyInput {
  /** A secret chosen by the operator (e.g. from `MCP_FLEET_API_KEYS`): at least 16 characters. */
  secret: string;
}

/** What the hash of a secret points at: everything a request needs, in one read. */
interface KeyHashEntry {
  id: string;
  account: string;
  tier: Tier;
  scopes: Scope[] | null;
}

const SECRET_PREFIX = 'mcpf_';
const keyRecord = (id: string) => `apikey:${id}`;
const hashRecord = (hash: string) => `apikey-hash:${hash}`;
const accountSet = (account: string) => `apikeys:${encodeURIComponent(account)}`;
const ALL_KEYS_SET = 'apikeys';

const inputSchema = z.strictObject({
  account: z.string().refine((account) => ACCOUNT_PATTERN.test(account), 'must be 1–64 characters of letters, digits, "_", "." or "-", starting with a letter or digit'),
  tier: z.enum(TIERS).default('free'),
  scopes: z.array(z.enum(SCOPES)).min(1).optional(),
  name: z.string().min(1).max(100).optional(),
});

const registerSchema = inputSchema.extend({
  secret: z
    .string()
    .min(16)
    .max(512)
    .refine((secret) => /^[\x21-\x7e]+$/.test(secret), 'must be printable ASCII without spaces'),
});

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** Issues, revokes, lists and checks the API keys of every account. */
export class ApiKeys {
  constructor(
    private readonly records: RecordStore,
    private readonly index: IndexCalls,
    private readonly now: () => number,
  ) {}

  /** A new key with a generated secret, returned once. */
  create(input: CreateApiKeyInput): ResultAsync<CreatedApiKey, FleetError> {
    const secret = SECRET_PREFIX + randomToken(40);
    return parse(inputSchema, input, { root: 'input' }).asyncAndThen((valid) => this.store(valid, secret).map((key) => ({ key, secret })));
  }

  /**
   * Registers a secret the operator chose. Idempotent: registering the same secret again keeps its key and
   * updates its account, tier and scopes, so a server can register its configured keys on every start.
   */
  register(input: RegisterApiKeyInput): ResultAsync<ApiKey, FleetError> {
    return parse(registerSchema, input, { root: 'input' }).asyncAndThen(({ secret, ...valid }) =>
      this.records.get<KeyHashEntry>(hashRecord(hashSecret(secret))).andThen((entry) => {
        if (entry === undefined) return this.store(valid, secret);
        return this.records.get<ApiKey>(keyRecord(entry.id)).andThen((existing) => {
          if (existing === undefined) return this.store(valid, secret);
          const key: ApiKey = { ...existing, tier: valid.tier, scopes: valid.scopes ?? null, name: valid.name ?? existing.name };
          if (key.account !== valid.account) return this.revoke(existing.id).andThen(() => this.store(valid, secret));
          return this.records
            .set(keyRecord(key.id), key)
            .andThen(() => this.records.set(hashRecord(hashSecret(secret)), this.hashEntry(key)))
            .map(() => key);
        });
      }),
    );
  }

  /** Revokes a key at once; its record stays listed with `revoked_at`. */
  revoke(id: string): ResultAsync<ApiKey, FleetError> {
    return this.get(id).andThen((key) => {
      if (key.revoked_at !== null) return okAsync(key);
      const revoked: ApiKey = { ...key, revoked_at: new Date(this.now()).toISOString() };
      // The record is marked first: if the hash entry cannot be deleted, `verify` still refuses the key.
      return this.records
        .set(keyRecord(id), revoked)
        .andThen(() => this.records.get<string>(`apikey-hash-of:${id}`))
        .andThen((hash) => (hash === undefined ? okAsync(undefined) : this.records.delete(hashRecord(hash))))
        .map(() => revoked);
    });
  }

  get(id: string): ResultAsync<ApiKey, FleetError> {
    return this.records
      .get<ApiKey>(keyRecord(id))
      .andThen((key) => (key === undefined ? errAsync(new FleetError('NOT_FOUND', { message: 'No API key with this id exists.', details: { id } })) : okAsync(key)));
  }

  /** The account's keys, oldest first, revoked ones included. */
  list(account: string): ResultAsync<ApiKey[], FleetError> {
    return readRange<ApiKey>(this.index, this.records, accountSet(account), { offset: 0, limit: Number.MAX_SAFE_INTEGER }, keyRecord).map(({ found }) =>
      found.filter((key): key is ApiKey => key !== undefined),
    );
  }

  /** How many keys exist in all accounts, revoked ones included. */
  count(): ResultAsync<number, FleetError> {
    return this.index.count(ALL_KEYS_SET);
  }

  /** The principal a secret stands for, or `null` for an unknown or revoked key. */
  verify(secret: string): ResultAsync<Principal | null, FleetError> {
    return this.records.get<KeyHashEntry>(hashRecord(hashSecret(secret))).map((entry) =>
      entry === undefined ? null : { account: entry.account, tier: entry.tier, scopes: entry.scopes, keyId: entry.id },
    );
  }

  private store(valid: z.output<typeof inputSchema>, secret: string): ResultAsync<ApiKey, FleetError> {
    const now = this.now();
    const key: ApiKey = {
      id: newId('apiKey'),
      account: valid.account,
      tier: valid.tier,
      scopes: valid.scopes ?? null,
      name: valid.name ?? null,
      created_at: new Date(now).toISOString(),
      revoked_at: null,
    };
    const hash = hashSecret(secret);
    // Record and listing first, the hash (which makes the key usable) last: a crash leaves at worst a listed key
    // that was never handed out.
    return this.records
      .set(keyRecord(key.id), key)
      .andThen(() => this.records.set(`apikey-hash-of:${key.id}`, hash))
      .andThen(() =>
        this.index.commit({
          add: [
            { set: accountSet(key.account), member: key.id, score: now },
            { set: ALL_KEYS_SET, member: key.id, score: now },
          ],
        }),
      )
      .andThen(() => this.records.set(hashRecord(hash), this.hashEntry(key)))
      .map(() => key);
  }

  private hashEntry(key: ApiKey): KeyHashEntry {
    return { id: key.id, account: key.account, tier: key.tier, scopes: key.scopes };
  }
}
