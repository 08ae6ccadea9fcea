import { z } from 'zod';
import type { ResultAsync } from 'neverthrow';
import type { Agent } from 'undici';
import type { FleetError } from '../errors/fleet-error.js';
import type { IndexCalls } from '../storage/index-calls.js';
import type { RecordStore } from '../storage/records.js';
import { type Page, type PageQuery, withPageDefaults } from '../util/pagination.js';
import { DeliveryLog, type DeliveryView } from './deliveries.js';
import { EventOutbox } from '../events/outbox.js';
import { webhookRecipients } from './recipients.js';
import { type RetryOptions, retryPolicy } from './retry.js';
import { TEST_EVENT, WebhookValidator, type WebhookInput, type WebhookPatch } from './schema.js';
import { createSender, type Sender } from './sender.js';
import { toWebhookView, WebhookStore, type WebhookView, webhookViewSchema } from './subscriptions.js';
import { DeliveryWorker } from './worker.js';
import { checkOption, positiveNumber } from '../util/options.js';
import { SecretBox } from '../util/secret-box.js';
import { okWith, toAsync } from '../util/result.js';

export interface WebhooksOptions {
  /** Run the delivery worker in this process. Off: events are still staged and wait in the outbox. @default true */
  worker?: boolean;
  /** Retries after a failed attempt: exponential backoff with jitter. @default 8 attempts, 5 s × 5^(n-1) ±20 % */
  retry?: RetryOptions;
  /** Milliseconds one attempt may take, connection included. @default 10000 */
  timeoutMs?: number;
  /** A lease on an attempt older than this (its process died) is taken over, in ms; keep it above `timeoutMs`. @default 60000 */
  leaseMs?: number;
  /** How often the worker looks for due deliveries, in ms (a change in this process wakes it at once). @default 1000 */
  pollIntervalMs?: number;
  /** Attempts in flight at once per process. @default 8 */
  concurrency?: number;
  /** An event whose change has neither landed nor failed after this long is settled by recovery, in ms. @default 60000 */
  recoveryGraceMs?: number;
  /** Settled deliveries and events are kept this long, in ms. @default 2592000000 (30 days) */
  retentionMs?: number;
  /** Replaces the HTTP sender (tests). @default undici on the guarded agent */
  sender?: Sender;
}

/** A webhook just created: the only time its `secret` is shown. */
export const createdWebhookSchema = z.strictObject({ ...webhookViewSchema.shape, secret: z.string() });

export type CreatedWebhook = z.output<typeof createdWebhookSchema>;

/** What `POST /webhooks/{id}/test` answers: the ping's event and its delivery, to follow in `deliveries`. */
export const webhookTestSchema = z.strictObject({ event_id: z.string(), delivery_id: z.string() });

/** The embedder's API to the webhooks of an account, as the HTTP routes use it. */
export interface WebhooksApi {
  create(account: string, input: WebhookInput): ResultAsync<CreatedWebhook, FleetError>;
  get(account: string, id: string): ResultAsync<WebhookView, FleetError>;
  update(account: string, id: string, patch: WebhookPatch): ResultAsync<WebhookView, FleetError>;
  delete(account: string, id: string): ResultAsync<{ id: string; deleted: true }, FleetError>;
  /** Oldest first; `page` 1 and `limit` 50 unless given. */
  list(account: string, query?: Partial<PageQuery>): ResultAsync<Page<WebhookView>, FleetError>;
  /** Sends a `webhook.test` ping to the webhook (whatever it subscribes to). */
  test(account: string, id: string): ResultAsync<z.output<typeof webhookTestSchema>, FleetError>;
  /** The webhook's deliveries, newest first, with every attempt. */
  deliveries(account: string, id: string, query?: Partial<PageQuery>): ResultAsync<Page<DeliveryView>, FleetError>;
}

/** The same operations as the HTTP routes call them: bodies arrive unchecked and the webhook schema validates them. */
export interface WebhookOperations extends Omit<WebhooksApi, 'create' | 'update'> {
  /** The schemas `create` and `update` judge their bodies with, for the route table (`http/routes.ts`). */
  readonly bodies: { create: WebhookValidator['createBody']; update: WebhookValidator['updateBody'] };
  create(account: string, input: unknown): ResultAsync<CreatedWebhook, FleetError>;
  update(account: string, id: string, patch: unknown): ResultAsync<WebhookView, FleetError>;
}

