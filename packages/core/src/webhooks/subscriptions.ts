import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import { FleetError, quotaExceeded } from '../errors/fleet-error.js';
import type { IndexCalls } from '../storage/index-calls.js';
import { readPage, readRange } from '../storage/read-page.js';
import type { RecordStore } from '../storage/records.js';
import { isId, newId } from '../util/ids.js';
import { memoKeys } from '../util/key-memo.js';
import { KeyedMutex } from '../util/keyed-mutex.js';
import { type Page, type PageQuery, pagination } from '../util/pagination.js';
import type { SecretBox } from '../util/secret-box.js';
import { z } from 'zod';
import { isoTimeSchema } from '../util/iso-time.js';
import { WEBHOOK_EVENTS, type WebhookEventType, type WebhookValidator } from './schema.js';
import { newWebhookSecret } from './signature.js';
import { okWith, type Ran, chainMap, toAsync } from '../util/result.js';

/** A webhook as responses show it: never the secret (that is shown once, at create). */
export const webhookViewSchema = z.strictObject({
  id: z.string(),
  url: z.string(),
  events: z.array(z.enum(WEBHOOK_EVENTS)),
  description: z.string().nullable(),
  enabled: z.boolean(),
  /** Why the service turned the webhook off (`gone`: the receiver answered 410); `null` while enabled. */
  disabled_reason: z.string().nullable(),
  created_at: isoTimeSchema,
  updated_at: isoTimeSchema,
});

export type WebhookView = z.output<typeof webhookViewSchema>;

/** A webhook as stored: the secret included. */
export interface WebhookRecord extends WebhookView {
  account: string;
  secret: string;
}

export function toWebhookView({ account: _a, secret: _s, ...view }: WebhookRecord): WebhookView {
  return view;
}

/**
 * Webhooks per account unless `quotas.webhooksPerAccount` says otherwise: the fan-out of every event reads them all,
 * so they are bounded.
 */
export const MAX_WEBHOOKS_PER_ACCOUNT = 100;

const WEBHOOK_KEY = 'webhook:';
export const webhookKey = (id: string) => `${WEBHOOK_KEY}${id}`;
/**
 * The listing of an account's webhooks, made once per account (`memoKeys`): every create looks its recipients up in
 * it, and a key made afresh is a new string for the index's `Map` to hash on each lookup.
 */
const accountSet = memoKeys((account: string) => ['webhooks:', encodeURIComponent(account)].join(''));
/** Every account's webhooks, for work over all of them (rotating their secrets). Account sets start `webhooks:`. */
const ALL_WEBHOOKS = 'webhooks-all';
/** Where a webhook's sealed secret belongs: a ciphertext moved to another record does not open. */
const secretPlace = (id: string) => `webhook:${id}:secret`;

export function webhookNotFound(id: string): FleetError {
  return new FleetError('NOT_FOUND', { message: 'No webhook with this id exists.', details: { id } });
}

/** The webhooks of every account: records in keyv, listed per account in the IndexStore. */
export class WebhookStore {
  private readonly mutex = new KeyedMutex();
  /**
   * Accounts whose listing of webhooks this process last found not empty (at most 10,000): a hint, never an answer.
   * For any other account a change commits under `noneListed`'s precondition rather than reading the subscribers.
   */
  private readonly listed = new Set<string>();

  constructor(
    private readonly deps: {
      records: RecordStore;
      index: IndexCalls;
      validator: WebhookValidator;
      now: () => number;
      secrets: SecretBox;
      /** Webhooks per account, held by the listing commit itself. @default MAX_WEBHOOKS_PER_ACCOUNT */
      maxPerAccount?: number;
    },
  ) {}

  private get maxPerAccount(): number {
    return this.deps.maxPerAccount ?? MAX_WEBHOOKS_PER_ACCOUNT;
  }