export interface Webhooks {
  /** Typed as {@link WebhooksApi} where the embedder gets it; it takes unchecked input as well. */
  readonly api: WebhookOperations;
  readonly outbox: EventOutbox;
  readonly worker: DeliveryWorker | undefined;
  /** Seals every webhook secret not yet under the current key; answers how many webhooks were written. */
  rotateSecrets(): ResultAsync<number, FleetError>;
  /** How many deliveries are neither delivered nor given up (every process's: the outbox is the store's). */
  pending(): ResultAsync<number, FleetError>;
  close(): Promise<void>;
}

export interface WebhooksDeps {
  records: RecordStore;
  index: IndexCalls;
  agent: Agent;
  allowPrivateNetworks: boolean | readonly string[];
  now: () => number;
  onError: (cause: unknown) => void;
  /** Seals webhook secrets at rest. @default no key: stored as they are */
  secrets?: SecretBox;
  /** Webhooks per account (`quotas.webhooksPerAccount`). @default MAX_WEBHOOKS_PER_ACCOUNT */
  maxPerAccount?: number;
}

/** Subscriptions, the outbox, the delivery log and (unless turned off) the worker, over the fleet's storage. */
export function createWebhooks(deps: WebhooksDeps, options: WebhooksOptions = {}): Webhooks {
  const retry = retryPolicy(options.retry);
  const timeoutMs = checkOption('webhooks.timeoutMs', options.timeoutMs ?? 10_000, positiveNumber);
  const leaseMs = checkOption('webhooks.leaseMs', options.leaseMs ?? 60_000, positiveNumber);
  const pollIntervalMs = checkOption('webhooks.pollIntervalMs', options.pollIntervalMs ?? 1000, positiveNumber);
  const concurrency = Math.floor(checkOption('webhooks.concurrency', options.concurrency ?? 8, positiveNumber));
  const graceMs = checkOption('webhooks.recoveryGraceMs', options.recoveryGraceMs ?? 60_000, positiveNumber);
  const retentionMs = checkOption('webhooks.retentionMs', options.retentionMs ?? 30 * 86_400_000, positiveNumber);
  const { records, index, now } = deps;
  const secrets = deps.secrets ?? new SecretBox();
  const validator = new WebhookValidator({ allowPrivateNetworks: deps.allowPrivateNetworks });
  const webhooks = new WebhookStore({ records, index, validator, now, secrets, maxPerAccount: deps.maxPerAccount });
  const deliveries = new DeliveryLog(records, index, retentionMs);
  let worker: DeliveryWorker | undefined;
  const recipients = webhookRecipients(webhooks, deliveries);
  const outbox = new EventOutbox({ records, index, recipients, now, graceMs, retentionMs, wake: () => worker?.wake() });
  if (options.worker !== false) {
    worker = new DeliveryWorker({
      records,
      index,
      webhooks,
      deliveries,
      outbox,
      send: options.sender ?? createSender(deps.agent, now),
      retry,
      timeoutMs,
      leaseMs,
      pollIntervalMs,
      concurrency,
      now,
      onError: deps.onError,
    });
    worker.start();
  }
  const api: WebhookOperations = {
    bodies: { create: validator.createBody, update: validator.updateBody },
    create: (account, input) => webhooks.create(account, input).andThen(okWith((record) => ({ ...toWebhookView(record), secret: record.secret }))),
    get: (account, id) => webhooks.get(account, id).andThen(okWith(toWebhookView)),
    update: (account, id, patch) => webhooks.update(account, id, patch).andThen(okWith(toWebhookView)),
    delete: (account, id) => webhooks.delete(account, id),
    list: (account, query = {}) => webhooks.list(account, withPageDefaults(query)).andThen(okWith((page) => ({ ...page, data: page.data.map(toWebhookView) }))),
    test: (account, id) =>
      webhooks.get(account, id).andThen((webhook) =>
        outbox
          .emit(account, TEST_EVENT, { webhook_id: webhook.id, message: 'A test delivery from mcp-fleet.' }, [webhook.id])
          .andThen(okWith((event) => ({ event_id: event.id, delivery_id: event.deliveries[0]?.id ?? '' }))),
      ),
    deliveries: (account, id, query = {}) => webhooks.get(account, id).andThen(() => deliveries.list(id, withPageDefaults(query))),
  };
  return {
    api,
    outbox,
    worker,
    rotateSecrets: () => webhooks.rotateSecrets(),
    pending: () => toAsync(deliveries.pending()),
    close: async () => {
      await worker?.stop();
    },
  };
}