  create(account: string, body: unknown): ResultAsync<WebhookRecord, FleetError> {
    const validated = this.deps.validator.input(body);
    if (validated.isErr()) return errAsync(validated.error);
    const now = new Date(this.deps.now()).toISOString();
    const record: WebhookRecord = {
      id: newId('webhook'),
      account,
      url: validated.value.url,
      events: validated.value.events,
      description: validated.value.description ?? null,
      enabled: true,
      disabled_reason: null,
      secret: newWebhookSecret(),
      created_at: now,
      updated_at: now,
    };
    const { records, index } = this.deps;
    const max = this.maxPerAccount;
    const set = accountSet(account);
    // A full account is refused before anything is written; the limit in the listing commit holds the quota against
    // creates racing in this or another process. A refused commit leaves a record nobody lists: it is deleted.
    return toAsync(index.count(set))
      .andThen((count) => (count >= max ? errAsync(quotaExceeded('webhooks', max)) : okAsync(undefined)))
      // Stored sealed; the caller gets the plaintext once, to show it.
      .andThen(() => this.deps.secrets.seal(record.secret, secretPlace(record.id)))
      .andThen((secret) => records.set(webhookKey(record.id), { ...record, secret }))
      .andThen(() =>
        index.commit({
          limits: [{ set, max }],
          add: [
            { set, member: record.id, score: Date.parse(now) },
            { set: ALL_WEBHOOKS, member: record.id, score: Date.parse(now) },
          ],
        }),
      )
      .andThen((result) => {
        if (!result.ok) return toAsync(records.delete(webhookKey(record.id))).andThen(() => errAsync(quotaExceeded('webhooks', max)));
        this.sawListed(account, true);
        return okAsync(record);
      });
  }

  get(account: string, id: string): ResultAsync<WebhookRecord, FleetError> {
    if (!isId('webhook', id)) return errAsync(webhookNotFound(id));
    return toAsync(this.deps.records.get<WebhookRecord>(webhookKey(id)))
      .andThen((record) => (record !== undefined && record.account === account ? okAsync(record) : errAsync(webhookNotFound(id))));
  }

  /** The webhook's signing secret, opened: only to sign a delivery. */
  secretOf(webhook: WebhookRecord): ResultAsync<string, FleetError> {
    return toAsync(this.deps.secrets.open(webhook.secret, secretPlace(webhook.id)));
  }

  /**
   * Seals again, under the current key, every webhook secret still in plaintext or under an older key; answers how
   * many webhooks were written.
   */
  rotateSecrets(): ResultAsync<number, FleetError> {
    const { records, secrets } = this.deps;
    const PAGE = 100;
    const rotateOne = (id: string): ResultAsync<boolean, FleetError> =>
      this.mutex.exclusive(id, () =>
        this.find(id).andThen((current) => {
          if (current === undefined || !secrets.isStale(current.secret)) return okAsync(false);
          return toAsync(secrets.open(current.secret, secretPlace(id)))
            .andThen((plain) => secrets.seal(plain, secretPlace(id)))
            .andThen((secret) => records.set(webhookKey(id), { ...current, secret }))
            .andThen(okWith(() => true));
        }),
      );
    const page = (offset: number, done: number): ResultAsync<number, FleetError> =>
      toAsync(readRange<WebhookRecord>(this.deps.index, records, ALL_WEBHOOKS, { offset, limit: PAGE }, webhookKey)).andThen(({ ids, found }) => {
        const stale = found.filter((w): w is WebhookRecord => w !== undefined && secrets.isStale(w.secret));
        const rotated = stale.reduce<ResultAsync<number, FleetError>>((sum, w) => sum.andThen((n) => rotateOne(w.id).andThen(okWith((did) => n + (did ? 1 : 0)))), okAsync(0));
        return rotated.andThen((n) => (ids.length < PAGE ? okAsync(done + n) : page(offset + PAGE, done + n)));
      });
    return page(0, 0);
  }

  /** The record whatever its account, for the delivery worker; `undefined` once deleted. */
  find(id: string): ResultAsync<WebhookRecord | undefined, FleetError> {
    return toAsync(this.deps.records.get<WebhookRecord>(webhookKey(id)));
  }

  update(account: string, id: string, body: unknown): ResultAsync<WebhookRecord, FleetError> {
    const validated = this.deps.validator.update(body);
    if (validated.isErr()) return errAsync(validated.error);
    const patch = validated.value;
    return this.mutex.exclusive(id, () =>
      this.get(account, id).andThen((current) => {
        const next: WebhookRecord = {
          ...current,
          ...(patch.url !== undefined && { url: patch.url }),
          ...(patch.events !== undefined && { events: patch.events }),
          ...(patch.description !== undefined && { description: patch.description }),
          ...(patch.enabled !== undefined && { enabled: patch.enabled, disabled_reason: null }),
          updated_at: new Date(Math.max(this.deps.now(), Date.parse(current.updated_at) + 1)).toISOString(),
        };
        return chainMap(this.deps.records.set(webhookKey(id), next), () => next);
      }),
    );
  }

  /** Turns a webhook off on the service's own account (a 410 from its receiver). */
  disable(id: string, reason: string): ResultAsync<void, FleetError> {
    return this.mutex.exclusive(id, () =>
      this.find(id).andThen((current) => {
        if (current === undefined || !current.enabled) return okAsync(undefined);
        const next = { ...current, enabled: false, disabled_reason: reason, updated_at: new Date(this.deps.now()).toISOString() };
        return this.deps.records.set(webhookKey(id), next);
      }),
    );
  }

  delete(account: string, id: string): ResultAsync<{ id: string; deleted: true }, FleetError> {
    return this.mutex.exclusive(id, () =>
      this.get(account, id).andThen(() =>
        toAsync(this.deps.records.delete(webhookKey(id)))
          .andThen(() =>
            toAsync(this.deps.index.commit({ remove: [{ set: accountSet(account), member: id }, { set: ALL_WEBHOOKS, member: id }] })).orElse(() => okAsync(undefined)),
          )
          .andThen(okWith(() => ({ id, deleted: true as const }))),
      ),
    );
  }

  list(account: string, query: PageQuery): ResultAsync<Page<WebhookRecord>, FleetError> {
    return toAsync(readPage<WebhookRecord>(this.deps.index, this.deps.records, accountSet(account), query, webhookKey, { keyPrefix: WEBHOOK_KEY })).andThen(okWith(({ found, total }) => {
      const data = found.filter((w): w is WebhookRecord => w !== undefined && w.account === account);
      return { data, pagination: pagination(query, total - (found.length - data.length)) };
    }));
  }

  /**
   * The ids of the enabled webhooks of the account that subscribe to `type`: at most the quota's number of reads (an
   * account left above a lowered quota is served its oldest webhooks up to the quota). Each webhook is read in place,
   * only its id kept; at once over the memory stores.
   */
  subscriberIds(account: string, type: WebhookEventType): Ran<string[], FleetError> {
    return chainMap(readRange<WebhookRecord>(this.deps.index, this.deps.records, accountSet(account), { offset: 0, limit: this.maxPerAccount }, webhookKey, true, WEBHOOK_KEY), ({ ids, found }) => {
      this.sawListed(account, ids.length > 0);
      const subscribed: string[] = [];
      for (const w of found) if (subscribes(w, account, type)) subscribed.push(w.id);
      return subscribed;
    });
  }

  /**
   * A precondition for a change's own commit that holds only while the account lists no webhook at all, and so has no
   * subscriber of any event: a limit of 1 on its listing, which every webhook create adds to in a commit of its own
   * (locking it), so the two commits are ordered and the change sees a webhook listed before it. `undefined` when this
   * process last found webhooks listed there (`listed`): then the subscribers are read (`subscriberIds`) as before.
   */
  noneListed(account: string): { set: string; max: number } | undefined {
    return this.listed.has(account) ? undefined : { set: accountSet(account), max: 1 };
  }

  private sawListed(account: string, listed: boolean): void {
    if (!listed) this.listed.delete(account);
    else if (!this.listed.has(account)) {
      if (this.listed.size >= 10_000) this.listed.clear();
      this.listed.add(account);
    }
  }
}

/** Whether `webhook` (read from the account's listing) is an enabled webhook of `account` subscribed to `type`. */
function subscribes(webhook: WebhookRecord | undefined, account: string, type: WebhookEventType): webhook is WebhookRecord {
  return webhook !== undefined && webhook.account === account && webhook.enabled && webhook.events.includes(type);
}
